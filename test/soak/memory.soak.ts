import { readdirSync } from 'node:fs';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OwnRedis } from '../helpers/redis.js';
import { testPrefix } from '../helpers/redis.js';
import { cacheReady, report, sleep, startRestGateway, startUpstream, type RestGateway, type Upstream } from '../helpers/harness.js';
import { loadCachedPath } from '../e2e/load.js';

// The soak: rounds of load on the cached path of an in-process gateway while its Redis is killed,
// restarted, frozen and thawed; heap after GC and open file descriptors are sampled after each.

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const ROUNDS = Math.max(7, Number(process.env.SOAK_ROUNDS ?? 12));
const ROUND_SECONDS = Number(process.env.SOAK_ROUND_SECONDS ?? 10);

let upstream: Upstream;
let own: OwnRedis;
let gw: RestGateway;
beforeAll(async () => {
  upstream = await startUpstream();
  own = await OwnRedis.start();
  gw = await startRestGateway({
    keysUrl: upstream.url,
    recsUrl: upstream.url,
    recsApiKey: upstream.gatewayKey,
    env: { REDIS_URL: own.url, REDIS_KEY_PREFIX: testPrefix() },
  });
  await cacheReady(gw.cache);
});
afterAll(async () => {
  await gw?.stop();
  await own?.stop();
  await upstream?.stop();
});

function settledHeap(): number {
  for (let i = 0; i < 3; i++) gc();
  return process.memoryUsage().heapUsed;
}

const openFds = (): number => readdirSync('/proc/self/fd').length;

describe('soak', () => {
  it(`${ROUNDS} rounds of ${ROUND_SECONDS} s of load while Redis goes up and down: heap and descriptors flat`, async () => {
    const samples: { round: number; fault: string; heapMiB: number; fds: number; reqPerSec: number }[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const fault = ['none', 'killed', 'none', 'frozen'][round % 4]!;
      const load = loadCachedPath(gw.url, upstream.alice.key, 20, ROUND_SECONDS);
      if (fault !== 'none') {
        await sleep((ROUND_SECONDS * 1000) / 3);
        if (fault === 'killed') await own.stop();
        else own.freeze();
        await sleep((ROUND_SECONDS * 1000) / 3);
        if (fault === 'killed') await own.start();
        else own.thaw();
      }
      const result = await load;
      expect(result.non2xx, `round ${round} (${fault})`).toBe(0);
      expect(result.errors).toBe(0);
      expect(result.mismatches).toBe(0);
      await sleep(1500); // let reconnection and keep-alive sockets settle before sampling
      samples.push({ round, fault, heapMiB: settledHeap() / 2 ** 20, fds: openFds(), reqPerSec: result.reqPerSec });
      report(`soak round ${round}`, samples.at(-1)!);
    }
    // the first round warms up (JIT, pools, caches); one sample swings by a few MiB, so the mean
    // of the three rounds after it is compared with the mean of the last three
    const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;
    const base = { heapMiB: mean(samples.slice(1, 4).map((s) => s.heapMiB)), fds: Math.max(...samples.slice(1, 4).map((s) => s.fds)) };
    const last = { heapMiB: mean(samples.slice(-3).map((s) => s.heapMiB)), fds: samples.at(-1)!.fds };
    const growth = (last.heapMiB - base.heapMiB) / base.heapMiB;
    report('soak summary', {
      rounds: ROUNDS, roundSeconds: ROUND_SECONDS, heapBaseMiB: base.heapMiB, heapLastMiB: last.heapMiB,
      heapGrowthPct: growth * 100, fdsBase: base.fds, fdsLast: last.fds, fdsMax: Math.max(...samples.slice(1).map((s) => s.fds)),
    });
    expect(growth).toBeLessThan(0.1);
    expect(last.fds).toBeLessThanOrEqual(base.fds + 5);
  });
});
