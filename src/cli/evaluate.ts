/** Offline evaluation: the model against strong simple baselines on a time-ordered split. */
import type { Catalog } from '../recommender/index.js';
import { EventLog, KIND_PURCHASE, KIND_VIEW } from '../recommender/index.js';
import type { OrderWeights, PairScore } from '../recommender/index.js';
import { DEFAULT_NEXT_BEST, DEFAULT_POST_BROWSE, buildModel, byPopularity, cutoffOf, latestTime } from '../recommender/index.js';
import type { ModelOptions, RecModel, Scoring } from '../recommender/index.js';
import { MAX_RECOMMENDATIONS, Recommender } from '../recommender/index.js';
import { visits } from '../recommender/index.js';
import type { Sequences } from '../recommender/index.js';
import { rerankByEvidence, type Experiment } from '../model/experiment.js';
import type { RecommendationEntryModel } from '../ports/backend.js';

export type Task = 'post-browse' | 'next-best-product';
const TASKS: readonly Task[] = ['post-browse', 'next-best-product'];

export interface Score {
  /** Share of queries whose held-out item is in the top 10, with standard error. */
  hitRate: number;
  hitRateError: number;
  ndcg: number;
  ndcgError: number;
  mrr: number;
  mrrError: number;
  /** Distinct items recommended, as a share of the training log's items. */
  coverage: number;
  /** Mean training popularity of recommended items over the mean of all items: 1 is popularity-neutral. */
  popularity: number;
  /** Share of recommended items in the anchor's category; null without categories. */
  sameCategory: number | null;
  queries: number;
}

/** Three baselines, item-set weightings, the tuned model and the shipped default. */
export const METHODS = ['popularity', 'consecutive', 'sequential', 'count', 'cosine', 'lift', 'pmi', 'model', 'default', 'variant-b'] as const;
export type Method = (typeof METHODS)[number];
export const DEFAULT_METHODS: readonly Method[] = ['count', 'cosine', 'lift', 'pmi', 'model'];
const BASELINES: readonly Method[] = ['popularity', 'consecutive', 'sequential'];

export interface EvaluationRow extends Score {
  task: Task;
  method: Method;
  /** The parameters chosen on validation; empty for none. */
  parameters: string;
  validationNdcg: number;
  scoring: Scoring | null;
}

export interface GridPoint {
  task: Task;
  method: Method;
  scoring: Scoring;
  ndcg: number;
  ndcgError: number;
}

export interface EvaluateOptions {
  /** Latest share of visits and orders held out; default 0.2. */
  testFraction?: number;
  methods?: readonly Method[];
  /** Model options other than the scorings; maxAgeDays applies to every method. */
  model?: Omit<ModelOptions, 'postBrowse' | 'nextBest'>;
  /** Item categories: the model uses them as when serving, and the table shows the same-category share. */
  catalog?: Catalog | null;
  /** RECS_EXPERIMENT: adds the row variant-b, the shipped default re-ranked as variant B serves it. */
  experiment?: Experiment | null;
}

export interface Evaluation {
  rows: EvaluationRow[];
  grid: GridPoint[];
  trainEvents: number;
  trainEventsUsed: number;
  validationEvents: number;
  testEvents: number;
  trainItems: number;
}

/** Sequential rules: forward pairs up to 10 apart weighted 1/distance (Ludewig & Jannach, 2018). */
export const SEQUENTIAL_RULES: OrderWeights = { window: 10, backward: 0, exponent: 1 };
export const CONSECUTIVE: OrderWeights = { window: 1, backward: 0, exponent: 0 };

const SHRINKAGES = [0, 1, 2, 5, 10, 20];

/** Evaluation-only weightings, shrunk by c / (c + s) so one co-occurrence of rare items does not outrank steady evidence. */
const PAIR_SCORES: Record<'cosine' | 'lift' | 'pmi', (s: number) => PairScore> = {
  cosine: (s) => (c, na, nb) => (c / Math.sqrt(na * nb)) * (c / (c + s)),
  lift: (s) => (c, na, nb, n) => ((c * n) / (na * nb)) * (c / (c + s)),
  pmi: (s) => (c, na, nb, n) => Math.log((c * n) / (na * nb)) * (c / (c + s)),
};

function baselineScoring(method: Method): Scoring | null {
  switch (method) {
    case 'consecutive': return { damping: 0, prior: 0, order: CONSECUTIVE };
    case 'sequential': return { damping: 0, prior: 0, order: SEQUENTIAL_RULES };
    case 'count': return { damping: 0, prior: 0 };
    default: return null;
  }
}

/** The model's parameters and values tried, in order of preference for equal validation NDCG. */
const MODEL_GRID: { name: string; values: readonly unknown[]; set: (s: Scoring, v: never) => Scoring }[] = [
  { name: 'window', values: [0, 1, 2, 3, 5, 10, 20], set: (s, w: number) => (w === 0 ? withoutOrder(s) : { ...s, order: { backward: 0, exponent: 1, ...s.order, window: w } }) },
  { name: 'backward', values: [0, 0.1, 0.25, 0.5, 1], set: (s, b: number) => (s.order === undefined ? s : { ...s, order: { ...s.order, backward: b } }) },
  { name: 'exponent', values: [0, 0.5, 1, 2], set: (s, e: number) => (s.order === undefined ? s : { ...s, order: { ...s.order, exponent: e } }) },
  { name: 'collapseRepeats', values: [false, true], set: (s, c: boolean) => ({ ...s, collapseRepeats: c }) },
  { name: 'halfLifeDays', values: [0, 3, 14, 60, 180], set: (s, h: number) => ({ ...s, halfLifeDays: h }) },
  { name: 'damping', values: [0, 0.1, 0.2, 0.3, 0.5, 0.75, 1], set: (s, d: number) => ({ ...s, damping: d }) },
  { name: 'prior', values: [0, 1, 3, 10, 30, 100], set: (s, k: number) => ({ ...s, prior: k }) },
  // only with categories: without, every value gives the same lists
  { name: 'categoryLift', values: [0, 0.5, 1], set: (s, l: number) => ({ ...s, categoryLift: l }) },
  { name: 'sameCategoryFactor', values: [0.25, 0.5, 1, 2, 3], set: (s, f: number) => ({ ...s, sameCategoryFactor: f }) },
];

function withoutOrder(s: Scoring): Scoring {
  const { order: _, ...rest } = s;
  return rest;
}

/** `d=0.3 k=100 w=10 b=0.5 p=1 rep h=14 f=0.5`, `s=2`, or empty: the parameters that differ from none. */
export function describeScoring(scoring: Scoring, method: Method = 'model'): string {
  if (method === 'popularity' || method === 'consecutive' || method === 'sequential' || method === 'count') return '';
  if (method === 'variant-b') return `${describeScoring(scoring)} then RECS_EXPERIMENT`;
  if (method === 'cosine' || method === 'lift' || method === 'pmi') return `s=${shrinkageOf(scoring)}`;
  const parts = [`d=${scoring.damping ?? 0.3}`, `k=${scoring.prior ?? 0}`];
  if (scoring.order !== undefined) parts.push(`w=${scoring.order.window} b=${scoring.order.backward} p=${scoring.order.exponent}`);
  if (scoring.collapseRepeats === true) parts.push('rep');
  if ((scoring.halfLifeDays ?? 0) > 0) parts.push(`h=${scoring.halfLifeDays}`);
  if (scoring.sameCategoryFactor !== undefined && scoring.sameCategoryFactor !== 1) parts.push(`f=${scoring.sameCategoryFactor}`);
  if ((scoring.categoryLift ?? 0) > 0) parts.push(`l=${scoring.categoryLift}`);
  return parts.join(' ');
}

const shrinkages = new WeakMap<PairScore, number>();
function shrinkageOf(scoring: Scoring): number {
  return scoring.pairScore === undefined ? 0 : shrinkages.get(scoring.pairScore) ?? 0;
}
function pairScoring(method: 'cosine' | 'lift' | 'pmi', s: number): Scoring {
  const pairScore = PAIR_SCORES[method](s);
  shrinkages.set(pairScore, s);
  return { damping: 0, prior: 0, pairScore };
}

interface Query { anchor: number; target: number }

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

/** Holds out the latest visits and orders; each held-out step is a query. */
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

function meanAndError(sum: number, sum2: number, n: number): [number, number] {
  const mean = sum / n;
  return [mean, Math.sqrt(Math.max(0, sum2 / n - mean * mean) / n)];
}

/** HR@10, NDCG@10, MRR@10 with standard errors, coverage, popularity and same-category share. */
export function scoreQueries(
  queries: readonly Query[], recommend: (anchor: number) => number[], popularityOf: (id: number) => number, meanPopularity: number,
  trainItems: number, categoryOf: ((id: number) => string | null) | null = null,
): Score {
  let hits = 0;
  let gain = 0;
  let gain2 = 0;
  let reciprocal = 0;
  let reciprocal2 = 0;
  let shownPopularity = 0;
  let shownCount = 0;
  let sameCategory = 0;
  const shown = new Set<number>();
  for (const { anchor, target } of queries) {
    const list = recommend(anchor);
    const anchorCategory = categoryOf?.(anchor) ?? null;
    for (const item of list) {
      shown.add(item);
      shownPopularity += popularityOf(item);
      shownCount++;
      if (anchorCategory !== null && categoryOf!(item) === anchorCategory) sameCategory++;
    }
    const rank = list.indexOf(target);
    if (rank >= 0) {
      hits++;
      const g = 1 / Math.log2(rank + 2);
      gain += g;
      gain2 += g * g;
      reciprocal += 1 / (rank + 1);
      reciprocal2 += 1 / (rank + 1) ** 2;
    }
  }
  const n = Math.max(queries.length, 1);
  const [hitRate, hitRateError] = meanAndError(hits, hits, n);
  const [ndcg, ndcgError] = meanAndError(gain, gain2, n);
  const [mrr, mrrError] = meanAndError(reciprocal, reciprocal2, n);
  return {
    hitRate, hitRateError, ndcg, ndcgError, mrr, mrrError,
    coverage: trainItems === 0 ? 0 : shown.size / trainItems,
    popularity: shownCount === 0 || meanPopularity === 0 ? 0 : shownPopularity / shownCount / meanPopularity,
    sameCategory: categoryOf === null ? null : shownCount === 0 ? 0 : sameCategory / shownCount,
    queries: queries.length,
  };
}

class Judge {
  private readonly counts: Record<Task, Float64Array>;
  private readonly means: Record<Task, number>;
  private readonly popular: Record<Task, number[]>;
  private readonly categoryOf: ((id: number) => string | null) | null;
  readonly eventsUsed: number;
  constructor(private readonly split: Split, private readonly model: Omit<ModelOptions, 'postBrowse' | 'nextBest'>, private readonly catalog: Catalog | null) {
    const train = split.train;
    const views = new Float64Array(train.items.size);
    const purchases = new Float64Array(train.items.size);
    const since = cutoffOf(latestTime(train), model);
    let used = 0;
    for (let i = 0; i < train.length; i++) {
      if (train.time[i]! < since) continue;
      used++;
      (train.kind[i] === KIND_PURCHASE ? purchases : views)[train.item[i]!]!++;
    }
    this.eventsUsed = used;
    this.counts = { 'post-browse': views, 'next-best-product': purchases };
    const mean = (a: Float64Array): number => a.reduce((x, y) => x + y, 0) / Math.max(a.length, 1);
    this.means = { 'post-browse': mean(views), 'next-best-product': mean(purchases) };
    this.popular = { 'post-browse': this.popularOrder(views, purchases), 'next-best-product': this.popularOrder(purchases, views) };
    this.categoryOf = catalog === null ? null : (id) => catalog.get(id)?.categoryPath ?? null;
  }

  private popularOrder(first: Float64Array, second: Float64Array): number[] {
    const train = this.split.train;
    return Array.from({ length: train.items.size }, (_, i) => i).sort(byPopularity(first, second, train.items)).slice(0, MAX_RECOMMENDATIONS + 1).map((i) => train.items.idAt(i));
  }

  private score(task: Task, recommend: (anchor: number) => number[]): Score {
    const train = this.split.train;
    const counts = this.counts[task];
    const popularityOf = (id: number): number => counts[train.items.indexOf(id)] ?? 0;
    return scoreQueries(this.split.queries[task], recommend, popularityOf, this.means[task], train.items.size, this.categoryOf);
  }

  popularity(task: Task): Score {
    const order = this.popular[task];
    return this.score(task, (anchor) => order.filter((i) => i !== anchor).slice(0, MAX_RECOMMENDATIONS));
  }

  models(postBrowse: Scoring, nextBest: Scoring, rank: (entries: RecommendationEntryModel[]) => RecommendationEntryModel[] = (entries) => entries): Record<Task, Score> {
    // a copy: a catalogue's items are interned into the model's log
    const model: RecModel = buildModel(this.catalog === null ? this.split.train : copyLog(this.split.train), { ...this.model, postBrowse, nextBest }, this.catalog);
    const recommender = new Recommender(model, this.catalog);
    const list = (kind: 'POST_BROWSE' | 'NEXT_BEST_PRODUCT') => (anchor: number): number[] => {
      if (this.catalog !== null && !this.catalog.has(anchor)) return [];
      return rank(recommender.recommend(kind, anchor)).map((e) => e.itemId);
    };
    return { 'post-browse': this.score('post-browse', list('POST_BROWSE')), 'next-best-product': this.score('next-best-product', list('NEXT_BEST_PRODUCT')) };
  }
}

function copyLog(log: EventLog): EventLog {
  const copy = new EventLog();
  for (let i = 0; i < log.length; i++) copy.addKeys(log.kind[i]!, log.items.idAt(log.item[i]!), log.session[i]!, log.user[i]!, log.order[i]!, log.time[i]!);
  return copy;
}

/** Parameters are chosen per task by NDCG@10 on a validation split before the test split; then
 * every method is trained on all before the test split, so test figures never pick a parameter. */
export function evaluate(log: EventLog, options: EvaluateOptions = {}): Evaluation {
  const fraction = options.testFraction ?? 0.2;
  const model = options.model ?? {};
  const catalog = options.catalog ?? null;
  const outer = split(log, fraction, model.sessionGapMs);
  const inner = split(outer.train, fraction, model.sessionGapMs);
  const validation = new Judge(inner, model, catalog);
  const test = new Judge(outer, model, catalog);
  const methods = options.methods ?? DEFAULT_METHODS;

  const rows: EvaluationRow[] = [];
  const grid: GridPoint[] = [];
  const fixed = (method: Method, chosen: Record<Task, Scoring>, validationNdcg: Record<Task, number>, rank?: (entries: RecommendationEntryModel[]) => RecommendationEntryModel[]): void => {
    const scores = test.models(chosen['post-browse'], chosen['next-best-product'], rank);
    for (const task of TASKS) {
      rows.push({ task, method, parameters: describeScoring(chosen[task], method), validationNdcg: validationNdcg[task], scoring: chosen[task], ...scores[task] });
    }
  };
  const measure = (method: Method, pb: Scoring, nbp: Scoring): Record<Task, number> => {
    const scores = validation.models(pb, nbp);
    const scorings: Record<Task, Scoring> = { 'post-browse': pb, 'next-best-product': nbp };
    for (const task of TASKS) if (scores[task].queries > 0) grid.push({ task, method, scoring: scorings[task], ndcg: scores[task].ndcg, ndcgError: scores[task].ndcgError });
    return { 'post-browse': scores['post-browse'].ndcg, 'next-best-product': scores['next-best-product'].ndcg };
  };

  for (const task of TASKS) {
    rows.push({ task, method: 'popularity', parameters: '', validationNdcg: validation.popularity(task).ndcg, scoring: null, ...test.popularity(task) });
  }
  for (const method of [...BASELINES.slice(1), ...methods.filter((m) => !BASELINES.includes(m) && m !== 'default' && m !== 'variant-b')]) {
    const scoring = baselineScoring(method);
    if (scoring !== null) {
      fixed(method, { 'post-browse': scoring, 'next-best-product': scoring }, measure(method, scoring, scoring));
      continue;
    }
    const candidates: Scoring[][] = method === 'model'
      ? [] : [SHRINKAGES.map((s) => pairScoring(method as 'cosine' | 'lift' | 'pmi', s))];
    const best: Record<Task, { scoring: Scoring; ndcg: number }> = {
      'post-browse': { scoring: method === 'model' ? DEFAULT_POST_BROWSE : candidates[0]![0]!, ndcg: -1 },
      'next-best-product': { scoring: method === 'model' ? DEFAULT_NEXT_BEST : candidates[0]![0]!, ndcg: -1 },
    };
    const consider = (pb: Scoring, nbp: Scoring): void => {
      const ndcg = measure(method, pb, nbp);
      if (ndcg['post-browse'] > best['post-browse'].ndcg) best['post-browse'] = { scoring: pb, ndcg: ndcg['post-browse'] };
      if (ndcg['next-best-product'] > best['next-best-product'].ndcg) best['next-best-product'] = { scoring: nbp, ndcg: ndcg['next-best-product'] };
    };
    if (method === 'model') {
      consider(DEFAULT_POST_BROWSE, DEFAULT_NEXT_BEST);
      for (let round = 0; round < 2; round++) {
        for (const parameter of MODEL_GRID) {
          const pb = best['post-browse'].scoring;
          const nbp = best['next-best-product'].scoring;
          for (const value of parameter.values) consider(parameter.set(pb, value as never), parameter.set(nbp, value as never));
        }
      }
    } else {
      for (const scoring of candidates[0]!) consider(scoring, scoring);
    }
    fixed(method, { 'post-browse': best['post-browse'].scoring, 'next-best-product': best['next-best-product'].scoring }, { 'post-browse': best['post-browse'].ndcg, 'next-best-product': best['next-best-product'].ndcg });
  }
  // the shipped defaults (see model.ts)
  fixed('default', { 'post-browse': DEFAULT_POST_BROWSE, 'next-best-product': DEFAULT_NEXT_BEST }, measure('default', DEFAULT_POST_BROWSE, DEFAULT_NEXT_BEST));
  const { experiment } = options;
  if (experiment) {
    // the same lists, in the order variant B serves them (model/experiment.ts)
    const rank = (entries: RecommendationEntryModel[]): RecommendationEntryModel[] => rerankByEvidence(entries, experiment.evidencePrior);
    const scores = validation.models(DEFAULT_POST_BROWSE, DEFAULT_NEXT_BEST, rank);
    fixed('variant-b', { 'post-browse': DEFAULT_POST_BROWSE, 'next-best-product': DEFAULT_NEXT_BEST }, { 'post-browse': scores['post-browse'].ndcg, 'next-best-product': scores['next-best-product'].ndcg }, rank);
  }
  rows.sort((a, b) => TASKS.indexOf(a.task) - TASKS.indexOf(b.task));
  return { rows, grid, trainEvents: outer.train.length, trainEventsUsed: test.eventsUsed, validationEvents: inner.testEvents, testEvents: outer.testEvents, trainItems: outer.train.items.size };
}

export function formatTable(rows: readonly EvaluationRow[]): string {
  const header = ['task', 'method', 'parameters', 'val NDCG', 'HR@10', '± se', 'NDCG@10', '± se', 'MRR@10', '± se', 'coverage', 'popularity', 'same cat', 'queries'];
  const lines = rows.filter((r) => r.queries > 0).map((r) => [
    r.task, r.method, r.parameters, r.validationNdcg.toFixed(4), r.hitRate.toFixed(4), r.hitRateError.toFixed(4), r.ndcg.toFixed(4), r.ndcgError.toFixed(4),
    r.mrr.toFixed(4), r.mrrError.toFixed(4), r.coverage.toFixed(4), r.popularity.toFixed(1), r.sameCategory === null ? '-' : r.sameCategory.toFixed(3), String(r.queries),
  ]);
  return alignTable(header, lines, 3);
}

export function formatGrid(points: readonly GridPoint[]): string {
  const lines = points.map((p) => [p.task, p.method, describeScoring(p.scoring, p.method), p.ndcg.toFixed(4), p.ndcgError.toFixed(4)]);
  return alignTable(['task', 'method', 'parameters', 'val NDCG', '± se'], lines, 3);
}

function alignTable(header: string[], lines: string[][], leftColumns: number): string {
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const fmt = (cells: string[]): string => cells.map((c, i) => (i < leftColumns ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [fmt(header), widths.map((w) => '-'.repeat(w)).join('  '), ...lines.map(fmt)].join('\n');
}
