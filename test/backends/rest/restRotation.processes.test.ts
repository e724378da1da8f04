import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { drainPrefix, REDIS_URL, testPrefix } from '../../helpers/redis.js';
import { cacheReady, PHONE, startRestGateway, startUpstream, type RestGateway, type Upstream } from '../../helpers/harness.js';

/**
 * REST mode, two fronts on one Redis in front of a recs-gateway key service: a key rotated with no
 * grace through one stops at once on both, the deletion's marks reused; with a grace it works on.
 */
const ITEM = `{ item(itemId: ${PHONE}) { itemId } }`;
const ROTATE = 'mutation($id: ID!, $grace: Int) { rotateApiKey(id: $id, gracePeriodSeconds: $grace) { id key } }';

describe('REST mode: rotating a key through one of two fronts sharing Redis', () => {
  let upstream: Upstream;
  const fronts: RestGateway[] = [];
  const prefix = testPrefix();

  beforeAll(async () => {
    upstream = await startUpstream();
    for (let i = 0; i < 2; i++) {
      const front = await startRestGateway({
        keysUrl: upstream.url, recsUrl: upstream.url, recsApiKey: upstream.gatewayKey,
        env: { REDIS_URL, REDIS_KEY_PREFIX: prefix }, redisCommandTimeoutMs: 10_000,
      });
      fronts.push(front);
      await cacheReady(front.cache);
    }
  }, 120_000);
  afterAll(async () => {
    for (const front of fronts) await front.stop();
    await upstream?.stop();
    await drainPrefix(prefix);
  });

  async function newKey(name: string): Promise<{ id: string; key: string }> {
    const created = await fronts[0]!.gql(`mutation { createApiKey(input: { name: "${name}" }) { id key } }`, {}, upstream.alice.basic);
    expect(created.body.errors).toBeUndefined();
    return (created.body.data as { createApiKey: { id: string; key: string } }).createApiKey;
  }

  const status = async (front: RestGateway, key: string): Promise<number> => (await front.gql(ITEM, {}, key)).status;

  it('stops the old value at once on both fronts with no grace, and the new one works on both', async () => {
    const { id, key } = await newKey('front-rotate-now');
    for (const front of fronts) for (let i = 0; i < 2; i++) expect(await status(front, key)).toBe(200);
    const rotated = await fronts[0]!.gql(ROTATE, { id, grace: 0 }, upstream.alice.basic);
    expect(rotated.body.errors).toBeUndefined();
    const fresh = (rotated.body.data as { rotateApiKey: { key: string } }).rotateApiKey.key;
    for (const front of [fronts[1]!, fronts[0]!]) {
      expect(await status(front, key)).toBe(401);
      expect(await status(front, fresh)).toBe(200);
    }
  });

  it('keeps the old value working on both fronts during a grace period', async () => {
    const { id, key } = await newKey('front-rotate-later');
    for (const front of fronts) expect(await status(front, key)).toBe(200);
    const rotated = await fronts[1]!.gql(ROTATE, { id, grace: 3600 }, upstream.alice.basic);
    const fresh = (rotated.body.data as { rotateApiKey: { key: string } }).rotateApiKey.key;
    for (const front of fronts) {
      expect(await status(front, key)).toBe(200);
      expect(await status(front, fresh)).toBe(200);
    }
  });
});
