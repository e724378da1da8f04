import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gql, startServe, type ServeProcess } from '../../helpers/processes.js';
import { PHONE, restServeEnv, startUpstream, type Upstream } from '../../helpers/harness.js';

/**
 * REST mode in front of a recs-gateway key service: scopes, rotation, changes, limits and usage are
 * forwarded, the key service's refusals (FORBIDDEN, QUOTA_EXCEEDED) passed on unchanged, and a key's
 * scopes held at the front too.
 */
const CREATE = `mutation($input: CreateApiKeyInput!) { createApiKey(input: $input) { id key apiKey { scopes } } }`;
const ITEM = `{ item(itemId: ${PHONE}) { itemId } }`;
const CREATE_LIMITED = `mutation($input: CreateApiKeyInput!) { createApiKey(input: $input) { id key apiKey { rateLimitPerSecond dailyQuota } } }`;
const secondsToMidnight = (): number => Math.ceil((86_400_000 - (Date.now() % 86_400_000)) / 1000);

describe('REST mode: scopes, rotation, changes, limits and usage through a front', () => {
  let upstream: Upstream;
  let front: ServeProcess;

  beforeAll(async () => {
    upstream = await startUpstream();
    front = await startServe({ ...restServeEnv(upstream, 'unused'), REDIS_URL: '' });
  }, 120_000);
  afterAll(async () => {
    await front?.stop();
    await upstream?.stop();
  });

  const call = (query: string, variables: Record<string, unknown>, authorization: string) => gql(front.url, query, variables, { authorization });

  async function create(input: Record<string, unknown>, authorization = upstream.alice.basic): Promise<{ id: string; key: string; apiKey: { scopes: string[] } }> {
    const created = await call(CREATE, { input }, authorization);
    expect(created.body.errors).toBeUndefined();
    return created.body.data!.createApiKey as unknown as { id: string; key: string; apiKey: { scopes: string[] } };
  }

  it('lets a publishable key read through the front, and nothing else', async () => {
    const publishable = await create({ name: 'front-publishable', scopes: ['RECOMMENDATIONS_READ'] });
    expect(publishable.apiKey.scopes).toEqual(['RECOMMENDATIONS_READ']);
    expect((await call(ITEM, {}, publishable.key)).body).toEqual({ data: { item: { itemId: PHONE } } });
    const rest = await fetch(`${front.url}/v1/items/${PHONE}?apiKey=${encodeURIComponent(publishable.key)}`);
    expect(rest.status).toBe(200);
    await rest.body?.cancel();
    const made = await call(CREATE, { input: { name: 'by-publishable' } }, publishable.key);
    expect(made.body.errors).toMatchObject([{ extensions: { code: 'FORBIDDEN', scope: 'KEYS_MANAGE' } }]);
    const listed = await fetch(`${front.url}/api/v1/apikey`, { headers: { authorization: publishable.key } });
    expect(listed.status).toBe(403);
    expect(await listed.json()).toMatchObject([{ scope: 'KEYS_MANAGE' }]);
  });

  it('holds a key without RECOMMENDATIONS_READ to its scopes at the front, and passes the key service\'s refusals on', async () => {
    const manager = await create({ name: 'front-manager', scopes: ['KEYS_MANAGE'] });
    expect((await call(ITEM, {}, manager.key)).body.errors).toMatchObject([{ extensions: { code: 'FORBIDDEN', scope: 'RECOMMENDATIONS_READ' } }]);
    const wider = await call(CREATE, { input: { name: 'wider', scopes: ['RECOMMENDATIONS_READ'] } }, manager.key);
    expect(wider.body.errors).toMatchObject([{ extensions: { code: 'FORBIDDEN', scope: 'RECOMMENDATIONS_READ' } }]);
    const widen = await call('mutation($id: ID!) { updateApiKey(id: $id, input: { scopes: [KEYS_MANAGE, RECOMMENDATIONS_READ] }) { scopes } }', { id: manager.id }, manager.key);
    expect(widen.body.errors).toMatchObject([{ extensions: { code: 'FORBIDDEN', scope: 'RECOMMENDATIONS_READ' } }]);
  });

  it('forwards rotation and changes; another user\'s key is NOT_FOUND', async () => {
    const key = await create({ name: 'front-rotated' });
    expect((await call(ITEM, {}, key.key)).status).toBe(200);
    const rotated = await call('mutation($id: ID!) { rotateApiKey(id: $id, gracePeriodSeconds: 0) { id key apiKey { name } } }', { id: key.id }, upstream.alice.basic);
    expect(rotated.body.errors).toBeUndefined();
    const payload = rotated.body.data!.rotateApiKey as unknown as { id: string; key: string; apiKey: { name: string } };
    expect(payload).toMatchObject({ id: key.id, apiKey: { name: 'front-rotated' } });
    expect((await call(ITEM, {}, key.key)).status).toBe(401);
    expect((await call(ITEM, {}, payload.key)).status).toBe(200);

    expect((await call('{ apiKeys { id } }', {}, payload.key)).status).toBe(200);
    const narrowed = await call('mutation($id: ID!) { updateApiKey(id: $id, input: { name: "front-narrowed", scopes: [RECOMMENDATIONS_READ] }) { id name scopes } }', { id: key.id }, upstream.alice.basic);
    expect(narrowed.body.data).toEqual({ updateApiKey: { id: key.id, name: 'front-narrowed', scopes: ['RECOMMENDATIONS_READ'] } });
    // narrowed, at once: the front remembered the key with KEYS_MANAGE
    expect((await call('{ apiKeys { id } }', {}, payload.key)).body.errors).toMatchObject([{ extensions: { code: 'FORBIDDEN', scope: 'KEYS_MANAGE' } }]);
    expect((await call(ITEM, {}, payload.key)).status).toBe(200);

    const stranger = await call('mutation($id: ID!) { rotateApiKey(id: $id, gracePeriodSeconds: 0) { id } }', { id: key.id }, upstream.bob.basic);
    expect(stranger.body.errors).toMatchObject([{ extensions: { code: 'NOT_FOUND' } }]);
    const badGrace = await call('mutation($id: ID!) { rotateApiKey(id: $id, gracePeriodSeconds: -5) { id } }', { id: key.id }, upstream.alice.basic);
    expect(badGrace.body.errors).toMatchObject([{ extensions: { code: 'BAD_USER_INPUT', field: 'gracePeriodSeconds' } }]);
  });

  it('forwards the limits, passes the key service\'s QUOTA_EXCEEDED on, and answers its usage', async () => {
    const created = await call(CREATE_LIMITED, { input: { name: 'front-quota', dailyQuota: 3, rateLimitPerSecond: 100 } }, upstream.alice.basic);
    expect(created.body.errors).toBeUndefined();
    const { id, key, apiKey } = created.body.data!.createApiKey as unknown as { id: string; key: string; apiKey: Record<string, unknown> };
    expect(apiKey).toEqual({ rateLimitPerSecond: 100, dailyQuota: 3 });

    // every listing forwards the key to the key service, which counts it against the quota
    const statuses: number[] = [];
    let refusal: Response | undefined;
    for (let i = 0; i < 6 && refusal === undefined; i++) {
      const response = await fetch(`${front.url}/api/v1/apikey`, { headers: { authorization: key } });
      statuses.push(response.status);
      if (response.status === 429) refusal = response;
      else await response.body?.cancel();
    }
    expect(refusal, statuses.join(',')).toBeDefined();
    expect(Math.abs(Number(refusal!.headers.get('retry-after')) - secondsToMidnight())).toBeLessThanOrEqual(2);
    expect(await refusal!.json()).toEqual([expect.objectContaining({ id: '*', reason: 'QUOTA_EXCEEDED' })]);
    const graphql = await call('{ apiKeys { id } }', {}, key);
    expect(graphql.body.errors?.[0]?.extensions).toMatchObject({ code: 'QUOTA_EXCEEDED' });

    // a change and the usage, forwarded
    const changed = await call('mutation($id: ID!) { updateApiKey(id: $id, input: { dailyQuota: null }) { dailyQuota rateLimitPerSecond } }', { id }, upstream.alice.basic);
    expect(changed.body).toEqual({ data: { updateApiKey: { dailyQuota: null, rateLimitPerSecond: 100 } } });
    const usage = await fetch(`${front.url}/api/v1/apikey/${id}/usage`, { headers: { authorization: upstream.alice.basic } });
    expect(usage.status).toBe(200);
    const body = (await usage.json()) as { id: string; usage: { day: string; requests: number; refused: number }[] };
    expect(body.id).toBe(id);
    expect(body.usage).toHaveLength(1);
    expect(body.usage[0]!.refused).toBeGreaterThanOrEqual(1);
    expect(body.usage[0]!.requests).toBeGreaterThan(body.usage[0]!.refused);
    const viaGraphql = await call('{ apiKeys { id usage(days: 1) { day requests refused } } }', {}, upstream.alice.basic);
    expect(viaGraphql.body.errors).toBeUndefined();
    const listed = (viaGraphql.body.data!.apiKeys as unknown as { id: string; usage: unknown[] }[]).find((k) => k.id === id);
    expect(listed?.usage).toHaveLength(1);

    // another user's key answers as an unknown one
    const bobs = await fetch(`${front.url}/api/v1/apikey/${id}/usage`, { headers: { authorization: upstream.bob.basic } });
    expect(bobs.status).toBe(400);
    expect(await bobs.json()).toEqual([{ id: '*', message: `API key not found: ${id}` }]);
  }, 60_000);

  it('holds a key\'s quota end to end: each request served through the front is checked, and counted, by the key service', async () => {
    const created = await call(CREATE_LIMITED, { input: { name: 'front-served-quota', dailyQuota: 10 } }, upstream.alice.basic);
    expect(created.body.errors).toBeUndefined();
    const { id, key } = created.body.data!.createApiKey as unknown as { id: string; key: string };
    const latest = secondsToMidnight() + 1;

    // recommendations' items over GraphQL and REST, 5 at once: the front's credential cache would answer all but the first
    const refusals: { status: number; retryAfter: string | null; body: unknown }[] = [];
    let answered = 0;
    for (let round = 0; round < 6; round++) {
      const answers = await Promise.all(Array.from({ length: 5 }, async (_, i) => {
        const response = i % 2 === 0
          ? await fetch(`${front.url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: key }, body: JSON.stringify({ query: ITEM }) })
          : await fetch(`${front.url}/v1/items/${PHONE}?apiKey=${encodeURIComponent(key)}`);
        return { status: response.status, retryAfter: response.headers.get('retry-after'), body: await response.json() };
      }));
      for (const answer of answers) {
        if (answer.status === 200) answered += 1;
        else refusals.push(answer);
      }
    }
    // one key service process: its count is exact, and the front's listing with the new key, to describe it, was one
    expect(answered).toBe(9);
    for (const refusal of refusals) {
      expect(refusal.status).toBe(429);
      expect(Number(refusal.retryAfter)).toBeGreaterThanOrEqual(1);
      expect(Number(refusal.retryAfter)).toBeLessThanOrEqual(latest);
      expect(JSON.stringify(refusal.body)).toContain('QUOTA_EXCEEDED');
    }
    const usage = await fetch(`${front.url}/api/v1/apikey/${id}/usage?days=1`, { headers: { authorization: upstream.alice.basic } });
    expect(((await usage.json()) as { usage: unknown[] }).usage).toEqual([{ day: new Date().toISOString().slice(0, 10), requests: 31, refused: 21 }]);

    // a key without limits is still kept at the front: its requests past the first are not the key
    // service's (bob's: alice's keys changed through the front, which then keeps none of hers a while)
    const plain = await create({ name: 'front-unlimited' }, upstream.bob.basic);
    for (let i = 0; i < 3; i++) expect((await call(ITEM, {}, plain.key)).status).toBe(200);
    const plainUsage = await fetch(`${front.url}/api/v1/apikey/${plain.id}/usage?days=1`, { headers: { authorization: upstream.bob.basic } });
    expect(((await plainUsage.json()) as { usage: { requests: number }[] }).usage[0]!.requests).toBeLessThan(3);
  }, 60_000);

  it('does not count a key past its quota among an address\'s unknown keys: its refusals stay QUOTA_EXCEEDED', async () => {
    const guarded = await startServe({ ...restServeEnv(upstream, 'unused'), REDIS_URL: '', AUTH_FAILURES_PER_MINUTE: '10', AUTH_KEY_CHECKS_PER_MINUTE: '3' });
    try {
      const { key } = await create({ name: 'front-checked-quota', dailyQuota: 1 });
      const codes: unknown[] = [];
      for (let i = 0; i < 8; i++) codes.push((await gql(guarded.url, ITEM, {}, { authorization: key })).body.errors?.[0]?.extensions?.code);
      // the front's listing to describe the new key was its one request
      expect(codes).toEqual(Array(8).fill('QUOTA_EXCEEDED'));
    } finally {
      await guarded.stop();
    }
  }, 60_000);
});
