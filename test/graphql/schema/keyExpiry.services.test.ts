import { describe, expect, it } from 'vitest';
import { basicAuthorization } from '../../../src/auth/authorization.js';
import { codeOf, useEmbeddedGateway } from '../../helpers/gateway.js';
import { storeKinds } from '../../helpers/stores.js';

const alice = { authorization: basicAuthorization('alice', 'alice-password') };
const CREATE = `mutation($input: CreateApiKeyInput!) {
  createApiKey(input: $input) { key apiKey { id createdAt expiresAt lastUsedAt } }
}`;
const LIST = '{ apiKeys { id name createdAt expiresAt lastUsedAt } }';

interface Listed {
  id: string;
  name: string;
  createdAt: string;
  expiresAt: string | null;
  lastUsedAt: string | null;
}

describe.each(storeKinds)('key expiry and last use through GraphQL, $name store', (kind) => {
  const gw = useEmbeddedGateway(kind);

  it('sets expiresAt from expiresInDays, and lastUsedAt once the key is used; both listed', async () => {
    const before = Date.now();
    const created = await gw.gql<{ createApiKey: { key: string; apiKey: Listed } }>(CREATE, { input: { name: 'expiring', expiresInDays: 30 } }, alice);
    const { key, apiKey } = created.body.data!.createApiKey;
    const expiresIn = Date.parse(apiKey.expiresAt!) - Date.parse(apiKey.createdAt);
    // createdAt and expiresAt may be taken a millisecond apart
    expect(Math.abs(expiresIn - 30 * 86_400_000)).toBeLessThan(1000);
    expect(Date.parse(apiKey.createdAt)).toBeGreaterThanOrEqual(before - 1000);
    expect(apiKey.lastUsedAt).toBeNull();

    const forever = await gw.gql<{ createApiKey: { apiKey: Listed } }>(CREATE, { input: { name: 'forever' } }, alice);
    expect(forever.body.data!.createApiKey.apiKey.expiresAt).toBeNull();

    // a use by key; the write is best effort and off the request's path, so look again, for up to
    // 20 s: a busy machine may take more than a moment (the first look usually sees it)
    expect((await gw.gql('{ viewer { username } }', {}, { authorization: key })).status).toBe(200);
    let listed: Listed[] = [];
    for (let i = 0; i < 400; i++) {
      listed = (await gw.gql<{ apiKeys: Listed[] }>(LIST, {}, alice)).body.data!.apiKeys;
      if (listed.find((k) => k.name === 'expiring')?.lastUsedAt) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    const used = listed.find((k) => k.name === 'expiring')!;
    expect(used.expiresAt).toBe(apiKey.expiresAt);
    expect(Date.parse(used.lastUsedAt!)).toBeGreaterThanOrEqual(Date.parse(apiKey.createdAt));
    expect(Date.parse(used.lastUsedAt!)).toBeLessThanOrEqual(Date.now());
    expect(listed.find((k) => k.name === 'forever')!.lastUsedAt).toBeNull();
  });

  it.each([0, -1, 3651])('refuses expiresInDays %d with BAD_USER_INPUT on that field', async (days) => {
    const response = await gw.gql(CREATE, { input: { name: `bad-${days + 10}`, expiresInDays: days } }, alice);
    expect(codeOf(response)).toBe('BAD_USER_INPUT');
    expect(response.body.errors![0]!.extensions!.field).toBe('expiresInDays');
  });
});
