import { Client } from 'undici';
import { describe, expect, it } from 'vitest';
import { basicAuthorization } from '../../../src/auth/authorization.js';
import { codeOf, useEmbeddedGateway } from '../../helpers/gateway.js';
import { storeKinds } from '../../helpers/stores.js';

const CREATE = `mutation Create($input: CreateApiKeyInput!) {
  createApiKey(input: $input) { ok id key apiKey { id userId name createdAt expiresAt lastUsedAt } }
}`;
const LIST = `query { apiKeys { id userId name } }`;
const DELETE = `mutation Delete($id: ID!) { deleteApiKey(id: $id) { ok result id } }`;

const alice = { authorization: basicAuthorization('alice', 'alice-password') };
const bob = { authorization: basicAuthorization('bob', 'bob-password', 'corp.example') };

describe.each(storeKinds)('API keys through GraphQL over HTTP, $name store', (kind) => {
  const gw = useEmbeddedGateway(kind);

  it('creates a key with Basic user@domain credentials, then lists with that key, bare and Bearer', async () => {
    const created = await gw.gql<{ createApiKey: { ok: boolean; id: string; key: string; apiKey: { name: string; userId: string } } }>(
      CREATE,
      { input: { name: 'mobile-app' } },
      bob,
    );
    expect(created.status).toBe(200);
    const payload = created.body.data!.createApiKey;
    expect(payload).toMatchObject({ ok: true, apiKey: { name: 'mobile-app' } });
    expect(payload.key).toMatch(/^[A-Za-z0-9+/]{22}$/);

    for (const authorization of [payload.key, `Bearer ${payload.key}`]) {
      const listed = await gw.gql<{ apiKeys: { id: string; name: string; userId: string }[] }>(LIST, {}, { authorization });
      expect(listed.body.data!.apiKeys).toEqual([{ id: payload.id, userId: payload.apiKey.userId, name: 'mobile-app' }]);
    }
    const viewer = await gw.gql(`{ viewer { username domain isAdmin authenticatedBy } }`, {}, { authorization: payload.key });
    expect(viewer.body.data).toEqual({
      viewer: { username: 'bob', domain: 'corp.example', isAdmin: false, authenticatedBy: 'API_KEY' },
    });
  });

  it.each([
    ['malformed', 'Token !!'],
    ['unknown key', 'AAECAwQFBgcICQoLDA0ODw'],
    ['wrong password', basicAuthorization('alice', 'nope')],
  ])('answers a %s Authorization with 401 UNAUTHENTICATED and no hint', async (_, authorization) => {
    const response = await gw.gql(LIST, {}, { authorization });
    expect(response.status).toBe(401);
    expect(codeOf(response)).toBe('UNAUTHENTICATED');
    expect(response.headers.get('www-authenticate')).toMatch(/^Basic/);
    expect(response.body.errors![0]!.message).toBe(
      'Authentication required: send a valid API key or credentials in the Authorization header',
    );
    expect(JSON.stringify(response.body)).not.toContain(authorization);
  });

  it("challenges a browser page's script with Bearer, which opens no password box, and anything else with Basic", async () => {
    // refused by authentication (a bad key), and by the resolver (no credentials at all)
    for (const authorization of [{ authorization: 'AAECAwQFBgcICQoLDA0ODw' }, {}] as Record<string, string>[]) {
      for (const [fetchHeaders, challenge] of [
        [{}, 'Basic realm="recs-gateway"'],
        [{ 'sec-fetch-dest': 'document', 'sec-fetch-mode': 'navigate' }, 'Basic realm="recs-gateway"'],
        [{ 'sec-fetch-dest': 'empty', 'sec-fetch-mode': 'cors', 'sec-fetch-site': 'cross-site' }, 'Bearer realm="recs-gateway"'],
        [{ 'sec-fetch-dest': 'empty', 'sec-fetch-mode': 'same-origin', 'sec-fetch-site': 'same-origin' }, 'Bearer realm="recs-gateway"'],
      ] as const) {
        const response = await gw.gql(LIST, {}, { ...authorization, ...fetchHeaders });
        expect([response.status, codeOf(response), response.headers.get('www-authenticate')]).toEqual([401, 'UNAUTHENTICATED', challenge]);
      }
    }
  });

  it('asks for credentials where none are sent, and gives viewer null', async () => {
    expect(codeOf(await gw.gql(LIST))).toBe('UNAUTHENTICATED');
    expect((await gw.gql(`{ viewer { id } }`)).body).toEqual({ data: { viewer: null } });
  });

  it('refuses a deleted key on the very next request', async () => {
    const created = await gw.gql<{ createApiKey: { id: string; key: string } }>(CREATE, { input: {} }, alice);
    const { id, key } = created.body.data!.createApiKey;
    expect((await gw.gql(LIST, {}, { authorization: key })).status).toBe(200);
    const deleted = await gw.gql(DELETE, { id }, { authorization: key });
    expect(deleted.body.data).toEqual({ deleteApiKey: { ok: true, result: 'DELETED', id } });
    const after = await gw.gql(LIST, {}, { authorization: key });
    expect(after.status).toBe(401);
  });

  it('tells keys apart on one keep-alive connection (a proxy sends many users down one)', async () => {
    const keyOf = async (who: { authorization: string }): Promise<{ id: string; key: string }> =>
      (await gw.gql<{ createApiKey: { id: string; key: string } }>(CREATE, { input: {} }, who)).body.data!.createApiKey;
    const [alices, bobs] = [await keyOf(alice), await keyOf(bob)];
    const client = new Client(gw.url, { pipelining: 1 });
    try {
      const viewer = async (authorization: string): Promise<{ status: number; username?: string }> => {
        const { statusCode, body } = await client.request({
          path: '/graphql',
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization },
          body: JSON.stringify({ query: '{ viewer { username } }' }),
        });
        const json = (await body.json()) as { data?: { viewer: { username: string } | null } };
        return { status: statusCode, ...(json.data?.viewer ? { username: json.data.viewer.username } : {}) };
      };
      const wrong = `${alices.key.slice(0, -2)}${alices.key.endsWith('AA') ? 'BB' : 'AA'}`;
      for (let round = 0; round < 2; round++) {
        expect(await viewer(alices.key)).toEqual({ status: 200, username: 'alice' });
        expect(await viewer(bobs.key)).toEqual({ status: 200, username: 'bob' });
        expect((await viewer(wrong)).status).toBe(401);
      }
      expect((await gw.gql(DELETE, { id: bobs.id }, bob)).body.errors).toBeUndefined();
      expect((await viewer(bobs.key)).status).toBe(401);
      expect(await viewer(alices.key)).toEqual({ status: 200, username: 'alice' });
    } finally {
      await client.close();
    }
  });

  it('answers another user’s key exactly like an unknown id, and a bad name with BAD_USER_INPUT', async () => {
    const bobs = await gw.gql<{ createApiKey: { id: string } }>(CREATE, { input: {} }, bob);
    const id = bobs.body.data!.createApiKey.id;
    const notYours = await gw.gql(DELETE, { id }, alice);
    expect(notYours.body.errors).toEqual([
      expect.objectContaining({ message: `API key not found: ${id}`, extensions: { code: 'NOT_FOUND' } }),
    ]);
    const badName = await gw.gql(CREATE, { input: { name: 'no spaces allowed' } }, alice);
    expect(badName.body.errors?.[0]?.extensions).toEqual({ code: 'BAD_USER_INPUT', field: 'name' });
    const forbidden = await gw.gql(CREATE, { input: { username: 'bob', userDomain: 'corp.example' } }, alice);
    expect(codeOf(forbidden)).toBe('FORBIDDEN');
    expect(forbidden.body.errors?.[0]?.message).toBe('Operation is not permitted');
  });

  it('lets the administrator create and list keys for a domain user', async () => {
    const root = { authorization: basicAuthorization('root', 'root-password') };
    const created = await gw.gql(CREATE, { input: { username: 'bob', userDomain: 'corp.example', name: 'by-root' } }, root);
    expect(created.body.errors).toBeUndefined();
    const listed = await gw.gql<{ apiKeys: { name: string }[] }>(
      `{ apiKeys(username: "bob", userDomain: "corp.example") { name } }`,
      {},
      root,
    );
    expect(listed.body.data!.apiKeys.map((k) => k.name)).toContain('by-root');
  });
});
