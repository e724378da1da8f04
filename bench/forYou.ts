/**
 * recommendedForYou's lookup against an anchored one (not a test): npx tsx bench/forYou.ts [--shoppers n]
 * On the demo shop, shoppers with 10 (and 30) recent events, some bought, each asked for 10 items unfiltered and with
 * a filter, against the anchored list of their latest item; and the time to fill the shopper index from the log, as
 * the first list after a (re)load does. Prints µs per lookup.
 */
import { parseArgs } from 'node:util';
import { buildDemo, seededRandom } from '../src/backends/embedded/demo.js';
import { EmbeddedRecs } from '../src/backends/embedded/recs.js';
import { toRecommendationFilter } from '../src/model/recommendationFilter.js';
import type { ShopperModel } from '../src/ports/backend.js';
import type { RecEvent } from '../src/recommender/index.js';
import { ShopperHistories } from '../src/recommender/index.js';

const { values } = parseArgs({ options: { shoppers: { type: 'string', default: '2000' }, rounds: { type: 'string', default: '5' } } });
const SHOPPERS = Number(values.shoppers);
const ROUNDS = Number(values.rounds);

const { catalog, log } = buildDemo();
const recs = new EmbeddedRecs(catalog, log);
const items = [...catalog.values()].map((item) => item.itemId);
const random = seededRandom(45);
let time = log.time.subarray(0, log.length).reduce((a, b) => Math.max(a, b), -Infinity);
const latest = new Map<string, number>();
const events = (n: number, tag: string): RecEvent[] => {
  const out: RecEvent[] = [];
  for (let s = 0; s < SHOPPERS; s++) {
    for (let i = 0; i < n; i++) {
      const itemId = items[Math.floor(random() * items.length)]!;
      const bought = random() < 0.1;
      out.push({ kind: bought ? 'purchase' : 'view', session: `${tag}${s}`, user: null, itemId, time: (time += 10), orderId: bought ? `${tag}o${s}` : null });
      latest.set(`${tag}${s}`, itemId);
    }
  }
  return out;
};
recs.applyEvents([...events(10, 'ten-'), ...events(30, 'thirty-')]);
recs.flush();
const filter = toRecommendationFilter({ inStockOnly: true, maxPrice: 100 });

function measure(label: string, lookup: (s: number) => unknown): void {
  const samples: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const t0 = performance.now();
    for (let s = 0; s < SHOPPERS; s++) lookup(s);
    samples.push(((performance.now() - t0) * 1000) / SHOPPERS);
  }
  samples.sort((a, b) => a - b);
  console.log(`${label.padEnd(44)} ${samples[Math.floor(samples.length / 2)]!.toFixed(1).padStart(8)} µs a lookup (median of ${ROUNDS} rounds of ${SHOPPERS})`);
}

const shopper = (tag: string, s: number): ShopperModel => ({ sessionId: `${tag}${s}`, userId: null });
measure('anchored list of the latest item', (s) => recs.recommendNow('POST_BROWSE', latest.get(`ten-${s}`)!));
measure('for you, 10 events', (s) => recs.forYouNow(shopper('ten-', s), 10));
measure('for you, 30 events', (s) => recs.forYouNow(shopper('thirty-', s), 10));
measure('for you, 30 events, first 50', (s) => recs.forYouNow(shopper('thirty-', s), 50));
measure('for you, 10 events, inStockOnly and maxPrice', (s) => recs.forYouNow(shopper('ten-', s), 10, filter));
measure('for you, a shopper without events', (s) => recs.forYouNow(shopper('nobody-', s), 10));
const t0 = performance.now();
const index = ShopperHistories.fromLog(log, -Infinity);
console.log(`shopper index from the log: ${log.length} events, ${index.size} shoppers in ${(performance.now() - t0).toFixed(1)} ms`);
