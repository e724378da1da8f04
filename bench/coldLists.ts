/**
 * The shared cache's part of a cold list, two builds side by side (not a test):
 * `npx tsx bench/coldLists.ts --a dist-a --b dist`. Each build's CachingRecsService over an
 * upstream that answers at once with lists of ten records made up front (no HTTP, no parsing),
 * the in-memory cache, every list cold (a millisecond's TTL); 20 lists at a time, each group
 * after a turn of the event loop (the writes behind the answers run there, and are waited for).
 * Rounds alternate A and B; prints the least and the median µs of CPU a list of each: the least
 * of many short rounds holds better than a median on a shared machine.
 */
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { ItemModel, RecommendationListModel, RecsService } from '../src/ports/backend.js';
import type * as CachingModule from '../src/cache/cachingRecs.js';
import type * as MemoryModule from '../src/cache/memory.js';

const { values: flags } = parseArgs({
  options: {
    a: { type: 'string', default: 'dist-a' },
    b: { type: 'string', default: 'dist' },
    rounds: { type: 'string', default: '30' },
    lists: { type: 'string', default: '2000' },
  },
});
const ROOT = path.resolve(import.meta.dirname, '..');
const ANCHORS = 1000;
const CONCURRENCY = 20;

// ten items a list out of 300, so that most of a list's items were stored lately, as in bench scenario 5
const lists: RecommendationListModel[] = Array.from({ length: ANCHORS }, (_, a) => {
  const items: ItemModel[] = Array.from({ length: 10 }, (_, i) => ({ itemId: 100 + ((a * 7 + i) % 300), name: `Item ${a * 7 + i}`, salePrice: 9.99, attributes: [] }));
  return {
    anchorId: a + 1,
    kind: 'NEXT_BEST_PRODUCT',
    entries: items.map((item, i) => ({ rank: i + 1, itemId: item.itemId, score: null, evidence: 0, source: 'UPSTREAM' as const })),
    items,
  };
});
const upstream: RecsService = {
  recommend: (_kind, anchorId) => Promise.resolve(lists[(anchorId - 1) % ANCHORS]!),
  getItems: (ids) => Promise.resolve(ids.map(() => null)),
};

async function load(name: string): Promise<CachingModule.CachingRecsService> {
  const { CachingRecsService } = (await import(path.join(ROOT, name, 'cache/cachingRecs.js'))) as typeof CachingModule;
  const { MemoryCache } = (await import(path.join(ROOT, name, 'cache/memory.js'))) as typeof MemoryModule;
  return new CachingRecsService(upstream, new MemoryCache(), { recsTtlSeconds: 0.001 });
}

let next = 0;
async function round(service: CachingModule.CachingRecsService, count: number): Promise<number> {
  const t0 = process.cpuUsage();
  for (let done = 0; done < count; done += CONCURRENCY) {
    await Promise.all(Array.from({ length: CONCURRENCY }, () => service.recommend('NEXT_BEST_PRODUCT', 1 + (next++ % ANCHORS))));
    await new Promise((resolve) => setImmediate(resolve));
  }
  await service.flushed();
  const used = process.cpuUsage(t0);
  return (used.user + used.system) / count;
}

const builds = [await load(flags.a), await load(flags.b)] as const;
const count = Number(flags.lists);
for (const build of builds) await round(build, count * 10);
const times: [number[], number[]] = [[], []];
for (let i = 0; i < Number(flags.rounds); i++) {
  for (const j of i % 2 === 0 ? [0, 1] : [1, 0]) times[j]!.push(await round(builds[j]!, count));
}
const least = (x: number[]): string => Math.min(...x).toFixed(2);
const median = (x: number[]): string => [...x].sort((p, q) => p - q)[x.length >> 1]!.toFixed(2);
console.log(
  `µs of CPU a cold list, ${flags.rounds} rounds of ${count}: A ${flags.a} least ${least(times[0])}, median ${median(times[0])}; ` +
    `B ${flags.b} least ${least(times[1])}, median ${median(times[1])}`,
);
