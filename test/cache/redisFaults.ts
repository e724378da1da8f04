import { expect } from 'vitest';
import { quantile, sleep, TimedCache, type RestGateway, type TimedResponse } from '../helpers/harness.js';

export const ITEM = 'query($id: ItemId!) { item(itemId: $id) { itemId name } }';

/** An answer that is a success in every respect: 200, no errors, the item asked for. */
export function expectServed(answer: TimedResponse, id: number): void {
  expect(answer.status).toBe(200);
  expect(answer.body.errors, JSON.stringify(answer.body.errors)).toBeUndefined();
  expect((answer.body.data?.item as { itemId?: number } | null)?.itemId).toBe(id);
}

export interface Comparison {
  /** p50 and p99 of the faulty gateway's cache calls (getMany, setMany): the latency Redis adds. */
  cacheCallP50: number;
  cacheCallP99: number;
  cacheCallMax: number;
  /**
   * p50 and p99 of the baseline gateway's cache calls on a healthy Redis, timed alike in the same
   * run (NaN unless its cache is a TimedCache): how much the machine itself stretches a cache call.
   */
  referenceCacheCallP50: number;
  referenceCacheCallP99: number;
  baselineP50: number;
  baselineP99: number;
  faultyP50: number;
  faultyP99: number;
  /** faultyP99 - baselineP99: what the fault adds at the 99th percentile. */
  addedP99: number;
  slowOver50ms: number;
}

/**
 * Sends `n` requests to each gateway (`faulty` with a TimedCache), alternating so machine load falls on both alike, each for an
 * item neither has cached: both go upstream every time, and the difference is what the cache's
 * trouble costs a request.
 */
export async function compareLatency(
  baseline: RestGateway, faulty: RestGateway, ids: number[], authorization: string, n: number,
): Promise<Comparison> {
  const cache = faulty.cache as TimedCache;
  cache.times.length = 0;
  const reference = baseline.cache instanceof TimedCache ? baseline.cache : undefined;
  if (reference) reference.times.length = 0;
  const base: number[] = [];
  const fault: number[] = [];
  for (let i = 0; i < n; i++) {
    const [a, b] = [ids.pop()!, ids.pop()!];
    const one = await baseline.gql(ITEM, { id: a }, authorization);
    const two = await faulty.gql(ITEM, { id: b }, authorization);
    expectServed(one, a);
    expectServed(two, b);
    base.push(one.ms);
    fault.push(two.ms);
  }
  return {
    cacheCallP50: quantile(cache.times, 0.5),
    cacheCallP99: quantile(cache.times, 0.99),
    cacheCallMax: Math.max(...cache.times),
    referenceCacheCallP50: reference ? quantile(reference.times, 0.5) : NaN,
    referenceCacheCallP99: reference ? quantile(reference.times, 0.99) : NaN,
    baselineP50: quantile(base, 0.5),
    baselineP99: quantile(base, 0.99),
    faultyP50: quantile(fault, 0.5),
    faultyP99: quantile(fault, 0.99),
    addedP99: quantile(fault, 0.99) - quantile(base, 0.99),
    slowOver50ms: fault.filter((ms) => ms > 50).length,
  };
}

/**
 * Requests one item every 25 ms until the gateway's cache reports a hit; resolves with the time
 * from the call to the first hit (every answer must be a success meanwhile).
 */
export async function timeToFirstHit(gw: RestGateway, id: number, authorization: string, limitMs = 10_000): Promise<number> {
  const started = performance.now();
  const hits = gw.cache.stats.hits;
  while (gw.cache.stats.hits === hits) {
    if (performance.now() - started > limitMs) throw new Error('no cache hit in time');
    expectServed(await gw.gql(ITEM, { id }, authorization), id);
    await sleep(25);
  }
  return performance.now() - started;
}

/** Keeps `workers` clients requesting items from `ids` in a loop until stopped; counts failures. */
export function backgroundTraffic(gw: RestGateway, ids: number[], authorization: string, workers = 4) {
  let running = true;
  const failures: string[] = [];
  let served = 0;
  const loops = Array.from({ length: workers }, async (_, w) => {
    for (let i = w; running; i++) {
      const id = ids[i % ids.length]!;
      const answer = await gw.gql(ITEM, { id }, authorization).catch((error: unknown) => error as Error);
      if (answer instanceof Error) failures.push(answer.message);
      else if (answer.status !== 200 || answer.body.errors) failures.push(JSON.stringify(answer.body));
      else served++;
      await sleep(5);
    }
  });
  return {
    get served() {
      return served;
    },
    failures,
    async stop(): Promise<void> {
      running = false;
      await Promise.all(loops);
    },
  };
}
