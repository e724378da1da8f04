import { describe, expect, it } from 'vitest';
import { basicAuthorization } from '../../src/auth/authorization.js';
import { codeOf, useEmbeddedGateway } from '../helpers/gateway.js';
import { storeKinds } from '../helpers/stores.js';

/**
 * Per-key limits and quotas through a gateway on the embedded backend (SQLite, in-process buckets):
 * a key's own rate, its daily quota with Retry-After to midnight UTC over GraphQL and both REST
 * interfaces, who may raise a key's limits, and inputs out of bounds.
 */
const alice = basicAuthorization('alice', 'alice-password');
const root = basicAuthorization('root', 'root-password');
const ITEM = 31000005;
const CREATE = `mutation($input: CreateApiKeyInput!) { createApiKey(input: $input) { id key apiKey { id rateLimitPerSecond dailyQuota } } }`;
const UPDATE = `mutation($id: ID!, $input: UpdateApiKeyInput!) { updateApiKey(id: $id, input: $input) { id rateLimitPerSecond dailyQuota } }`;
const USAGE = `{ apiKeys { id name usage(days: 2) { day requests refused } } }`;

interface Created { id: string; key: string; apiKey: { id: string; rateLimitPerSecond: number | null; dailyQuota: number | null } }

const secondsToMidnight = (): number => Math.ceil((86_400_000 - (Date.now() % 86_400_000)) / 1000);

describe('per-key limits and quotas, on the embedded backend', () => {
  const gw = useEmbeddedGateway(storeKinds.find((k) => k.name === 'sqlite')!);

  async function create(authorization: string, input: Record<string, unknown>): Promise<Created> {
    const answer = await gw.gql<{ createApiKey: Created }>(CREATE, { input }, { authorization });
    expect(answer.body.errors).toBeUndefined();
    return answer.body.data!.createApiKey;
  }
  const item = (key: string) => gw.gql(`{ item(itemId: ${ITEM}) { itemId } }`, {}, { authorization: key });

  it('refuses a key past its own rate while another key of the same user goes on', async () => {
    const limited = await create(alice, { name: 'limited-2', rateLimitPerSecond: 2 });
    const free = await create(alice, { name: 'unlimited' });
    expect(limited.apiKey.rateLimitPerSecond).toBe(2);
    expect(free.apiKey).toMatchObject({ rateLimitPerSecond: null, dailyQuota: null });

    const answers = await Promise.all(Array.from({ length: 6 }, () => item(limited.key)));
    const refused = answers.filter((a) => a.status === 429);
    // a burst of one second's worth (2), and at most a token more refilled meanwhile
    expect(answers.length - refused.length).toBeLessThanOrEqual(3);
    expect(refused.length).toBeGreaterThanOrEqual(3);
    expect(codeOf(refused[0]!)).toBe('RATE_LIMITED');
    expect(Number(refused[0]!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);

    const others = await Promise.all(Array.from({ length: 6 }, () => item(free.key)));
    expect(others.map((a) => a.status)).toEqual(Array(6).fill(200));
  });

  it('answers the 6th request of a key with dailyQuota 5 with 429 QUOTA_EXCEEDED and Retry-After to midnight UTC', async () => {
    const quota = await create(alice, { name: 'quota-5', dailyQuota: 5 });
    expect(quota.apiKey.dailyQuota).toBe(5);
    for (let i = 0; i < 5; i++) expect((await item(quota.key)).status).toBe(200);
    const sixth = await item(quota.key);
    expect(sixth.status).toBe(429);
    expect(codeOf(sixth)).toBe('QUOTA_EXCEEDED');
    const retryAfter = Number(sixth.headers.get('retry-after'));
    expect(Math.abs(retryAfter - secondsToMidnight())).toBeLessThanOrEqual(2);
    expect(sixth.body.errors?.[0]?.extensions?.retryAfter).toBe(retryAfter);

    // the REST interfaces answer it in their own error bodies
    const recs = await fetch(`${gw.url}/v1/items/${ITEM}?apiKey=${encodeURIComponent(quota.key)}`);
    expect(recs.status).toBe(429);
    expect(Math.abs(Number(recs.headers.get('retry-after')) - secondsToMidnight())).toBeLessThanOrEqual(2);
    expect(await recs.json()).toEqual({ errors: [expect.objectContaining({ code: 429, reason: 'QUOTA_EXCEEDED' })] });
    const keysApi = await fetch(`${gw.url}/api/v1/apikey`, { headers: { authorization: quota.key } });
    expect(keysApi.status).toBe(429);
    expect(await keysApi.json()).toEqual([expect.objectContaining({ id: '*', reason: 'QUOTA_EXCEEDED' })]);

    // the user's other keys and password are not held by this key's quota
    expect((await gw.gql('{ viewer { id } }', {}, { authorization: alice })).status).toBe(200);

    // usage: 5 answered and 3 refused today, counted before any write to the store
    const usage = await gw.gql<{ apiKeys: { id: string; usage: { day: string; requests: number; refused: number }[] }[] }>(USAGE, {}, { authorization: alice });
    const today = new Date().toISOString().slice(0, 10);
    expect(usage.body.data!.apiKeys.find((k) => k.id === quota.id)!.usage).toEqual([{ day: today, requests: 8, refused: 3 }]);
  });

  it('lets a key lower its own limits and give no key more than it has; a password or an administrator may raise them', async () => {
    const manager = await create(alice, { name: 'manager', dailyQuota: 100, rateLimitPerSecond: 50 });
    const asKey = (query: string, variables: Record<string, unknown>) => gw.gql(query, variables, { authorization: manager.key });

    for (const input of [{ dailyQuota: 1000 }, { dailyQuota: null }, { rateLimitPerSecond: 51 }, { rateLimitPerSecond: null }]) {
      const raised = await asKey(UPDATE, { id: manager.id, input });
      expect(codeOf(raised), JSON.stringify(input)).toBe('FORBIDDEN');
    }
    const lowered = await asKey(UPDATE, { id: manager.id, input: { dailyQuota: 90 } });
    expect(lowered.body.data).toEqual({ updateApiKey: { id: manager.id, rateLimitPerSecond: 50, dailyQuota: 90 } });

    // a key made by the key: no wider than its maker, whether asked or left out
    expect(codeOf(await asKey(CREATE, { input: { name: 'escape', dailyQuota: 1000 } }))).toBe('FORBIDDEN');
    expect(codeOf(await asKey(CREATE, { input: { name: 'escape', rateLimitPerSecond: null } }))).toBe('FORBIDDEN');
    const child = await asKey(CREATE, { input: { name: 'child' } });
    expect((child.body.data as { createApiKey: Created }).createApiKey.apiKey).toMatchObject({ rateLimitPerSecond: 50, dailyQuota: 90 });
    // nor through another key of the user
    const other = await create(alice, { name: 'other-key' });
    expect(codeOf(await asKey(UPDATE, { id: other.id, input: { dailyQuota: 500 } }))).toBe('FORBIDDEN');

    const byPassword = await gw.gql(UPDATE, { id: manager.id, input: { dailyQuota: null, rateLimitPerSecond: 1000 } }, { authorization: alice });
    expect(byPassword.body.data).toEqual({ updateApiKey: { id: manager.id, rateLimitPerSecond: 1000, dailyQuota: null } });
    const byAdmin = await gw.gql(UPDATE, { id: manager.id, input: { dailyQuota: 5000 } }, { authorization: root });
    expect(byAdmin.body.data).toEqual({ updateApiKey: { id: manager.id, rateLimitPerSecond: 1000, dailyQuota: 5000 } });
  });

  it('refuses limits out of bounds, naming the field, and makes no key for them', async () => {
    const before = await gw.gql<{ apiKeys: unknown[] }>('{ apiKeys { id } }', {}, { authorization: alice });
    const cases: [Record<string, unknown>, string][] = [
      [{ rateLimitPerSecond: 0 }, 'rateLimitPerSecond'],
      [{ rateLimitPerSecond: -1 }, 'rateLimitPerSecond'],
      [{ rateLimitPerSecond: 100_001 }, 'rateLimitPerSecond'],
      [{ dailyQuota: 0 }, 'dailyQuota'],
      [{ dailyQuota: -5 }, 'dailyQuota'],
      [{ dailyQuota: 2_147_483_647 }, 'dailyQuota'],
    ];
    for (const [input, field] of cases) {
      const answer = await gw.gql(CREATE, { input: { name: 'out-of-bounds', ...input } }, { authorization: alice });
      expect(codeOf(answer), JSON.stringify(input)).toBe('BAD_USER_INPUT');
      expect(answer.body.errors?.[0]?.extensions?.field).toBe(field);
    }
    // past GraphQL's Int, or not a whole number: refused before any resolver
    for (const dailyQuota of [2 ** 40, 1.5, '5']) {
      const answer = await gw.gql(CREATE, { input: { name: 'out-of-bounds', dailyQuota } }, { authorization: alice });
      expect(answer.status).toBe(400);
    }
    const key = await create(alice, { name: 'bounded' });
    expect(codeOf(await gw.gql(UPDATE, { id: key.id, input: { rateLimitPerSecond: 0 } }, { authorization: alice }))).toBe('BAD_USER_INPUT');
    const after = await gw.gql<{ apiKeys: unknown[] }>('{ apiKeys { id } }', {}, { authorization: alice });
    expect(after.body.data!.apiKeys.length).toBe(before.body.data!.apiKeys.length + 1);
  });

  it('answers GET /api/v1/apikey/{id}/usage for the caller\'s own keys, under KEYS_MANAGE', async () => {
    const key = await create(alice, { name: 'usage-rest' });
    const publishable = await create(alice, { name: 'usage-publishable', scopes: ['RECOMMENDATIONS_READ'] });
    expect((await item(key.key)).status).toBe(200);
    const usage = (authorization: string, query = '', id = key.id) => fetch(`${gw.url}/api/v1/apikey/${id}/usage${query}`, { headers: { authorization } });

    const own = await usage(alice);
    expect(own.status).toBe(200);
    expect(await own.json()).toEqual({ id: key.id, usage: [{ day: new Date().toISOString().slice(0, 10), requests: 1, refused: 0 }] });
    expect((await usage(root, '?days=1')).status).toBe(200);
    const bobs = await usage(basicAuthorization('bob', 'bob-password', 'corp.example'));
    expect(bobs.status).toBe(400);
    expect(await bobs.json()).toEqual([{ id: '*', message: `API key not found: ${key.id}` }]);
    for (const query of ['?days=0', '?days=91', '?days=abc', '?days=-1']) {
      const bad = await usage(alice, query);
      expect(bad.status, query).toBe(400);
      expect(await bad.json()).toEqual([expect.objectContaining({ id: 'days' })]);
    }
    const narrow = await usage(publishable.key);
    expect(narrow.status).toBe(403);
    expect(await narrow.json()).toEqual([expect.objectContaining({ scope: 'KEYS_MANAGE' })]);
    const posted = await fetch(`${gw.url}/api/v1/apikey/${key.id}/usage`, { method: 'POST', headers: { authorization: alice, 'content-type': 'application/json' }, body: '{}' });
    expect(posted.status).toBe(405);
    expect((await usage(alice, '', 'not-a-uuid')).status).toBe(404);
  });
});
