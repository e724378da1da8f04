import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuthorization } from '../../src/auth/authorization.js';
import { openBackend } from '../../src/main.js';
import { RedisCache } from '../../src/cache/redis.js';
import { loadConfig } from '../../src/config/env.js';
import { createGateway, type Gateway } from '../../src/http/server.js';
import { startCountingProxy, type CountingProxy } from '../helpers/countingProxy.js';
import type { GraphQLResponse } from '../helpers/gateway.js';
import { drainPrefix, REDIS_URL, testPrefix } from '../helpers/redis.js';
import { startRestUpstream, type RestUpstream } from '../helpers/restUpstream.js';

/**
 * Batching and the shared cache in REST mode, measured where it counts: at a proxy in front of
 * the upstream, with real Redis, and two gateway processes' worth of state.
 */
const PHONE = 31000005;
const NESTED = `query($id: ItemId!) {
  productRecommendations(itemId: $id) { itemId name parent { itemId name } variantItems { itemId name } }
}`;

interface Client {
  gateway: Gateway;
  url: string;
  gql<T = Record<string, unknown>>(query: string, variables: Record<string, unknown>, authorization: string): Promise<Pick<GraphQLResponse<T>, 'status' | 'body'>>;
}

describe('REST mode: batching and the shared Redis cache', () => {
  let upstream: RestUpstream;
  let proxy: CountingProxy;
  const prefix = testPrefix();
  const clients: Client[] = [];
  const secrets: string[] = [];
  let aliceKey: string;
  let bobKey: string;

  async function gatewayProcess(keyPrefix = prefix): Promise<Client> {
    const config = loadConfig({
      BACKEND: 'rest',
      APIKEY_SERVICE_URL: proxy.url,
      RECS_SERVICE_URL: proxy.url,
      RECS_API_KEY: upstream.recsApiKey,
      REDIS_URL,
      REDIS_KEY_PREFIX: keyPrefix,
    });
    // A command timeout for a busy machine: past the default 100 ms a slow answer reads as a miss
    // and backs the cache off for a second, and the counts below would measure the machine's load.
    const cache = new RedisCache({ url: REDIS_URL, keyPrefix, commandTimeoutMs: 10_000 });
    for (let i = 0; i < 100 && (await cache.check()) !== 'ok'; i++) await new Promise((r) => setTimeout(r, 20));
    const backend = await openBackend(config, { cache });
    const gateway = await createGateway({ config, backend, cache });
    const url = await gateway.listen(0, '127.0.0.1');
    const client: Client = {
      gateway,
      url,
      async gql<T>(query: string, variables: Record<string, unknown>, authorization: string) {
        const response = await fetch(`${url}/graphql`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization },
          body: JSON.stringify({ query, variables }),
        });
        return { status: response.status, body: (await response.json()) as GraphQLResponse<T>['body'] };
      },
    };
    clients.push(client);
    return client;
  }

  beforeAll(async () => {
    upstream = await startRestUpstream([
      { username: 'alice', password: 'alice-password' },
      { username: 'bob', password: 'bob-password' },
    ]);
    proxy = await startCountingProxy(upstream.url);
    const a = await gatewayProcess();
    for (const [user, password] of [['alice', 'alice-password'], ['bob', 'bob-password']] as const) {
      const basic = basicAuthorization(user, password);
      const created = await a.gql<{ createApiKey: { key: string } }>(`mutation { createApiKey(input: {}) { key } }`, {}, basic);
      secrets.push(basic, password, created.body.data!.createApiKey.key);
    }
    secrets.push(upstream.recsApiKey);
    [, , aliceKey, , , bobKey] = secrets as [string, string, string, string, string, string];
  }, 120_000);

  afterAll(async () => {
    for (const c of clients) await c.gateway.stop();
    await proxy?.close();
    await upstream?.stop();
    await drainPrefix(prefix);
  });

  it('cold: 1 + ceil(distinct ids / 20) recommendation calls for 10 items with parents and variants; warm: 0', async () => {
    const a = clients[0]!;
    proxy.reset();
    const cold = await a.gql<{ productRecommendations: { itemId: number; parent: { itemId: number } | null; variantItems: { itemId: number }[] }[] }>(NESTED, { id: PHONE }, aliceKey);
    expect(cold.body.errors).toBeUndefined();
    const recs = cold.body.data!.productRecommendations;
    expect(recs).toHaveLength(10);
    const known = new Set(recs.map((r) => r.itemId));
    const more = new Set<number>();
    for (const r of recs) {
      if (r.parent && !known.has(r.parent.itemId)) more.add(r.parent.itemId);
      for (const v of r.variantItems) if (!known.has(v.itemId)) more.add(v.itemId);
    }
    expect(more.size).toBeGreaterThan(0);
    expect(proxy.count('GET /v1/nbp')).toBe(1);
    expect(proxy.count('GET /v1/items')).toBe(Math.ceil(more.size / 20));
    expect(proxy.count('GET /v1/')).toBe(1 + Math.ceil(more.size / 20));

    proxy.reset();
    const warm = await a.gql(NESTED, { id: PHONE }, aliceKey);
    expect(warm.body).toEqual(cold.body);
    expect(proxy.requests).toEqual([]);
  });

  it('a second process on the same Redis answers the first one’s warm query with 0 upstream calls', async () => {
    const b = await gatewayProcess();
    proxy.reset();
    const answer = await b.gql(NESTED, { id: PHONE }, aliceKey);
    expect(answer.body.data?.productRecommendations).toHaveLength(10);
    expect(proxy.requests).toEqual([]);
  });

  it('100 concurrent identical queries make 1 call per credential and never mix users’ data', async () => {
    const fresh = await gatewayProcess(testPrefix());
    proxy.reset();
    const query = `query($id: ItemId!) { viewer { username } apiKeys { id } postBrowsedProducts(itemId: $id) { itemId } }`;
    const answers = await Promise.all(
      Array.from({ length: 100 }, (_, i) => fresh.gql(query, { id: 31000007 }, i % 2 === 0 ? aliceKey : bobKey)),
    );
    expect(proxy.count('GET /v1/postbrowse')).toBe(1);
    // one authentication per credential; every apiKeys field of a request is its own upstream call
    const aliceKeys = answers[0]!.body.data?.apiKeys;
    const bobKeys = answers[1]!.body.data?.apiKeys;
    expect(aliceKeys).not.toEqual(bobKeys);
    answers.forEach((answer, i) => expect(answer.body.data?.apiKeys).toEqual(i % 2 === 0 ? aliceKeys : bobKeys));
    expect(new Set(answers.map((a) => JSON.stringify(a.body.data?.postBrowsedProducts))).size).toBe(1);

    const single = await gatewayProcess(testPrefix());
    proxy.reset();
    await Promise.all(Array.from({ length: 100 }, () => single.gql(`{ productRecommendations(itemId: 31000012) { itemId } }`, {}, aliceKey)));
    expect(proxy.count('GET /api/v1/apikey')).toBe(1);
    expect(proxy.count('GET /v1/nbp')).toBe(1);
  });

  it('keeps no key, password or Authorization value anywhere in Redis', async () => {
    const { Redis } = await import('ioredis');
    const client = new Redis(REDIS_URL);
    const keys = await client.keys(`${prefix}*`);
    expect(keys.length).toBeGreaterThan(10);
    const values = keys.length > 0 ? await client.mget(...keys) : [];
    client.disconnect();
    const everything = [...keys, ...values].join('\n');
    for (const secret of secrets) expect(everything).not.toContain(secret);
    expect(everything).not.toMatch(/Basic |Bearer /);
  });

  it('a key deleted through one gateway stops at once there and in any process that has not seen it', async () => {
    const a = clients[0]!;
    const created = await a.gql<{ createApiKey: { id: string; key: string } }>(`mutation { createApiKey(input: { name: "short-lived" }) { id key } }`, {}, aliceKey);
    const { id, key } = created.body.data!.createApiKey;
    expect((await a.gql(`{ viewer { authenticatedBy } }`, {}, key)).status).toBe(200);
    await a.gql(`mutation($id: ID!) { deleteApiKey(id: $id) { ok } }`, { id }, key);
    expect((await a.gql(`{ viewer { authenticatedBy } }`, {}, key)).status).toBe(401);
    const fresh = await gatewayProcess();
    expect((await fresh.gql(`{ viewer { authenticatedBy } }`, {}, key)).status).toBe(401);
  });
});
