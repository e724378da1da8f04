/**
 * Recommender benchmark (not a test): npx tsx bench/recommender.ts [--skip-10m] [--only-10m]
 * (node --expose-gc via `node --expose-gc --import tsx bench/recommender.ts` gives cleaner
 * memory figures). Synthetic logs with Zipf popularity and visits of 1 to 15 views; prints build
 * time, memory and in-process lookup latency, and a naive Map<string, number> pair counter on the
 * 1M log as the reference.
 */
import { buildDemo, seededRandom } from '../src/backends/embedded/demo.js';
import { buildModel, KIND_VIEW, Recommender, visits } from '../src/recommender/index.js';
import type { EventLog } from '../src/recommender/index.js';
import { EmbeddedRecs } from '../src/backends/embedded/recs.js';
import { syntheticLog } from './syntheticLog.js';

const gc = (globalThis as { gc?: () => void }).gc ?? ((): void => {});
const mb = (bytes: number): string => `${Math.round(bytes / 1048576)} MB`;


function latencies(recommender: Recommender, ids: () => number, n: number): { p50: number; p99: number; mean: number } {
  const times = new Float64Array(n);
  for (let i = 0; i < 2000; i++) recommender.recommend(i % 2 === 0 ? 'POST_BROWSE' : 'NEXT_BEST_PRODUCT', ids());
  for (let i = 0; i < n; i++) {
    const id = ids();
    const t = process.hrtime.bigint();
    recommender.recommend(i % 2 === 0 ? 'POST_BROWSE' : 'NEXT_BEST_PRODUCT', id);
    times[i] = Number(process.hrtime.bigint() - t) / 1e6;
  }
  times.sort();
  return { p50: times[Math.floor(n * 0.5)]!, p99: times[Math.floor(n * 0.99)]!, mean: times.reduce((a, b) => a + b, 0) / n };
}

/** The reference: every pair of a visit counted in a Map keyed by "a,b", as a first version would. */
function naivePairCount(log: EventLog): { ms: number; pairs: number } {
  const t0 = performance.now();
  const seq = visits(log, KIND_VIEW);
  const counts = new Map<string, number>();
  for (let s = 0; s < seq.count; s++) {
    const items = [...new Set(Array.from(seq.events.subarray(seq.start[s], seq.start[s + 1]), (e) => log.item[e]!))].slice(0, 30);
    for (let i = 0; i < items.length; i++) {
      for (let j = 0; j < items.length; j++) {
        if (i === j) continue;
        const key = `${items[i]},${items[j]}`;
        counts.set(key, (counts.get(key) ?? 0) + 1);
      }
    }
  }
  return { ms: performance.now() - t0, pairs: counts.size };
}

const rows: string[][] = [['case', 'events', 'items', 'build', 'heap after', 'max RSS', 'lookup p50', 'lookup p99', 'lookup mean']];
const ms = (x: number): string => `${x.toFixed(0)} ms`;
const us = (x: number): string => `${(x * 1000).toFixed(1)} µs`;

const only10m = process.argv.includes('--only-10m');
if (!only10m) {
  gc();
  const t0 = performance.now();
  const { catalog, log } = buildDemo();
  const gen = performance.now() - t0;
  const recs = new EmbeddedRecs(catalog, log);
  const ids = [...catalog.values()].map((i) => i.itemId);
  const random = seededRandom(7);
  const l = latencies(new Recommender(recs.model, catalog), () => ids[Math.floor(random() * ids.length)]!, 200_000);
  rows.push([`demo shop, with catalogue (generated in ${ms(gen)})`, String(log.length), String(catalog.size), ms(recs.model.buildMs), mb(process.memoryUsage().heapUsed), mb(process.resourceUsage().maxRSS * 1024), us(l.p50), us(l.p99), us(l.mean)]);
  const t1 = performance.now();
  recs.rebuild();
  rows.push(['demo shop, full rebuild', String(log.length), String(catalog.size), ms(performance.now() - t1), '', '', '', '', '']);
}

let reference = 0;
const cpuMs: string[] = [];
let oneMillionBuild = 0;
const sizes = only10m ? [[10_000_000, 1_000_000]] : process.argv.includes('--skip-10m') ? [[1_000_000, 100_000]] : [[1_000_000, 100_000], [10_000_000, 1_000_000]];
for (const [events, items] of sizes) {
  gc();
  const log = syntheticLog(events!, items!, 42);
  gc();
  const heapBefore = process.memoryUsage().heapUsed + process.memoryUsage().arrayBuffers;
  const cpuBefore = process.cpuUsage();
  const model = buildModel(log, {}, null);
  const cpu = process.cpuUsage(cpuBefore);
  cpuMs.push(`${events! / 1e6}M: ${ms((cpu.user + cpu.system) / 1000)} CPU for ${ms(model.buildMs)} wall`);
  const heapAfter = process.memoryUsage().heapUsed + process.memoryUsage().arrayBuffers;
  const random = seededRandom(9);
  const l = latencies(new Recommender(model, null), () => 1 + Math.floor(random() * items!), 200_000);
  rows.push([`synthetic, ids only`, String(log.length), String(log.items.size), ms(model.buildMs), `${mb(heapAfter)} (+${mb(heapAfter - heapBefore)})`, mb(process.resourceUsage().maxRSS * 1024), us(l.p50), us(l.p99), us(l.mean)]);
  if (events === 1_000_000) {
    oneMillionBuild = model.buildMs;
    gc();
    const naive = naivePairCount(log);
    reference = naive.ms;
    rows.push([`reference: Map<string, number> pair count only (${naive.pairs} pairs)`, String(log.length), String(log.items.size), ms(naive.ms), '', mb(process.resourceUsage().maxRSS * 1024), '', '', '']);
  }
}

const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
for (const [n, row] of rows.entries()) {
  console.log(row.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  '));
  if (n === 0) console.log(widths.map((w) => '-'.repeat(w)).join('  '));
}
if (reference > 0) console.log(`\nfull build (both lists, top-30, popularity) vs reference pair counting on the 1M log: ${(reference / oneMillionBuild).toFixed(1)}x faster`);
console.log(`build CPU time (user + system, all threads; robust to other load on the machine): ${cpuMs.join('; ')}`);
console.log(`load average at the end: ${(await import('node:os')).loadavg().map((l) => l.toFixed(2)).join(' ')}`);
console.log(`node ${process.version}, ${(await import('node:os')).cpus().length} cores`);
