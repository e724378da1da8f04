/**
 * What a running gateway holds after months of events (not a test):
 *   node --expose-gc --import tsx bench/uptime.ts [--days 360] [--per-day 5000] [--batch 500]
 * Two embedded recommenders on one catalogue of 2,000 items, with RECS_EVENTS_MAX_AGE_DAYS 90
 * (the default), are sent the same stream: `--per-day` events a day for `--days` days (visits of
 * 5 views, one purchase in ten, sessions and orders named as a store names them), in batches of
 * `--batch`, as a shop's recordEvents calls arrive. One compacts its log when enough of it has
 * aged out (COMPACT_MIN_EVENTS, the gateway's setting); its twin never does (the code before).
 * Each runs in a process of its own (this script again, with --run). Prints, every 60 days of the
 * stream, the events each log holds and the process's heap and array buffers after a full
 * collection, less what it held before the recommender was made; then the compactions' count and the
 * longest a step of one held the event loop (a compaction runs in steps between batches), and
 * the time each took to apply the stream. The lists of both are compared at the end, as served
 * and after a full build of each log (what a restart would serve).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { EmbeddedRecs } from '../src/backends/embedded/recs.js';
import { EventLog } from '../src/recommender/index.js';
import { STREAM_ITEMS, streamCatalog, streamDay } from './shopStream.js';

const { values: flags } = parseArgs({ options: { days: { type: 'string', default: '360' }, 'per-day': { type: 'string', default: '5000' }, batch: { type: 'string', default: '500' }, run: { type: 'string' }, out: { type: 'string' } } });
const DAYS = Number(flags.days);
const PER_DAY = Number(flags['per-day']);
const BATCH = Number(flags.batch);
/**
 * The gateway's defaults, but for next-best-product's time-bound full build (every 30 s with
 * purchases since): its prior statistics would then depend on how fast each run went, and the
 * two runs' lists would differ for that alone. Its share-bound build stays.
 */
const OPTIONS = { maxAgeDays: 90, nextBestRebuildSeconds: 1e9 };
const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error('run with node --expose-gc --import tsx bench/uptime.ts');


/** The heap and the array buffers (the log's columns are SharedArrayBuffers, outside the heap), in MB, after a full collection. */
const memoryMb = (): number => {
  gc();
  gc();
  const { heapUsed, arrayBuffers } = process.memoryUsage();
  return (heapUsed + arrayBuffers) / 1e6;
};

/** Every list the recommender serves, as text. */
const listsOf = (recs: EmbeddedRecs): string[] =>
  Array.from({ length: STREAM_ITEMS }, (_, i) => (['POST_BROWSE', 'NEXT_BEST_PRODUCT'] as const).map((kind) => JSON.stringify(recs.recommendNow(kind, i + 1).entries))).flat();

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * Sends the whole stream to one recommender, which is dropped after: the log's length and the heap
 * every 60 days, its lists at the end.
 */
async function run(compactMinEvents: number | undefined): Promise<{ served: string[]; lists: string[]; rows: [number, number, number][]; ms: number; pauses: number[]; compactions: EmbeddedRecs['compactions'] }> {
  const recs = new EmbeddedRecs(streamCatalog(), new EventLog(), OPTIONS, null, null, compactMinEvents === undefined ? {} : { compactMinEvents });
  const rows: [number, number, number][] = [];
  const pauses: number[] = [];
  let ms = 0;
  for (let day = 0; day < DAYS; day++) {
    const events = streamDay(day, PER_DAY);
    const t0 = performance.now();
    for (let i = 0; i < events.length; i += BATCH) {
      recs.applyEvents(events.slice(i, i + BATCH));
      // what a gateway does between requests: the flush, and a compaction when one is queued
      recs.flush();
      const before = recs.compactions.count;
      await turn();
      if (recs.compactions.count > before) pauses.push(recs.compactions.lastMs);
    }
    ms += performance.now() - t0;
    if ((day + 1) % 60 === 0) rows.push([day + 1, recs.state().events, memoryMb()]);
  }
  // the rebuilds a flush timer handed to a worker meanwhile, done and adopted, then the last flush
  while (recs.settling) await new Promise((resolve) => setTimeout(resolve, 20));
  recs.flush();
  // Next-best-product's lists are a full build's under the prior statistics of its last full
  // build, which the flush makes when quicker than re-ranking: an estimate that counts the log's
  // events, so a compacted log rebuilds at other moments. What a full build of each log serves
  // (a restart) must be the same.
  const served = listsOf(recs);
  recs.rebuild();
  const lists = listsOf(recs);
  await recs.close();
  return { served, lists, rows, ms, pauses, compactions: recs.compactions };
}

type Run = Awaited<ReturnType<typeof run>>;
if (flags.run !== undefined) {
  const base = memoryMb();
  const result = await run(flags.run === 'compacting' ? undefined : Number.POSITIVE_INFINITY);
  result.rows = result.rows.map(([day, events, mb]) => [day, events, mb - base]);
  writeFileSync(flags.out!, JSON.stringify(result));
  process.exit(0);
}
const child = (which: string): Run => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'recs-uptime-'));
  try {
    const out = path.join(dir, 'run.json');
    execFileSync(process.execPath, ['--expose-gc', '--import', 'tsx', new URL(import.meta.url).pathname, '--run', which, '--out', out, '--days', String(DAYS), '--per-day', String(PER_DAY), '--batch', String(BATCH)], { stdio: 'inherit' });
    return JSON.parse(readFileSync(out, 'utf8')) as Run;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
};
console.log(`node ${process.version}; ${DAYS} days of ${PER_DAY} events a day in batches of ${BATCH}; RECS_EVENTS_MAX_AGE_DAYS 90; ${STREAM_ITEMS} items; each run in a process of its own`);
const compacted = child('compacting');
const twin = child('never');
console.log('| day | events held, compacting | heap + array buffers, MB | events held, never compacting (before) | heap + array buffers, MB |');
console.log('|---:|---:|---:|---:|---:|');
compacted.rows.forEach(([day, events, mb], i) => {
  const [, twinEvents, twinMb] = twin.rows[i]!;
  console.log(`| ${day} | ${events.toLocaleString('en')} | ${mb.toFixed(0)} | ${twinEvents.toLocaleString('en')} | ${twinMb.toFixed(0)} |`);
});
console.log(`compactions: ${compacted.compactions.count}, ${compacted.compactions.dropped.toLocaleString('en')} events dropped, the event loop held at most ${Math.max(0, ...compacted.pauses).toFixed(1)} ms at a time`);
console.log(`applying the stream (batches and flushes): ${(compacted.ms / 1000).toFixed(1)} s compacting, ${(twin.ms / 1000).toFixed(1)} s not`);
const differ = (of: 'served' | 'lists', kind: number): number => compacted[of].filter((list, i) => i % 2 === kind && list !== twin[of][i]).length;
console.log(`lists that differ between the two, as served: post-browse ${differ('served', 0)}, next-best-product ${differ('served', 1)} (its prior statistics from full builds made at other moments); after a full build of each log: ${differ('lists', 0)} and ${differ('lists', 1)}, of ${STREAM_ITEMS} each`);
