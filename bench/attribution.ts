/**
 * What attribution adds to a request (not a test): npx tsx bench/attribution.ts [--n count]. Times,
 * in process, naming a served list (a keyed hash), reading a trackingId an event names, variant B's
 * re-rank of a ten-entry list, assigning a shopper, and counting a cached answer's impressions.
 */
import { parseArgs } from 'node:util';
import { parseExperiment, rerankByEvidence, variantOf, type Experiment } from '../src/model/experiment.js';
import { TrackingIds } from '../src/model/trackingId.js';
import { ListCounter } from '../src/observability/listCounter.js';
import type { RecommendationEntryModel } from '../src/ports/backend.js';

const { values } = parseArgs({ options: { n: { type: 'string', default: '200000' } } });
const N = Number(values.n);
const ids = new TrackingIds('a bench secret, long enough to be one');
const experiment = parseExperiment('evidence-prior:5,share=0.5') as Experiment;
const entries: RecommendationEntryModel[] = Array.from({ length: 10 }, (_, i) => ({ rank: i + 1, itemId: 31_000_000 + i, score: 1 / (i + 1), evidence: (i * 7) % 13, source: 'CO_VIEW' }));
const counter = new ListCounter(null);
const made = Array.from({ length: 1000 }, (_, i) => ids.make('NEXT_BEST_PRODUCT', 'A', 31_000_000 + i));

function time(what: string, run: (i: number) => unknown): void {
  for (let i = 0; i < N / 10; i++) run(i);
  const start = process.hrtime.bigint();
  let sink = 0;
  for (let i = 0; i < N; i++) sink += run(i) === undefined ? 0 : 1;
  const ns = Number(process.hrtime.bigint() - start) / N;
  console.log(`${what.padEnd(44)} ${(ns / 1000).toFixed(3)} µs${sink < 0 ? '' : ''}`);
}

time('trackingId of a served list (keyed SHA-256)', (i) => ids.make('NEXT_BEST_PRODUCT', 'A', 31_000_000 + (i % 5000)));
time('read an event\'s trackingId (hash, compare)', (i) => ids.read(made[i % made.length]!));
time('assign a shopper (SHA-256)', (i) => variantOf(experiment, `session-${i}`));
time('variant B re-rank of 10 entries', () => rerankByEvidence(entries, 5));
time('count a cached answer\'s 2 impressions', () => counter.countImpressions([2, 3]));
