import { EventLog, KIND_PURCHASE, KIND_VIEW } from '../events/event.js';
import { WEIGHTINGS } from './cooccurrence.js';
import type { Weighting } from './cooccurrence.js';
import { DEFAULT_NEXT_BEST, DEFAULT_POST_BROWSE, buildModel, byPopularity } from './model.js';
import type { ModelOptions, Scoring } from './model.js';
import { MAX_RECOMMENDATIONS, Recommender } from './recommend.js';
import { visits } from './sessions.js';
import type { Sequences } from './sessions.js';

export type Task = 'post-browse' | 'next-best-product';
const TASKS: readonly Task[] = ['post-browse', 'next-best-product'];

/** The figures of one method on one set of queries. */
export interface Score {
  /** Share of queries whose held-out item is in the top 10. */
  hitRate: number;
  /** Mean of 1/log2(rank + 1) over queries, 0 for a miss. */
  ndcg: number;
  /** Standard error of that mean (differences well below two of them are noise). */
  ndcgError: number;
  /** Distinct items recommended over all queries, as a share of the items of the training log. */
  coverage: number;
  /**
   * Mean training popularity of the recommended items (views for post-browse, purchases for
   * next-best-product) divided by the mean over all items: 1 is popularity-neutral, the
   * popularity baseline sits at its maximum.
   */
  popularity: number;
  queries: number;
}

/** One line of the evaluation table. */
export interface EvaluationRow extends Score {
  task: Task;
  /** `popularity` or `model/<weighting>`. */
  method: string;
  /** The parameters chosen on the validation split, e.g. `d=0.3 k=3`; empty for none. */
  parameters: string;
  /** NDCG@10 of those parameters on the validation split. */
  validationNdcg: number;
  /** The options as the model takes them (null for the popularity baseline). */
  scoring: Scoring | null;
}

/** One grid point as measured on the validation split. */
export interface GridPoint {
  task: Task;
  scoring: Scoring;
  ndcg: number;
  ndcgError: number;
}

/** Options of evaluate. */
export interface EvaluateOptions {
  /** Share of visits (post-browse) and orders (next-best-product) held out, the latest by start time; default 0.2. */
  testFraction?: number;
  /** Weightings to compare; default all. */
  weightings?: readonly Weighting[];
  /** Model options other than the scorings; defaults as in ModelOptions. */
  model?: Omit<ModelOptions, 'postBrowse' | 'nextBest'>;
  /** Parameter grid per weighting; default PARAMETER_GRID. */
  grid?: Partial<Record<Weighting, readonly Scoring[]>>;
}

export interface Evaluation {
  rows: EvaluationRow[];
  /** Every grid point's validation figures. */
  grid: GridPoint[];
  trainEvents: number;
  validationEvents: number;
  testEvents: number;
  trainItems: number;
}

const SHRINKAGES = [0, 1, 2, 5, 10, 20];
const DAMPINGS = [0, 0.1, 0.2, 0.3, 0.5, 0.75, 1];
const PRIORS = [0, 1, 3, 10, 30, 100];

/** The parameters tried per weighting, in order of preference for equal validation NDCG. */
export const PARAMETER_GRID: Record<Weighting, readonly Scoring[]> = {
  count: [{ weighting: 'count' }],
  cosine: SHRINKAGES.map((shrinkage) => ({ weighting: 'cosine', shrinkage })),
  lift: SHRINKAGES.map((shrinkage) => ({ weighting: 'lift', shrinkage })),
  pmi: SHRINKAGES.map((shrinkage) => ({ weighting: 'pmi', shrinkage })),
  damped: DAMPINGS.flatMap((damping) => PRIORS.map((prior) => ({ weighting: 'damped' as const, damping, prior }))),
};

/** `s=2`, `d=0.3 k=3` or empty. */
export function describeScoring(scoring: Scoring): string {
  switch (scoring.weighting) {
    case 'count': return '';
    case 'damped': return `d=${scoring.damping ?? 0.2} k=${scoring.prior ?? 0}`;
    default: return `s=${scoring.shrinkage ?? 2}`;
  }
}

interface Query { anchor: number; target: number }

/** Training log and queries of one time-ordered split. */
interface Split {
  train: EventLog;
  queries: Record<Task, Query[]>;
  testEvents: number;
}

/** Marks the units (visits or orders) starting at or after the cut-off as test; returns the unit of each event. */
function splitUnits(log: EventLog, units: Sequences, testFraction: number, test: Uint8Array): Int32Array {
  const unitOf = new Int32Array(log.length).fill(-1);
  if (units.count === 0) return unitOf;
  const starts = new Float64Array(units.count);
  for (let u = 0; u < units.count; u++) starts[u] = log.time[units.events[units.start[u]!]!]!;
  const sorted = Float64Array.from(starts).sort();
  const cut = sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * (1 - testFraction)))]!;
  for (let u = 0; u < units.count; u++) {
    for (let j = units.start[u]!; j < units.start[u + 1]!; j++) {
      const e = units.events[j]!;
      unitOf[e] = u;
      if (starts[u]! >= cut) test[e] = 1;
    }
  }
  return unitOf;
}

/**
 * Holds out the latest visits and orders: the rest is the training log, and each held-out step
 * is a query. Post-browse: the next viewed item of a visit from the one before. Next-best-product:
 * the next item of an order from the one before, and an order's first item from the user's last
 * purchase.
 */
function split(log: EventLog, fraction: number, sessionGapMs: number | undefined): Split {
  const test = new Uint8Array(log.length);
  const viewUnits = visits(log, KIND_VIEW, sessionGapMs === undefined ? {} : { sessionGapMs });
  splitUnits(log, viewUnits, fraction, test);
  const orders = visits(log, KIND_PURCHASE);
  const orderOf = splitUnits(log, orders, fraction, test);

  const train = new EventLog();
  let testEvents = 0;
  for (let i = 0; i < log.length; i++) {
    if (test[i] === 1) testEvents++;
    else train.addKeys(log.kind[i]!, log.items.idAt(log.item[i]!), log.session[i]!, log.user[i]!, log.order[i]!, log.time[i]!);
  }
  const id = (e: number): number => log.items.idAt(log.item[e]!);

  const browse: Query[] = [];
  for (let u = 0; u < viewUnits.count; u++) {
    let previous = -1;
    for (let j = viewUnits.start[u]!; j < viewUnits.start[u + 1]!; j++) {
      const e = viewUnits.events[j]!;
      if (test[e] !== 1) break;
      const item = id(e);
      if (previous >= 0 && item !== previous) browse.push({ anchor: previous, target: item });
      previous = item;
    }
  }

  const best: Query[] = [];
  const purchases: number[] = [];
  for (let i = 0; i < log.length; i++) if (log.kind[i] === KIND_PURCHASE) purchases.push(i);
  purchases.sort((a, b) => log.time[a]! - log.time[b]! || a - b);
  const lastOfUser = new Map<number, number>();
  const lastOfOrder = new Map<number, number>();
  for (const e of purchases) {
    const item = id(e);
    const order = orderOf[e]!;
    const user = log.user[e]!;
    if (test[e] === 1) {
      const anchor = order >= 0 && lastOfOrder.has(order) ? lastOfOrder.get(order)! : user >= 0 ? lastOfUser.get(user) : undefined;
      if (anchor !== undefined && anchor !== item) best.push({ anchor, target: item });
    }
    if (order >= 0) lastOfOrder.set(order, item);
    if (user >= 0) lastOfUser.set(user, item);
  }
  return { train, queries: { 'post-browse': browse, 'next-best-product': best }, testEvents };
}

/** HR@10, NDCG@10 (with its standard error), coverage and popularity of a recommender on queries. */
function scoreQueries(queries: readonly Query[], recommend: (anchor: number) => number[], popularityOf: (id: number) => number, meanPopularity: number, trainItems: number): Score {
  let hits = 0;
  let gain = 0;
  let gain2 = 0;
  let shownPopularity = 0;
  let shownCount = 0;
  const shown = new Set<number>();
  for (const { anchor, target } of queries) {
    const list = recommend(anchor);
    for (const item of list) {
      shown.add(item);
      shownPopularity += popularityOf(item);
      shownCount++;
    }
    const rank = list.indexOf(target);
    if (rank >= 0) {
      hits++;
      const g = 1 / Math.log2(rank + 2);
      gain += g;
      gain2 += g * g;
    }
  }
  const n = Math.max(queries.length, 1);
  const mean = gain / n;
  const variance = Math.max(0, gain2 / n - mean * mean);
  return {
    hitRate: hits / n, ndcg: mean, ndcgError: Math.sqrt(variance / n),
    coverage: trainItems === 0 ? 0 : shown.size / trainItems,
    popularity: shownCount === 0 || meanPopularity === 0 ? 0 : shownPopularity / shownCount / meanPopularity,
    queries: queries.length,
  };
}

/** Scores the model (and the popularity baseline) trained on a split's training log. */
class Judge {
  private readonly counts: Record<Task, Float64Array>;
  private readonly means: Record<Task, number>;
  private readonly popular: Record<Task, number[]>;
  constructor(private readonly split: Split, private readonly model: Omit<ModelOptions, 'postBrowse' | 'nextBest'>) {
    const probe = buildModel(split.train, { ...model, postBrowse: { weighting: 'count' }, nextBest: { weighting: 'count' }, topK: 1 }, null);
    this.counts = { 'post-browse': probe.views, 'next-best-product': probe.purchases };
    const mean = (a: Float64Array): number => a.reduce((x, y) => x + y, 0) / Math.max(a.length, 1);
    this.means = { 'post-browse': mean(probe.views), 'next-best-product': mean(probe.purchases) };
    this.popular = {
      'post-browse': this.popularOrder(probe.views, probe.purchases),
      'next-best-product': this.popularOrder(probe.purchases, probe.views),
    };
  }

  private popularOrder(first: Float64Array, second: Float64Array): number[] {
    const train = this.split.train;
    return Array.from({ length: train.items.size }, (_, i) => i).sort(byPopularity(first, second)).slice(0, MAX_RECOMMENDATIONS + 1).map((i) => train.items.idAt(i));
  }

  private score(task: Task, recommend: (anchor: number) => number[]): Score {
    const train = this.split.train;
    const counts = this.counts[task];
    const popularityOf = (id: number): number => counts[train.items.indexOf(id)] ?? 0;
    return scoreQueries(this.split.queries[task], recommend, popularityOf, this.means[task], train.items.size);
  }

  popularity(task: Task): Score {
    const order = this.popular[task];
    return this.score(task, (anchor) => order.filter((i) => i !== anchor).slice(0, MAX_RECOMMENDATIONS));
  }

  /** Both tasks of a model with these scorings. */
  models(postBrowse: Scoring, nextBest: Scoring): Record<Task, Score> {
    const recommender = new Recommender(buildModel(this.split.train, { ...this.model, postBrowse, nextBest }, null), null);
    return {
      'post-browse': this.score('post-browse', (a) => recommender.recommend('POST_BROWSE', a).map((e) => e.itemId)),
      'next-best-product': this.score('next-best-product', (a) => recommender.recommend('NEXT_BEST_PRODUCT', a).map((e) => e.itemId)),
    };
  }
}

/**
 * Time-ordered evaluation on item ids (no catalogue needed). The latest visits and orders are the
 * test split; the latest of the rest the validation split. Each weighting's parameters are chosen
 * per task by NDCG@10 on validation (trained on what precedes it), then the model is trained on
 * everything before the test split and scored on it: the test figures never pick a parameter.
 * A popularity baseline (most viewed, resp. most bought, in training) answers the same queries.
 */
export function evaluate(log: EventLog, options: EvaluateOptions = {}): Evaluation {
  const fraction = options.testFraction ?? 0.2;
  const model = options.model ?? {};
  const outer = split(log, fraction, model.sessionGapMs);
  const inner = split(outer.train, fraction, model.sessionGapMs);
  const validation = new Judge(inner, model);
  const test = new Judge(outer, model);

  const rows: EvaluationRow[] = [];
  const grid: GridPoint[] = [];
  const trainItems = outer.train.items.size;
  for (const task of TASKS) {
    rows.push({ task, method: 'popularity', parameters: '', validationNdcg: validation.popularity(task).ndcg, scoring: null, ...test.popularity(task) });
  }
  for (const weighting of options.weightings ?? WEIGHTINGS) {
    const candidates = options.grid?.[weighting] ?? PARAMETER_GRID[weighting];
    const best: Record<Task, GridPoint | null> = { 'post-browse': null, 'next-best-product': null };
    for (const scoring of candidates) {
      const scores = validation.models(scoring, scoring);
      for (const task of TASKS) {
        const point: GridPoint = { task, scoring, ndcg: scores[task].ndcg, ndcgError: scores[task].ndcgError };
        grid.push(point);
        if (best[task] === null || point.ndcg > best[task].ndcg) best[task] = point;
      }
    }
    const postBrowse = best['post-browse']!.scoring;
    const nextBest = best['next-best-product']!.scoring;
    const scores = test.models(postBrowse, nextBest);
    for (const task of TASKS) {
      const chosen = best[task]!;
      rows.push({ task, method: `model/${weighting}`, parameters: describeScoring(chosen.scoring), validationNdcg: chosen.ndcg, scoring: chosen.scoring, ...scores[task] });
    }
  }
  // The shipped defaults, chosen from the validation figures of several logs (see model.ts).
  const defaults: Record<Task, Scoring> = { 'post-browse': DEFAULT_POST_BROWSE, 'next-best-product': DEFAULT_NEXT_BEST };
  const defaultValidation = validation.models(DEFAULT_POST_BROWSE, DEFAULT_NEXT_BEST);
  const defaultTest = test.models(DEFAULT_POST_BROWSE, DEFAULT_NEXT_BEST);
  for (const task of TASKS) {
    const scoring = defaults[task];
    rows.push({ task, method: `default/${scoring.weighting}`, parameters: describeScoring(scoring), validationNdcg: defaultValidation[task].ndcg, scoring, ...defaultTest[task] });
  }
  rows.sort((a, b) => TASKS.indexOf(a.task) - TASKS.indexOf(b.task));
  return { rows, grid, trainEvents: outer.train.length, validationEvents: inner.testEvents, testEvents: outer.testEvents, trainItems };
}

/** The rows as an aligned text table. */
export function formatTable(rows: readonly EvaluationRow[]): string {
  const header = ['task', 'method', 'parameters', 'val NDCG', 'HR@10', 'NDCG@10', '± se', 'coverage', 'popularity', 'queries'];
  const lines = rows.map((r) => [
    r.task, r.method, r.parameters, r.validationNdcg.toFixed(4), r.hitRate.toFixed(4), r.ndcg.toFixed(4), r.ndcgError.toFixed(4),
    r.coverage.toFixed(4), r.popularity.toFixed(1), String(r.queries),
  ]);
  return alignTable(header, lines, 3);
}

/** The validation grid as an aligned text table. */
export function formatGrid(points: readonly GridPoint[]): string {
  const lines = points.map((p) => [p.task, p.scoring.weighting, describeScoring(p.scoring), p.ndcg.toFixed(4), p.ndcgError.toFixed(4)]);
  return alignTable(['task', 'weighting', 'parameters', 'val NDCG', '± se'], lines, 3);
}

function alignTable(header: string[], lines: string[][], leftColumns: number): string {
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const fmt = (cells: string[]): string => cells.map((c, i) => (i < leftColumns ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [fmt(header), widths.map((w) => '-'.repeat(w)).join('  '), ...lines.map(fmt)].join('\n');
}
