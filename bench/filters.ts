/**
 * Filtered lookups against unfiltered ones (not a test): npx tsx bench/filters.ts [--rounds n]
 * (`npm run bench -- --only filters` runs it too). On the demo shop, the same anchors looked up
 * with each filter and without, in alternating rounds so that a shared machine's drift falls on
 * both alike; each filter is checked from its client form per lookup, as a request does. Prints
 * the cost of each against the unfiltered one (issue 45's target: at most 2x), and a last line
 * `filters-json {...}` for bench/run.ts.
 */
import { parseArgs } from 'node:util';
import { buildDemo, seededRandom } from '../src/backends/embedded/demo.js';
import { toRecommendationFilter } from '../src/model/recommendationFilter.js';
import type { RecommendationFilterInput } from '../src/model/recommendationFilter.js';
import type { RecommendationKind } from '../src/ports/backend.js';
import { buildModel, Recommender } from '../src/recommender/index.js';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '15' }, anchors: { type: 'string', default: '2000' } } });
const ROUNDS = Number(values.rounds);
const ANCHORS = Number(values.anchors);

const { catalog, log } = buildDemo();
const recommender = new Recommender(buildModel(log, {}, catalog), catalog);
const items = [...catalog.values()];
const random = seededRandom(45);
const anchors = Array.from({ length: ANCHORS }, () => items[Math.floor(random() * items.length)]!.itemId);
const cart = Array.from({ length: 20 }, () => items[Math.floor(random() * items.length)]!.itemId);

const CASES: [string, RecommendationFilterInput | null][] = [
  ['unfiltered', null],
  ['exclude 20 ids (a cart)', { excludeItemIds: cart }],
  ['inStockOnly', { inStockOnly: true }],
  ['price 10 to 50', { minPrice: 10, maxPrice: 50 }],
  ['category (a department)', { categoryPath: 'Home & Hearth' }],
  ['category (a group)', { categoryPath: 'Gadgets & Devices/Audio' }],
  ['2 brands', { brandNames: ['Norvale', 'Kestrel'] }],
  ['all six at once', { excludeItemIds: cart.slice(0, 5), inStockOnly: true, minPrice: 5, maxPrice: 100, categoryPath: 'Home & Hearth', brandNames: ['Sundew', 'Okkam'] }],
  ['few pass (1 brand, 1 leaf, price)', { categoryPath: 'Outdoor Living/Camping/Tents', brandNames: ['Sundew'], minPrice: 300 }],
];

/** µs a lookup, over every anchor once, both kinds in turn. */
function pass(input: RecommendationFilterInput | null): number {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < anchors.length; i++) {
    const kind: RecommendationKind = i % 2 === 0 ? 'POST_BROWSE' : 'NEXT_BEST_PRODUCT';
    if (input === null) recommender.recommend(kind, anchors[i]!);
    else recommender.recommend(kind, anchors[i]!, 10, toRecommendationFilter(input));
  }
  return Number(process.hrtime.bigint() - t0) / 1e3 / anchors.length;
}

// warm: the code, and each filter's ranked scope (a Recommender keeps them until the next batch)
for (let r = 0; r < 3; r++) for (const [, input] of CASES) pass(input);
const samples = CASES.map(() => [] as number[]);
for (let r = 0; r < ROUNDS; r++) CASES.forEach(([, input], c) => samples[c]!.push(pass(input)));
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const base = median(samples[0]!);

// the first lookup of a filter on a fresh Recommender: its scope ranked (once per model swap)
const fresh = new Recommender(recommender.model, catalog);
const firstUse = CASES.slice(1).map(([, input]) => {
  const t0 = process.hrtime.bigint();
  fresh.recommend('POST_BROWSE', anchors[0]!, 10, toRecommendationFilter(input));
  return Number(process.hrtime.bigint() - t0) / 1e3;
});

const rows = [['filter', 'µs a lookup', 'x unfiltered', 'first use on a fresh model']];
CASES.forEach(([name], c) => {
  const m = median(samples[c]!);
  rows.push([name, m.toFixed(2), (m / base).toFixed(2), c === 0 ? '' : `${firstUse[c - 1]!.toFixed(0)} µs`]);
});
const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
for (const [n, row] of rows.entries()) {
  console.log(row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  '));
  if (n === 0) console.log(widths.map((w) => '-'.repeat(w)).join('  '));
}
const ratios = CASES.slice(1).map(([name], c) => ({ name, ratio: median(samples[c + 1]!) / base }));
const worst = ratios.reduce((a, b) => (b.ratio > a.ratio ? b : a));
console.log(`\n${catalog.size} items, ${log.length} events; ${ANCHORS} anchors a pass, ${ROUNDS} alternating rounds, medians; worst: ${worst.name} at ${worst.ratio.toFixed(2)}x`);
console.log(`load average at the end: ${(await import('node:os')).loadavg().map((l) => l.toFixed(2)).join(' ')}`);
console.log(`filters-json ${JSON.stringify({ unfilteredUs: base, worst })}`);
