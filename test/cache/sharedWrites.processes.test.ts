import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { drainPrefix, REDIS_URL, testPrefix } from '../helpers/redis.js';
import { gql, startServe, type ServeProcess } from '../helpers/processes.js';
import { cacheReady, restServeEnv, startRestGateway, startUpstream, type RestGateway, type Upstream } from '../helpers/harness.js';

/**
 * REST mode, two gateways on one Redis in front of one upstream (a gateway process on its
 * embedded backend): a write forwarded through either is followed by both, the answer each kept
 * in its response cache included, well within the lists' and records' TTLs (300 s): the writer
 * tells the others on Redis (src/cache/changeFeed.ts). One gateway runs in this process, the
 * other is `recs-gateway serve` in its own: every hop is real HTTP or real Redis.
 */
// An item the demo shop has few views of: a few dozen visits outweigh its history
const A = 31000124;
const B = 31001651;
const RECORD = 'mutation($events: [EventInput!]!) { recordEvents(events: $events) { accepted } }';
const UPSERT = 'mutation($items: [ItemInput!]!) { upsertItems(items: $items) { upserted } }';
const BROWSE = `{ postBrowsedProducts(itemId: ${A}) { itemId } }`;
const NAME = `{ item(itemId: ${B}) { name } }`;

/** Asks until `done` holds, 200 ms apart, at most `tries` times; the last answer. */
async function askUntil<T>(ask: () => Promise<T>, done: (answer: T) => boolean, tries = 50): Promise<T> {
  let answer = await ask();
  for (let i = 1; i < tries && !done(answer); i++) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    answer = await ask();
  }
  return answer;
}

describe('REST mode: a write through one gateway is followed by every gateway on the same Redis', () => {
  let upstream: Upstream;
  let here: RestGateway;
  let there: ServeProcess;
  const prefix = testPrefix();

  beforeAll(async () => {
    upstream = await startUpstream();
    here = await startRestGateway({ keysUrl: upstream.url, recsUrl: upstream.url, recsApiKey: upstream.gatewayKey, env: { REDIS_URL, REDIS_KEY_PREFIX: prefix }, redisCommandTimeoutMs: 10_000 });
    await cacheReady(here.cache);
    there = await startServe({ ...restServeEnv(upstream, prefix), DATA_DIR: '/nonexistent' });
  }, 120_000);
  afterAll(async () => {
    await here?.stop().catch(() => undefined);
    await there?.stop().catch(() => undefined);
    await upstream?.stop();
    await drainPrefix(prefix);
  });

  const browseThere = async (): Promise<number[]> => {
    const answer = await gql(there.url, BROWSE, {}, { authorization: upstream.alice.key });
    expect(answer.body.errors).toBeUndefined();
    return (answer.body.data as unknown as { postBrowsedProducts: { itemId: number }[] }).postBrowsedProducts.map((item) => item.itemId);
  };

  it('events through this one: the other process answers the new list, its response cache notwithstanding', async () => {
    const before = await browseThere();
    expect(before).not.toContain(B);
    // the same query again: from that gateway's response cache (and its lists from Redis)
    expect(await browseThere()).toEqual(before);
    const events = Array.from({ length: 40 }, (_, i) => [
      { kind: 'VIEW', itemId: A, sessionId: `shared-${i}`, time: new Date(Date.now() - 60_000).toISOString() },
      { kind: 'VIEW', itemId: B, sessionId: `shared-${i}` },
    ]).flat();
    const recorded = await here.gql(RECORD, { events }, upstream.adminBasic);
    expect(recorded.body).toEqual({ data: { recordEvents: { accepted: 80 } } });
    // the writer itself follows at once
    const mine = (await here.gql(BROWSE, {}, upstream.alice.key)).body.data as { postBrowsedProducts: { itemId: number }[] };
    expect(mine.postBrowsedProducts[0]).toEqual({ itemId: B });
    const after = await askUntil(browseThere, (list) => list[0] === B);
    expect(after[0]).toBe(B);
  }, 60_000);

  it('a record written through the other process: this one answers it', async () => {
    const name = async (): Promise<unknown> => (await here.gql(NAME, {}, upstream.alice.key)).body.data;
    const before = await name();
    expect(await name()).toEqual(before);
    const upserted = await gql(there.url, UPSERT, { items: [{ itemId: B, name: 'Renamed through the other gateway' }] }, { authorization: upstream.adminBasic });
    expect(upserted.body).toEqual({ data: { upsertItems: { upserted: 1 } } });
    const after = await askUntil(name, (answer) => JSON.stringify(answer).includes('Renamed'));
    expect(after).toEqual({ item: { name: 'Renamed through the other gateway' } });
  }, 60_000);
});
