/**
 * The live recommender's incremental update (not a test):
 *   node --expose-gc --import tsx bench/live.ts [--data ../shared/data] [--skip-1m]
 * For the demo shop, Diginetica (views-sample + purchases, from --data) and a synthetic 1M-event
 * log: a model built from the first 80% of the events, the rest applied with EmbeddedRecs.applyEvents
 * in batches of 5,000 and then of 50. Prints the cost per event applied, against the full build of
 * the whole log measured in the same run (the reference: what a rebuild per batch would cost); the
 * memory the live path holds per million events; and recommendNow's latency on the built model
 * and on the live one (re-ranked anchors served from overrides).
 */
import { join } from 'node:path';
import { generateDemo, seededRandom } from '../src/backends/embedded/demo.js';
import { buildModel, Catalog, EventLog, KIND_PURCHASE } from '../src/recommender/index.js';
import type { ModelOptions, RecEvent } from '../src/recommender/index.js';
import { presetFormat } from '../src/cli/eventFormats.js';
import { readEvents } from '../src/cli/importEvents.js';
import { EmbeddedRecs } from '../src/backends/embedded/recs.js';
import { syntheticEvents } from './syntheticLog.js';

const gc = (globalThis as { gc?: () => void }).gc ?? ((): void => {});
const argAfter = (flag: string): string | undefined => {
  const i = process.argv.indexOf(flag);
  return i >= 0 ? process.argv[i + 1] : undefined;
};
const dataDir = argAfter('--data') ?? join(import.meta.dirname, '..', '..', 'shared', 'data');
const heap = (): number => {
  gc();
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
};

interface Dataset {
  name: string;
  events: RecEvent[];
  catalog: Catalog;
}

function demo(): Dataset {
  const { records, events } = generateDemo();
  const catalog = new Catalog();
  catalog.addRecords(records);
  return { name: 'demo shop', events, catalog };
}

/** A catalogue of bare records for every item of a log of ids (no categories, no families). */
function catalogOfIds(events: readonly RecEvent[]): Catalog {
  const catalog = new Catalog();
  catalog.addRecords([...new Set(events.map((e) => e.itemId))].map((itemId) => ({ itemId, name: `item ${itemId}` })));
  return catalog;
}

async function diginetica(): Promise<Dataset> {
  const events: RecEvent[] = [];
  await readEvents(join(dataDir, 'diginetica', 'views-sample.csv'), presetFormat('diginetica-views'), (e) => { events.push(e); });
  await readEvents(join(dataDir, 'diginetica', 'purchases.csv'), presetFormat('diginetica-purchases'), (e) => { events.push(e); });
  // As a shop would send them: in time order (stable: the files' order breaks ties).
  events.sort((a, b) => a.time - b.time);
  return { name: 'Diginetica', events, catalog: catalogOfIds(events) };
}

function synthetic(n: number): Dataset {
  const events: RecEvent[] = [];
  syntheticEvents(n, n / 10, 42, (kind, itemId, session, user, order, time) => events.push({
    kind: kind === KIND_PURCHASE ? 'purchase' : 'view', itemId, time,
    session: `s${session}`, user: `u${user}`, orderId: order >= 0 ? `o${order}` : null,
  }));
  return { name: `synthetic ${n / 1e6}M`, events, catalog: catalogOfIds(events) };
}

function percentile(sorted: Float64Array, p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;
}

/** recommendNow over random catalogued anchors, both kinds alternately: p50, p99 and mean in µs. */
function lookups(recs: EmbeddedRecs, ids: number[], n: number): { p50: number; p99: number; mean: number } {
  const random = seededRandom(11);
  for (let i = 0; i < 5_000; i++) recs.recommendNow(i % 2 === 0 ? 'POST_BROWSE' : 'NEXT_BEST_PRODUCT', ids[Math.floor(random() * ids.length)]!);
  const times = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const id = ids[Math.floor(random() * ids.length)]!;
    const t = process.hrtime.bigint();
    recs.recommendNow(i % 2 === 0 ? 'POST_BROWSE' : 'NEXT_BEST_PRODUCT', id);
    times[i] = Number(process.hrtime.bigint() - t) / 1e3;
  }
  const mean = times.reduce((a, b) => a + b, 0) / n;
  times.sort();
  return { p50: percentile(times, 0.5), p99: percentile(times, 0.99), mean };
}

const rows: string[][] = [[
  'log', 'events', 'full build', 'live state', 'batch', 'flush every', 'batches', 'apply/event', 'flush p50', 'flush max', 're-ranked/flush', 'rebuilt/flush', 'total/event', 'total vs rebuild/batch',
]];
const lookupRows: string[][] = [['log', 'model', 'overrides', 'p50 µs', 'p99 µs', 'mean µs']];
const fmt = (x: number, digits = 1): string => x.toFixed(digits);
/**
 * CPU time (user + system) of f, in ms: the machine is shared (the load average is printed at
 * the end), and CPU time moves much less with other work than wall time does.
 */
function cpu<T>(f: () => T): [T, number] {
  const before = process.cpuUsage();
  const value = f();
  const used = process.cpuUsage(before);
  return [value, (used.user + used.system) / 1000];
}
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

function run(data: Dataset, options: ModelOptions): void {
  const { events } = data;
  const base = Math.floor(events.length * 0.8);
  // The reference: a full build over every event, as a rebuild per batch would do it.
  const fullMs = ((): number => {
    const fullLog = new EventLog();
    for (const e of events) fullLog.add(e);
    return cpu(() => buildModel(fullLog, options, data.catalog))[1];
  })();

  const log = new EventLog();
  for (const e of events.slice(0, base)) log.add(e);
  const recs = new EmbeddedRecs(data.catalog, log, options);
  const ids = [...data.catalog.values()].map((i) => i.itemId);
  const built = lookups(recs, ids, 100_000);
  lookupRows.push([data.name, 'built', '0', fmt(built.p50, 2), fmt(built.p99, 2), fmt(built.mean, 2)]);
  const before = heap();
  const [, initMs] = cpu(() => recs.applyEvents([]));
  const liveBytes = heap() - before;
  const state = `${fmt(liveBytes / 1048576, 0)} MB (${fmt(liveBytes / 1048576 / (base / 1e6), 0)} MB/1M) in ${fmt(initMs, 0)} ms`;
  let at = base;
  const tail = events.length - base;
  // Batches of 5,000 each flushed; batches of 50 flushed each (a trickle) and every 40 (20,000
  // events a second, with the 100 ms flush delay).
  for (const [size, every, share] of [[5_000, 1, 0.4], [50, 1, 0.02], [50, 40, 0.2]] as const) {
    const end = Math.min(events.length, at + Math.max(size * every, Math.floor(tail * share)));
    let applyMs = 0;
    let applied = 0;
    let batches = 0;
    const flushes: number[] = [];
    let reranked = 0;
    let rebuilt = 0;
    while (at < end) {
      const batch = events.slice(at, Math.min(at + size, end));
      applyMs += cpu(() => recs.applyEvents(batch))[1];
      applied += batch.length;
      at += batch.length;
      if (++batches % every === 0 || at >= end) {
        const [f, ms] = cpu(() => recs.flush()!);
        flushes.push(ms);
        reranked += f.reranked;
        rebuilt += f.rebuilt.length;
      }
    }
    const flushMs = flushes.reduce((a, b) => a + b, 0);
    const total = applyMs + flushMs;
    rows.push([
      data.name, String(events.length), `${fmt(fullMs, 0)} ms`, state, String(size), String(every), String(batches),
      `${fmt((applyMs / applied) * 1000)} µs`, `${fmt(median(flushes))} ms`, `${fmt(Math.max(...flushes))} ms`, fmt(reranked / flushes.length, 0),
      fmt(rebuilt / flushes.length), `${fmt((total / applied) * 1000)} µs`, `${fmt(fullMs / (total / batches))}x faster`,
    ]);
  }
  // Lookups with anchors marked by a batch and not flushed: the first lookup of each re-ranks it.
  recs.applyEvents(events.slice(Math.max(base, events.length - 5_000)));
  const dirty = lookups(recs, ids, 100_000);
  lookupRows.push([data.name, 'live, a batch of 5,000 not flushed', String(recs.model.postBrowse.overrides?.size ?? 0), fmt(dirty.p50, 2), fmt(dirty.p99, 2), fmt(dirty.mean, 2)]);
  recs.flush();
  const live = lookups(recs, ids, 100_000);
  lookupRows.push([data.name, 'live, flushed', String(recs.model.postBrowse.overrides?.size ?? 0), fmt(live.p50, 2), fmt(live.p99, 2), fmt(live.mean, 2)]);
}

const options: ModelOptions = { maxAgeDays: 90 };
run(demo(), options);
run(await diginetica(), options);
// The synthetic log spans about 3 years: without a max age, so that every event is in the live state.
if (!process.argv.includes('--skip-1m')) run(synthetic(1_000_000), {});

const print = (table: string[][]): void => {
  const widths = table[0]!.map((_, i) => Math.max(...table.map((r) => r[i]!.length)));
  for (const [n, row] of table.entries()) {
    console.log(row.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  '));
    if (n === 0) console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  }
};
console.log('applyEvents, 80% of the log built, the rest applied (RECS_EVENTS_MAX_AGE_DAYS 90, none for the synthetic log); times are CPU times:');
print(rows);
console.log('\nrecommendNow, random catalogued anchors, both kinds alternately:');
print(lookupRows);
console.log(`\nload average at the end: ${(await import('node:os')).loadavg().map((l) => l.toFixed(2)).join(' ')} (2 cores shared with other work)`);
console.log(`node ${process.version}`);
