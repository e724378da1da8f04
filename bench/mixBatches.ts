/**
 * What the live model spends on the realistic mix's batches (not a test):
 *   npx tsx bench/mixBatches.ts [--flushes 60] [--batches 14]
 * The demo shop's model, as `npm start` builds it, takes batches shaped as bench/run.ts's mix
 * sends them (visits of 2 to 8 views of items drawn Zipf(1.0) over the catalogue, three in ten
 * ending with a purchase, 50 events a batch), `--batches` of them between two flushes (14: a
 * tenth of a second at the mix's rate), applied with EmbeddedRecs.applyEvents and re-ranked by
 * EmbeddedRecs.flush in this process. Prints the milliseconds a batch spends in each, the anchors
 * re-ranked a batch and the microseconds a re-rank, and a digest of two lists (the same digest:
 * the same lists, for comparing two versions of the code).
 */
import { createHash } from 'node:crypto';
import { parseArgs } from 'node:util';
import { buildDemo, demoEndsAt, seededRandom, zipf } from '../src/backends/embedded/demo.js';
import { EmbeddedRecs } from '../src/backends/embedded/recs.js';
import type { RecEvent } from '../src/recommender/index.js';
import { DEFAULT_EVENTS_MAX_AGE_DAYS, DEFAULT_NBP_REBUILD_SECONDS } from '../src/config/defaults.js';

const { values: flags } = parseArgs({ options: { flushes: { type: 'string', default: '60' }, batches: { type: 'string', default: '14' } } });
const FLUSHES = Number(flags.flushes);
const BATCHES = Number(flags.batches);
const EVENTS_PER_BATCH = 50;

const { catalog, log } = buildDemo({ endsAt: demoEndsAt() });
const recs = new EmbeddedRecs(catalog, log, { maxAgeDays: DEFAULT_EVENTS_MAX_AGE_DAYS, nextBestRebuildSeconds: DEFAULT_NBP_REBUILD_SECONDS });
const random = seededRandom(7);
// popularity: the catalogue in a shuffled order, rank k drawn with weight 1/k
const ids = [...catalog.values()].map((item) => item.itemId);
for (let i = ids.length - 1; i > 0; i--) {
  const j = Math.floor(random() * (i + 1));
  [ids[i], ids[j]] = [ids[j]!, ids[i]!];
}
const rank = zipf(ids.length, 1.0, random);

function batch(n: number): RecEvent[] {
  const events: RecEvent[] = [];
  for (let visit = 0; events.length < EVENTS_PER_BATCH; visit++) {
    const session = `bench-${n}-${visit}`;
    const viewed: number[] = [];
    for (let views = 2 + Math.floor(random() * 7); views > 0 && events.length < EVENTS_PER_BATCH; views--) {
      const itemId = ids[rank()]!;
      viewed.push(itemId);
      events.push({ kind: 'view', itemId, session, user: null, orderId: null, time: Date.now() });
    }
    if (random() < 0.3 && events.length < EVENTS_PER_BATCH) {
      events.push({ kind: 'purchase', itemId: viewed[Math.floor(random() * viewed.length)]!, session, user: `bench-user-${n % 50}`, orderId: session, time: Date.now() });
    }
  }
  return events;
}

let applyMs = 0;
let flushMs = 0;
let reranked = 0;
for (let flush = 0; flush < FLUSHES; flush++) {
  for (let b = 0; b < BATCHES; b++) {
    const events = batch(flush * BATCHES + b);
    const t0 = performance.now();
    recs.applyEvents(events);
    applyMs += performance.now() - t0;
  }
  const t0 = performance.now();
  reranked += recs.flush()?.reranked ?? 0;
  flushMs += performance.now() - t0;
}
const batches = FLUSHES * BATCHES;
const lists = [recs.recommendNow('POST_BROWSE', ids[0]!), recs.recommendNow('NEXT_BEST_PRODUCT', ids[1]!)];
const digest = createHash('sha256').update(JSON.stringify(lists.map((list) => list.entries))).digest('hex').slice(0, 12);
console.log(
  `${batches} batches of ${EVENTS_PER_BATCH}, a flush every ${BATCHES}: applying ${(applyMs / batches).toFixed(3)} ms a batch, ` +
    `the flush ${(flushMs / batches).toFixed(3)} ms a batch, ${(reranked / batches).toFixed(1)} anchors re-ranked a batch at ` +
    `${((flushMs * 1000) / Math.max(1, reranked)).toFixed(1)} µs each; lists ${digest}`,
);
process.exit(0);
