/**
 * What a start reads from a store holding years of events (not a test):
 *   npx tsx bench/windowedLoad.ts [--old 1000000] [--recent 200000] [--runs 3]
 * Fills a SQLite store (a temporary DATA_DIR) with 2,000 item records, `--old` events 100 to
 * 400 days old and `--recent` events of the last 30 days (visits of 5 views, one purchase in ten),
 * then opens the embedded recommender on it as a start does (openEmbeddedRecs: read and built in
 * its load worker), `--runs` times, with RECS_EVENTS_MAX_AGE_DAYS 90 (the default). Prints for
 * each open the ms to ready, the events in the model's log, and this process's heap after a full
 * collection (run with --expose-gc, as `npm run` does not: `node --expose-gc --import tsx ...`).
 * Then prunes the store (recs-gateway prune events, as runPrune) and prints its line. Run it on
 * the code before a change and after (BENCHMARKS.md, "the eighteenth pass").
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { RecsStore } from '../src/backends/embedded/store.js';
import { openEmbeddedRecs } from '../src/backends/embedded/openRecs.js';
import { parseItemRecord } from '../src/model/itemRecord.js';
import type { RecEvent } from '../src/recommender/index.js';
import { runPrune } from '../src/cli/pruneCommand.js';

const { values: flags } = parseArgs({ options: { old: { type: 'string', default: '1000000' }, recent: { type: 'string', default: '200000' }, runs: { type: 'string', default: '3' } } });
const DAY = 86_400_000;
const ITEMS = 2_000;

/** `n` events between `fromDaysAgo` and `toDaysAgo` before now, in time order; sessions named by `tag`. */
function events(n: number, fromDaysAgo: number, toDaysAgo: number, tag: string, seed: number): RecEvent[] {
  let s = seed;
  const random = (): number => ((s = (s * 1103515245 + 12345) % 2147483648) / 2147483648);
  const start = Date.now() - fromDaysAgo * DAY;
  const step = ((fromDaysAgo - toDaysAgo) * DAY) / n;
  return Array.from({ length: n }, (_, i) => {
    const visit = Math.floor(i / 5);
    const purchase = i % 10 === 9;
    return {
      kind: purchase ? 'purchase' : 'view', itemId: 1 + Math.floor(ITEMS * random() * random()), time: Math.floor(start + i * step),
      session: `${tag}-${visit}`, user: purchase ? `u-${visit % 20_000}` : null, orderId: purchase ? `${tag}-o-${visit}` : null,
    };
  });
}

const dir = mkdtempSync(path.join(os.tmpdir(), 'recs-windowed-'));
try {
  const store = RecsStore.open(dir);
  const catalog = await store.beginImport('catalog', 'bench', 'bench', 'catalog');
  await catalog.addItems(Array.from({ length: ITEMS }, (_, i) => parseItemRecord({ itemId: i + 1, name: `item ${i + 1}`, categoryPath: `Dept/Cat${i % 40}` })));
  await catalog.finish(ITEMS, 0);
  const session = await store.beginImport('events', 'bench', 'bench', 'events');
  const old = Number(flags.old);
  const recent = Number(flags.recent);
  for (let done = 0; done < old; done += 100_000) await session.addEvents(events(Math.min(100_000, old - done), 400 - (300 * done) / old, 400 - (300 * Math.min(old, done + 100_000)) / old, `old${done}`, 1 + done));
  await session.addEvents(events(recent, 30, 0, 'recent', 7));
  await session.finish(old + recent, 0);
  await store.close();
  console.log(`store: ${ITEMS} records, ${old} events 100 to 400 days old, ${recent} of the last 30 days (RECS_EVENTS_MAX_AGE_DAYS 90)`);
  console.log('| run | ready ms | events in the model\'s log | heap after GC, MB |');
  console.log('|---:|---:|---:|---:|');
  for (let run = 1; run <= Number(flags.runs); run++) {
    const t0 = performance.now();
    const recs = await openEmbeddedRecs({ dataDir: dir, followIntervalMs: 0, model: { maxAgeDays: 90 } });
    const ms = performance.now() - t0;
    (globalThis as { gc?: () => void }).gc?.();
    const heap = process.memoryUsage();
    console.log(`| ${run} | ${Math.round(ms)} | ${recs.state().events} | ${((heap.heapUsed + heap.arrayBuffers) / 1e6).toFixed(0)} |`);
    await recs.close();
  }
  await runPrune(['events'], { dataDir: dir, maxAgeDays: 90, stdout: process.stdout, stderr: process.stderr });
} finally {
  rmSync(dir, { recursive: true, force: true });
}
