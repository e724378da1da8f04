/**
 * How long a compaction of a running gateway's log holds the event loop (not a test):
 *   node --import tsx bench/compaction.ts [--days 180] [--per-day 8000] [--step 65536]
 * Two embedded recommenders on one catalogue of 2,000 items (RECS_EVENTS_MAX_AGE_DAYS 90, the
 * default) are sent the same stream, as bench/uptime.ts sends it (visits of 5 views, one purchase
 * in ten), never compacting on their own; then each compacts its log once, half of it aged out:
 * one all at once (LiveModel.compact, as every compaction ran before they ran in steps), the
 * other in steps of `--step` events (COMPACT_STEP_EVENTS, the gateway's), as the gateway runs them
 * between requests. Prints the one's pause, and the other's longest step, its steps' sum and
 * count, and its last step (the one that swaps the log in). The lists both serve after it are
 * compared.
 */
import { parseArgs } from 'node:util';
import { COMPACT_STEP_EVENTS } from '../src/backends/embedded/logCompaction.js';
import { EmbeddedRecs } from '../src/backends/embedded/recs.js';
import { EventLog } from '../src/recommender/index.js';
import type { LiveModel } from '../src/recommender/index.js';
import { STREAM_ITEMS, streamCatalog, streamDay } from './shopStream.js';

const { values: flags } = parseArgs({ options: { days: { type: 'string', default: '180' }, 'per-day': { type: 'string', default: '8000' }, step: { type: 'string', default: String(COMPACT_STEP_EVENTS) } } });
const DAYS = Number(flags.days);
const PER_DAY = Number(flags['per-day']);
const STEP = Number(flags.step);


const options = { maxAgeDays: 90, nextBestRebuildSeconds: 1e9 };
const twins = [0, 1].map(() => new EmbeddedRecs(streamCatalog(), new EventLog(), options, null, null, { compactMinEvents: Number.POSITIVE_INFINITY }));
const t0 = performance.now();
for (let day = 0; day < DAYS; day++) {
  const events = streamDay(day, PER_DAY);
  for (let i = 0; i < events.length; i += 2_000) {
    for (const recs of twins) recs.applyEvents(events.slice(i, i + 2_000));
  }
  for (const recs of twins) recs.flush();
}
const [whole, stepped] = twins.map((recs) => recs.model as LiveModel);
console.log(`node ${process.version}; ${DAYS} days of ${PER_DAY} events a day sent to two recommenders in ${((performance.now() - t0) / 1000).toFixed(1)} s; each holds ${whole!.agedEvents.toLocaleString('en')} events aged out`);

const w0 = performance.now();
const movedAtOnce = whole!.compact()!;
const atOnce = performance.now() - w0;

const underWay = stepped!.beginCompaction()!;
const steps: number[] = [];
for (let done = false; !done; ) {
  const s0 = performance.now();
  done = stepped!.compactStep(underWay, STEP);
  steps.push(performance.now() - s0);
}
const f0 = performance.now();
const moved = stepped!.finishCompaction(underWay)!;
const finish = performance.now() - f0;
const sum = steps.reduce((a, b) => a + b, 0) + finish;

console.log(`all at once: ${movedAtOnce.kept.toLocaleString('en')} of ${movedAtOnce.before.toLocaleString('en')} events kept, the event loop held ${atOnce.toFixed(1)} ms`);
console.log(`in steps of ${STEP.toLocaleString('en')}: ${moved.kept.toLocaleString('en')} of ${moved.before.toLocaleString('en')} kept, ${steps.length + 1} steps, the longest ${Math.max(finish, ...steps).toFixed(1)} ms, the last (the swap) ${finish.toFixed(1)} ms; ${sum.toFixed(1)} ms in all`);
let differ = 0;
for (let id = 1; id <= STREAM_ITEMS; id++) {
  for (const kind of ['POST_BROWSE', 'NEXT_BEST_PRODUCT'] as const) {
    if (JSON.stringify(twins[0]!.recommendNow(kind, id).entries) !== JSON.stringify(twins[1]!.recommendNow(kind, id).entries)) differ++;
  }
}
console.log(`lists that differ between the two: ${differ} of ${2 * STREAM_ITEMS}`);
for (const recs of twins) await recs.close();
