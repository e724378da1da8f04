import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { drainPrefix, REDIS_URL, testPrefix } from '../../helpers/redis.js';
import {
  cacheReady, PHONE, startRestGateway, startUpstream, type RestGateway, type Upstream,
} from '../../helpers/harness.js';

/**
 * REST mode: a key deleted through the gateway, by its owner or by an administrator, stops at
 * once: in the process that deleted it, and in every process on the same Redis. Over real HTTP,
 * against a real key service (a gateway process serving the REST interface).
 */
const VIEWER = '{ viewer { authenticatedBy } }';
/** A public answer: the second time it comes from the response cache, before the GraphQL pipeline. */
const PUBLIC = `{ item(itemId: ${PHONE}) { itemId name } }`;
const DELETE = 'mutation($id: ID!) { deleteApiKey(id: $id) { ok } }';

describe('REST mode: a key deleted through the gateway stops at once', () => {
  let upstream: Upstream;
  const gateways: RestGateway[] = [];
  const prefix = testPrefix();

  async function gateway(env: Record<string, string> = {}): Promise<RestGateway> {
    // 10 s a Redis command: a deleted-key mark read past the served 100 ms counts as absent (Redis
    // trouble must not stop the gateway), and on a busy machine the refusals below would then be luck
    const started = await startRestGateway({
      keysUrl: upstream.url, recsUrl: upstream.url, recsApiKey: upstream.gatewayKey, env, redisCommandTimeoutMs: 10_000,
    });
    gateways.push(started);
    await cacheReady(started.cache);
    return started;
  }
  const shared = (): Promise<RestGateway> => gateway({ REDIS_URL, REDIS_KEY_PREFIX: prefix });

  async function newKey(via: RestGateway, name: string): Promise<{ id: string; key: string }> {
    const created = await via.gql(`mutation { createApiKey(input: { name: "${name}" }) { id key } }`, {}, upstream.alice.basic);
    expect(created.body.errors).toBeUndefined();
    return (created.body.data as { createApiKey: { id: string; key: string } }).createApiKey;
  }

  /** The key works on each gateway, and each has it remembered (and a public answer cached). */
  async function warm(key: string, ...on: RestGateway[]): Promise<void> {
    for (const g of on) {
      expect((await g.gql(VIEWER, {}, key)).body.data).toEqual({ viewer: { authenticatedBy: 'API_KEY' } });
      for (let i = 0; i < 2; i++) expect((await g.gql(PUBLIC, {}, key)).status).toBe(200);
    }
  }

  async function refused(key: string, ...on: RestGateway[]): Promise<void> {
    for (const g of on) {
      expect((await g.gql(VIEWER, {}, key)).status).toBe(401);
      expect((await g.gql(PUBLIC, {}, key)).status).toBe(401);
    }
  }

  async function remove(via: RestGateway, id: string, authorization: string): Promise<void> {
    const deleted = await via.gql(DELETE, { id }, authorization);
    expect(deleted.body).toEqual({ data: { deleteApiKey: { ok: true } } });
  }

  beforeAll(async () => {
    upstream = await startUpstream();
  }, 120_000);

  afterAll(async () => {
    for (const g of gateways) await g.stop();
    await upstream?.stop();
    await drainPrefix(prefix);
  });

  it('an administrator deletes alice\'s key: her next request with it is 401', async () => {
    const g = await gateway();
    const { id, key } = await newKey(g, 'admin-deletes-it');
    await warm(key, g);
    await remove(g, id, upstream.adminBasic);
    await refused(key, g);
    // her other key is unaffected
    expect((await g.gql(VIEWER, {}, upstream.alice.key)).status).toBe(200);
  });

  it('with a shared Redis: deleted through one gateway, by an administrator or by its owner, refused at once by every other', async () => {
    const [a, b] = [await shared(), await shared()];
    const byAdmin = await newKey(a, 'shared-admin-deletes-it');
    await warm(byAdmin.key, a, b);
    await remove(a, byAdmin.id, upstream.adminBasic);
    await refused(byAdmin.key, b, a);

    const byOwner = await newKey(a, 'shared-owner-deletes-it');
    await warm(byOwner.key, b, a);
    await remove(a, byOwner.id, byOwner.key);
    await refused(byOwner.key, b, a);
    // a process that only has the shared entry
    await refused(byOwner.key, await shared());
    expect((await b.gql(VIEWER, {}, upstream.alice.key)).status).toBe(200);
  });
});
