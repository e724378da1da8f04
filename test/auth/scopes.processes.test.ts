import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuthorization } from '../../src/auth/authorization.js';
import { gql, runCli, startServe, type ServeProcess } from '../helpers/processes.js';
import { tempDir } from '../helpers/stores.js';

/**
 * Scopes over a real gateway process on a SQLite store: each scope allowed and refused, over
 * GraphQL and the served REST interfaces, and a key trying to make or widen a key past its own.
 */
type Scope = 'RECOMMENDATIONS_READ' | 'EVENTS_WRITE' | 'KEYS_MANAGE';
const SCOPES: Scope[] = ['RECOMMENDATIONS_READ', 'EVENTS_WRITE', 'KEYS_MANAGE'];
const ITEM = 31000005;
const root = basicAuthorization('root', 'root-password');
const alice = basicAuthorization('alice', 'alice-password');

const CREATE = `mutation($input: CreateApiKeyInput!) { createApiKey(input: $input) { id key apiKey { id name scopes } } }`;
const UPDATE = `mutation($id: ID!, $input: UpdateApiKeyInput!) { updateApiKey(id: $id, input: $input) { id name scopes } }`;
const ROTATE = `mutation($id: ID!, $grace: Int) { rotateApiKey(id: $id, gracePeriodSeconds: $grace) { id key apiKey { name scopes } } }`;

interface Answer { status: number; body: { data?: Record<string, unknown> | null; errors?: { message?: string; extensions?: Record<string, unknown> }[] } }

describe('API key scopes, over a gateway process', () => {
  const dir = tempDir();
  const shop = 'https://shop.example';
  const env = { DATA_DIR: dir.dir, CORS_ORIGINS: shop };
  let gw: ServeProcess;
  const keys = {} as Record<Scope | 'all', { id: string; key: string }>;

  const call = (query: string, variables: Record<string, unknown>, authorization: string): Promise<Answer> =>
    gql(gw.url, query, variables, { authorization });

  async function create(authorization: string, input: Record<string, unknown>): Promise<{ id: string; key: string; apiKey: { scopes: string[] } }> {
    const created = await call(CREATE, { input }, authorization);
    expect(created.body.errors).toBeUndefined();
    return created.body.data!.createApiKey as { id: string; key: string; apiKey: { scopes: string[] } };
  }

  /** One request of each scope, over GraphQL and REST: the status and the scope a refusal names. */
  const probes: Record<Scope, { graphql: (key: string) => Promise<Answer>; rest: (key: string) => Promise<{ status: number; body: unknown }> }> = {
    RECOMMENDATIONS_READ: {
      graphql: (key) => call(`{ item(itemId: ${ITEM}) { itemId } }`, {}, key),
      rest: (key) => restCall('GET', `/v1/items/${ITEM}?apiKey=${encodeURIComponent(key)}`),
    },
    EVENTS_WRITE: {
      graphql: (key) => call(`mutation { recordEvents(events: [{ kind: VIEW, itemId: ${ITEM}, sessionId: "s-1" }]) { accepted } }`, {}, key),
      rest: (key) => restCall('POST', '/v1/events', key, [{ kind: 'view', itemId: ITEM, sessionId: 's-2' }]),
    },
    KEYS_MANAGE: {
      graphql: (key) => call('{ apiKeys { id } }', {}, key),
      rest: (key) => restCall('GET', '/api/v1/apikey', key),
    },
  };

  async function restCall(method: string, path: string, authorization?: string, body?: unknown): Promise<{ status: number; body: unknown }> {
    const response = await fetch(`${gw.url}${path}`, {
      method,
      headers: { ...(authorization ? { authorization } : {}), ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    return { status: response.status, body: await response.json() };
  }

  beforeAll(async () => {
    expect((await runCli(['user', 'add', 'root', '--admin', '--password', 'root-password'], env)).code).toBe(0);
    expect((await runCli(['user', 'add', 'alice', '--password', 'alice-password'], env)).code).toBe(0);
    gw = await startServe(env);
    for (const scope of SCOPES) keys[scope] = await create(root, { name: `only-${scope.toLowerCase().replace('_', '-')}`, scopes: [scope] });
    keys.all = await create(root, { name: 'every-scope' });
  }, 90_000);
  afterAll(async () => {
    await gw?.stop();
    dir.remove();
  });

  it('lists a key made without scopes with every scope its user may hold', async () => {
    const listed = await call('{ apiKeys { name scopes } }', {}, root);
    expect(listed.body.data!.apiKeys).toContainEqual({ name: 'every-scope', scopes: SCOPES });
    const own = await create(alice, { name: 'alices' });
    // a user who is no administrator may not send events: her keys do not list it
    expect(own.apiKey.scopes).toEqual(['RECOMMENDATIONS_READ', 'KEYS_MANAGE']);
  });

  describe.each(SCOPES)('%s', (scope) => {
    it('is allowed to a key holding it, a key made without scopes and a password, over GraphQL and REST', async () => {
      for (const credential of [keys[scope].key, keys.all.key, root]) {
        const graphql = await probes[scope].graphql(credential);
        expect(graphql.body.errors, `${scope} over GraphQL`).toBeUndefined();
        if (credential !== root) expect((await probes[scope].rest(credential)).status, `${scope} over REST`).toBe(200);
      }
    });

    it('is refused to every key without it: FORBIDDEN naming it, and 403 in the interface\'s body', async () => {
      for (const other of SCOPES.filter((s) => s !== scope)) {
        const graphql = await probes[scope].graphql(keys[other].key);
        expect(graphql.body.errors).toMatchObject([{ extensions: { code: 'FORBIDDEN', scope } }]);
        expect(graphql.body.errors![0]!.message).toContain(scope);
        const rest = await probes[scope].rest(keys[other].key);
        expect(rest.status).toBe(403);
        expect(JSON.stringify(rest.body)).toContain(`"scope":"${scope}"`);
      }
    });
  });

  it('answers a cached public answer to no key without RECOMMENDATIONS_READ', async () => {
    const query = `{ item(itemId: ${ITEM}) { itemId name } }`;
    for (let i = 0; i < 2; i++) expect((await call(query, {}, keys.RECOMMENDATIONS_READ.key)).body.errors).toBeUndefined();
    expect((await call(query, {}, keys.KEYS_MANAGE.key)).body.errors).toMatchObject([{ extensions: { code: 'FORBIDDEN', scope: 'RECOMMENDATIONS_READ' } }]);
  });

  it('keeps a publishable key to reading: it cannot create, delete, rotate or update keys, nor send events', async () => {
    const publishable = keys.RECOMMENDATIONS_READ.key;
    const attempts = [
      call(CREATE, { input: { name: 'stolen', scopes: ['KEYS_MANAGE'] } }, publishable),
      call('mutation($id: ID!) { deleteApiKey(id: $id) { ok } }', { id: keys.all.id }, publishable),
      call(ROTATE, { id: keys.RECOMMENDATIONS_READ.id, grace: 0 }, publishable),
      call(UPDATE, { id: keys.RECOMMENDATIONS_READ.id, input: { scopes: SCOPES } }, publishable),
      probes.EVENTS_WRITE.graphql(publishable),
    ];
    for (const answer of await Promise.all(attempts)) expect(answer.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    expect((await restCall('POST', '/api/v1/apikey', publishable, { name: 'stolen-rest' })).status).toBe(403);
    expect((await restCall('DELETE', `/api/v1/apikey/${keys.all.id}`, publishable)).status).toBe(403);
    expect((await restCall('POST', `/api/v1/apikey/${keys.all.id}/rotate`, publishable, { gracePeriodSeconds: 0 })).status).toBe(403);
    const listed = await call('{ apiKeys { name } }', {}, root);
    expect(JSON.stringify(listed.body.data)).not.toContain('stolen');
  });

  it("serves a publishable key to a browser page on an allowed origin, reading only", async () => {
    const publishable = keys.RECOMMENDATIONS_READ.key;
    const preflight = await fetch(`${gw.url}/graphql`, {
      method: 'OPTIONS',
      headers: { origin: shop, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' },
    });
    expect(preflight.headers.get('access-control-allow-origin')).toBe(shop);
    await preflight.body?.cancel();
    const page = (query: string) => fetch(`${gw.url}/graphql`, {
      method: 'POST',
      headers: { origin: shop, authorization: publishable, 'content-type': 'application/json' },
      body: JSON.stringify({ query }),
    });
    const read = await page(`{ productRecommendations(itemId: ${ITEM}, first: 1) { itemId } }`);
    expect(read.headers.get('access-control-allow-origin')).toBe(shop);
    expect(((await read.json()) as { data: { productRecommendations: unknown[] } }).data.productRecommendations).toHaveLength(1);
    const rest = await fetch(`${gw.url}/v1/nbp?itemId=${ITEM}&apiKey=${encodeURIComponent(publishable)}`, { headers: { origin: shop } });
    expect(rest.status).toBe(200);
    expect(rest.headers.get('access-control-allow-origin')).toBe(shop);
    await rest.body?.cancel();
    const write = await page('mutation { createApiKey(input: {}) { key } }');
    expect(((await write.json()) as Answer['body']).errors).toMatchObject([{ extensions: { code: 'FORBIDDEN', scope: 'KEYS_MANAGE' } }]);
  });

  it('never lets a key make or widen a key past its own scopes', async () => {
    const manager = keys.KEYS_MANAGE.key;
    const wider = await call(CREATE, { input: { name: 'wider', scopes: ['KEYS_MANAGE', 'EVENTS_WRITE'] } }, manager);
    expect(wider.body.errors).toMatchObject([{ extensions: { code: 'FORBIDDEN', scope: 'EVENTS_WRITE' } }]);
    // scopes omitted: no more than its maker's
    const child = await create(manager, { name: 'child-of-manager' });
    expect(child.apiKey.scopes).toEqual(['KEYS_MANAGE']);
    const widen = await call(UPDATE, { id: keys.KEYS_MANAGE.id, input: { scopes: ['KEYS_MANAGE', 'RECOMMENDATIONS_READ'] } }, manager);
    expect(widen.body.errors).toMatchObject([{ extensions: { code: 'FORBIDDEN', scope: 'RECOMMENDATIONS_READ' } }]);
    const viaRest = await restCall('PATCH', `/api/v1/apikey/${keys.KEYS_MANAGE.id}`, manager, { scopes: SCOPES });
    expect(viaRest.status).toBe(403);
    // a new value of a wider key would be that wider key in the caller's hands
    const rotateWider = await call(ROTATE, { id: keys.all.id, grace: 0 }, manager);
    expect(rotateWider.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    // narrowing is always allowed, and a narrowed key stops at once
    const narrowed = await call(UPDATE, { id: child.id, input: { name: 'child-renamed', scopes: ['KEYS_MANAGE'] } }, manager);
    expect(narrowed.body.data).toEqual({ updateApiKey: { id: child.id, name: 'child-renamed', scopes: ['KEYS_MANAGE'] } });
  });

  it('narrows a key so that it stops what it could do before, at once', async () => {
    const key = await create(root, { name: 'to-narrow' });
    expect((await probes.EVENTS_WRITE.graphql(key.key)).body.errors).toBeUndefined();
    const narrowed = await call(UPDATE, { id: key.id, input: { scopes: ['RECOMMENDATIONS_READ'] } }, root);
    expect(narrowed.body.data).toEqual({ updateApiKey: { id: key.id, name: 'to-narrow', scopes: ['RECOMMENDATIONS_READ'] } });
    expect((await probes.EVENTS_WRITE.graphql(key.key)).body.errors).toMatchObject([{ extensions: { code: 'FORBIDDEN', scope: 'EVENTS_WRITE' } }]);
    expect((await probes.RECOMMENDATIONS_READ.graphql(key.key)).body.errors).toBeUndefined();
  });

  it('refuses careless input: unknown scopes, an empty list, events for a user who may not send them', async () => {
    const unknown = await call(CREATE, { input: { scopes: ['READ'] } }, root);
    expect(unknown.status).toBe(400);
    const empty = await call(CREATE, { input: { scopes: [] } }, root);
    expect(empty.body.errors).toMatchObject([{ extensions: { code: 'BAD_USER_INPUT', field: 'scopes' } }]);
    const notAdmin = await call(CREATE, { input: { scopes: ['EVENTS_WRITE'] } }, alice);
    expect(notAdmin.body.errors).toMatchObject([{ extensions: { code: 'BAD_USER_INPUT', field: 'scopes' } }]);
    const rest = await restCall('POST', '/api/v1/apikey', alice, { scopes: 'RECOMMENDATIONS_READ' });
    expect(rest).toMatchObject({ status: 400, body: [{ id: 'scopes' }] });
  });
});
