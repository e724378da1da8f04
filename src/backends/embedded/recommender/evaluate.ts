import { EventLog, KIND_PURCHASE, KIND_VIEW } from '../events/event.js';
import { WEIGHTINGS } from './cooccurrence.js';
import type { Weighting } from './cooccurrence.js';
import { buildModel, byPopularity } from './model.js';
import type { ModelOptions } from './model.js';
import { MAX_RECOMMENDATIONS, Recommender } from './recommend.js';
import { visits } from './sessions.js';
import type { Sequences } from './sessions.js';

export type Task = 'post-browse' | 'next-best-product';

/** One line of the evaluation table. */
export interface EvaluationRow {
  task: Task;
  /** `popularity` or `model/<weighting>`. */
  method: string;
  /** Share of queries whose held-out item is in the top 10. */
  hitRate: number;
  /** Mean of 1/log2(rank + 1) over queries, 0 for a miss. */
  ndcg: number;
  /** Distinct items recommended over all queries, as a share of the items of the training log. */
  coverage: number;
  queries: number;
}

/** Options of evaluate. */
export interface EvaluateOptions {
  /** Share of visits (post-browse) and orders (next-best-product) held out, the latest by start time; default 0.2. */
  testFraction?: number;
  /** Weightings to compare; default all. */
  weightings?: readonly Weighting[];
  /** Model options other than the weightings; defaults as in ModelOptions. */
  model?: ModelOptions;
}

export interface Evaluation {
  rows: EvaluationRow[];
  trainEvents: number;
  testEvents: number;
  trainItems: number;
}

interface Query { anchor: number; target: number }

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
 * Time-ordered hold-out evaluation on item ids (no catalogue needed): the latest visits and orders
 * are held out, the model is trained on the rest, and each held-out step is a query.
 * Post-browse: the next viewed item of a visit from the one before. Next-best-product: the next
 * item of an order from the one before, and an order's first item from the user's last purchase.
 * A popularity baseline (most viewed, resp. most bought, in training) answers the same queries.
 */
export function evaluate(log: EventLog, options: EvaluateOptions = {}): Evaluation {
  const fraction = options.testFraction ?? 0.2;
  const test = new Uint8Array(log.length);
  const viewUnits = visits(log, KIND_VIEW, options.model?.sessionGapMs === undefined ? {} : { sessionGapMs: options.model.sessionGapMs });
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

  const browseQueries: Query[] = [];
  for (let u = 0; u < viewUnits.count; u++) {
    let previous = -1;
    for (let j = viewUnits.start[u]!; j < viewUnits.start[u + 1]!; j++) {
      const e = viewUnits.events[j]!;
      if (test[e] !== 1) break;
      const item = id(e);
      if (previous >= 0 && item !== previous) browseQueries.push({ anchor: previous, target: item });
      previous = item;
    }
  }

  const bestQueries: Query[] = [];
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
      if (anchor !== undefined && anchor !== item) bestQueries.push({ anchor, target: item });
    }
    if (order >= 0) lastOfOrder.set(order, item);
    if (user >= 0) lastOfUser.set(user, item);
  }

  const rows: EvaluationRow[] = [];
  const trainItems = train.items.size;
  const score = (task: Task, method: string, queries: Query[], recommend: (anchor: number) => number[]): void => {
    let hits = 0;
    let gain = 0;
    const shown = new Set<number>();
    for (const { anchor, target } of queries) {
      const list = recommend(anchor);
      for (const item of list) shown.add(item);
      const rank = list.indexOf(target);
      if (rank >= 0) {
        hits++;
        gain += 1 / Math.log2(rank + 2);
      }
    }
    const n = Math.max(queries.length, 1);
    rows.push({ task, method, hitRate: hits / n, ndcg: gain / n, coverage: trainItems === 0 ? 0 : shown.size / trainItems, queries: queries.length });
  };

  const weightings = options.weightings ?? WEIGHTINGS;
  let first = true;
  for (const weighting of weightings) {
    const model = buildModel(train, { ...options.model, postBrowseWeighting: weighting, nextBestWeighting: weighting }, null);
    const recommender = new Recommender(model, null);
    if (first) {
      first = false;
      const popular = (counts: [Float64Array, Float64Array]) => {
        const order = Array.from({ length: trainItems }, (_, i) => i).sort(byPopularity(...counts)).slice(0, MAX_RECOMMENDATIONS + 1).map((i) => train.items.idAt(i));
        return (anchor: number): number[] => order.filter((i) => i !== anchor).slice(0, MAX_RECOMMENDATIONS);
      };
      score('post-browse', 'popularity', browseQueries, popular([model.views, model.purchases]));
      score('next-best-product', 'popularity', bestQueries, popular([model.purchases, model.views]));
    }
    score('post-browse', `model/${weighting}`, browseQueries, (a) => recommender.recommend('POST_BROWSE', a).map((e) => e.itemId));
    score('next-best-product', `model/${weighting}`, bestQueries, (a) => recommender.recommend('NEXT_BEST_PRODUCT', a).map((e) => e.itemId));
  }
  rows.sort((a, b) => (a.task === b.task ? 0 : a.task === 'post-browse' ? -1 : 1));
  return { rows, trainEvents: train.length, testEvents, trainItems };
}

/** The rows as an aligned text table. */
export function formatTable(rows: readonly EvaluationRow[]): string {
  const header = ['task', 'method', 'HR@10', 'NDCG@10', 'coverage', 'queries'];
  const lines = rows.map((r) => [r.task, r.method, r.hitRate.toFixed(4), r.ndcg.toFixed(4), r.coverage.toFixed(4), String(r.queries)]);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const fmt = (cells: string[]): string => cells.map((c, i) => (i < 2 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [fmt(header), widths.map((w) => '-'.repeat(w)).join('  '), ...lines.map(fmt)].join('\n');
}
