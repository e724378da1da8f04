import { describe, expect, it } from 'vitest';
import { basicAuthorization } from '../../src/auth/authorization.js';
import { codeOf, useEmbeddedGateway } from '../helpers/gateway.js';
import { storeKinds } from '../helpers/stores.js';

/**
 * A key with limits of its own may give no key more than it has (docs/keys.md, "Who may raise a
 * limit"): rotating a sibling key without limits would hand it that sibling's new value, a key
 * without its quota, so the rotation must be refused as raising a limit is.
 */
const alice = basicAuthorization('alice', 'alice-password');
const CREATE = `mutation($input: CreateApiKeyInput!) { createApiKey(input: $input) { id key } }`;
const ROTATE = `mutation($id: ID!) { rotateApiKey(id: $id, gracePeriodSeconds: 0) { key apiKey { dailyQuota rateLimitPerSecond } } }`;

describe('a limited key rotating a key with no limits', () => {
  const gw = useEmbeddedGateway(storeKinds.find((k) => k.name === 'sqlite')!);

  async function create(input: Record<string, unknown>): Promise<{ id: string; key: string }> {
    const answer = await gw.gql<{ createApiKey: { id: string; key: string } }>(CREATE, { input }, { authorization: alice });
    expect(answer.body.errors).toBeUndefined();
    return answer.body.data!.createApiKey;
  }

  it('is FORBIDDEN: the partner holding a key with dailyQuota 3 gets no unlimited key value', async () => {
    const limited = await create({ name: 'partner-quota-3', scopes: ['RECOMMENDATIONS_READ', 'KEYS_MANAGE'], dailyQuota: 3, rateLimitPerSecond: 5 });
    const free = await create({ name: 'team-unlimited', scopes: ['RECOMMENDATIONS_READ', 'KEYS_MANAGE'] });

    // what the limited key may not do directly
    const direct = await gw.gql(CREATE, { input: { name: 'escape-direct', dailyQuota: null } }, { authorization: limited.key });
    expect(codeOf(direct)).toBe('FORBIDDEN');

    const rotated = await gw.gql<{ rotateApiKey: { key: string; apiKey: { dailyQuota: number | null } } }>(ROTATE, { id: free.id }, { authorization: limited.key });
    expect(codeOf(rotated)).toBe('FORBIDDEN');
    expect(rotated.body.data?.rotateApiKey?.key).toBeUndefined();
  });
});
