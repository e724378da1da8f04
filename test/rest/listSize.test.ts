import { beforeAll, describe, expect, it } from 'vitest';
import { basicAuthorization } from '../../src/auth/authorization.js';
import { useEmbeddedGateway } from '../helpers/gateway.js';
import { storeKinds } from '../helpers/stores.js';

/**
 * The lists of the served REST interface spell their size alike, `first`, as GraphQL does; a
 * parameter a route does not take, or one given twice, is refused rather than ignored.
 */
const alice = basicAuthorization('alice', 'alice-password');

describe('the size of a REST list, and parameters given twice', () => {
  const gw = useEmbeddedGateway(storeKinds.find((k) => k.name === 'sqlite')!);
  let key: string;

  const get = async (path: string): Promise<{ status: number; body: unknown }> => {
    const response = await fetch(`${gw.url}${path}&apiKey=${encodeURIComponent(key)}`);
    return { status: response.status, body: await response.json() };
  };

  beforeAll(async () => {
    const created = await gw.gql<{ createApiKey: { key: string } }>('mutation { createApiKey(input: {}) { key } }', {}, { authorization: alice });
    key = created.body.data!.createApiKey.key;
  });

  it('takes first on /v1/foryou as on /v1/trending and /v1/popular, and count as its older spelling', async () => {
    for (const [path, size] of [['/v1/foryou?sessionId=s-1&first=3', 3], ['/v1/foryou?sessionId=s-1&count=2', 2]] as const) {
      const answer = await get(path);
      expect(answer.status).toBe(200);
      expect((answer.body as { entries: unknown[] }).entries).toHaveLength(size);
    }
    for (const path of ['/v1/trending?first=2', '/v1/popular?first=2']) {
      const answer = await get(path);
      expect(answer.status).toBe(200);
      expect((answer.body as unknown[]).length).toBeLessThanOrEqual(2);
    }
  });

  it.each([
    ['/v1/foryou?sessionId=s-1&first=3&count=3', 'count'],
    ['/v1/foryou?sessionId=s-1&first=0', 'first'],
    ['/v1/foryou?sessionId=s-1&first=2&first=3', 'first'],
    ['/v1/trending?count=3', 'count'],
    ['/v1/popular?count=3', 'count'],
  ])('refuses %s with the 400 body naming %s', async (path, name) => {
    const answer = await get(path);
    expect(answer.status).toBe(400);
    const { errors } = answer.body as { errors: { code: number; message: string }[] };
    expect(errors.map((e) => e.code)).toEqual([4000]);
    expect(errors[0]!.message).toContain(name);
  });

  it('refuses since or until given twice on /v1/stats', async () => {
    for (const query of ['since=0&since=1000', 'since=0&until=5000&until=6000']) {
      const response = await fetch(`${gw.url}/v1/stats?${query}`, { headers: { authorization: alice } });
      expect(response.status).toBe(400);
      const { errors } = (await response.json()) as { errors: { code: number; message: string }[] };
      expect(errors.map((e) => e.code)).toEqual([4000]);
      expect(errors[0]!.message).toContain('given once');
    }
  });
});
