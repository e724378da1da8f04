/** evaluate's shopper task: a held-out session's next item predicted from the session so far, by recommendedForYou's
 * function against sequential rules on the last item and session-based kNN (V-SKNN). */
import { toRecommendationFilter } from '../model/recommendationFilter.js';
import type { RecommendationKind } from '../ports/backend.js';
import { buildModel, cutoffOf, DEFAULT_FOR_YOU, EventLog, forYou, latestTime, KIND_PURCHASE, MAX_RECOMMENDATIONS, Recommender, sessionIndex, vsknnScores } from '../recommender/index.js';
import type { ForYouOptions, ModelOptions, Sequences, ShopperEvent, VsknnOptions } from '../recommender/index.js';
import { SEQUENTIAL_RULES } from './evaluate.js';

/** A user's events without a session are split where they were idle this long, as the model splits them. */
const SESSION_GAP_MS = 30 * 60 * 1000;
/** At most this many of a prefix's items are excluded from a baseline's list (a filter's bound). */
const MAX_EXCLUDED = 100;

export interface ShopperRow {
  method: string;
  /** HR@10 on the validation split (the latest part of the training part), where parameters are compared. */
  validationHitRate: number;
  hitRate: number;
  hitRateError: number;
  mrr: number;
  mrrError: number;
  queries: number;
}

export interface ShopperEvaluation {
  rows: ShopperRow[];
  trainEvents: number;
  testSessions: number;
}

export interface ShopperTaskOptions {
  testFraction?: number;
  model?: Omit<ModelOptions, 'postBrowse' | 'nextBest'>;
  /** recommendedForYou's weightings compared besides the default. */
  forYouVariants?: readonly ForYouOptions[];
  vsknn?: VsknnOptions;
}

interface Query {
  prefix: ShopperEvent[];
  target: number;
}

/** The shopper's sessions: by session id, else a user's events split at idle gaps, else by order (a basket); events
 * before `since` left out. */
export function shopperSessions(log: EventLog, since = -Infinity): Sequences {
  const groups = new Map<string, number[]>();
  for (let e = 0; e < log.length; e++) {
    if (log.time[e]! < since) continue;
    const key = log.session[e]! >= 0 ? `s${log.session[e]}` : log.user[e]! >= 0 ? `u${log.user[e]}` : log.order[e]! >= 0 ? `o${log.order[e]}` : null;
    if (key === null) continue;
    let group = groups.get(key);
    if (group === undefined) groups.set(key, (group = []));
    group.push(e);
  }
  const start = [0];
  const events: number[] = [];
  for (const [key, group] of groups) {
    group.sort((a, b) => log.time[a]! - log.time[b]! || a - b);
    let last = -Infinity;
    for (const e of group) {
      if (key.startsWith('u') && log.time[e]! - last > SESSION_GAP_MS && events.length > start[start.length - 1]!) start.push(events.length);
      last = log.time[e]!;
      events.push(e);
    }
    if (events.length > start[start.length - 1]!) start.push(events.length);
  }
  return { count: start.length - 1, start: Int32Array.from(start), events: Int32Array.from(events), weight: new Float32Array(start.length - 1).fill(1) };
}

interface Split {
  train: EventLog;
  queries: Query[];
  testSessions: number;
}

/** Holds out the sessions starting in the latest `fraction`; every step of one whose item is new to it is a query. */
function split(log: EventLog, fraction: number): Split {
  const sessions = shopperSessions(log);
  const test = new Uint8Array(log.length);
  const starts = Array.from({ length: sessions.count }, (_, s) => log.time[sessions.events[sessions.start[s]!]!]!);
  const sorted = [...starts].sort((a, b) => a - b);
  const cut = sorted.length === 0 ? Infinity : sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * (1 - fraction)))]!;
  const queries: Query[] = [];
  let testSessions = 0;
  for (let s = 0; s < sessions.count; s++) {
    if (starts[s]! < cut) continue;
    testSessions++;
    const prefix: ShopperEvent[] = [];
    for (let j = sessions.start[s]!; j < sessions.start[s + 1]!; j++) {
      const e = sessions.events[j]!;
      test[e] = 1;
      const event = { itemId: log.items.idAt(log.item[e]!), kind: log.kind[e]!, time: log.time[e]! };
      if (prefix.length > 0 && !prefix.some((p) => p.itemId === event.itemId)) queries.push({ prefix: prefix.slice(), target: event.itemId });
      prefix.push(event);
    }
  }
  const train = new EventLog();
  for (let e = 0; e < log.length; e++) {
    if (test[e] !== 1) train.addKeys(log.kind[e]!, log.items.idAt(log.item[e]!), log.session[e]!, log.user[e]!, log.order[e]!, log.time[e]!);
  }
  return { train, queries, testSessions };
}

type Method = (prefix: readonly ShopperEvent[]) => number[];

/** The methods, trained on `train`. */
function methods(train: EventLog, options: ShopperTaskOptions): Map<string, Method> {
  const model = options.model ?? {};
  const served = new Recommender(buildModel(copyOf(train), model), null);
  const sr = new Recommender(buildModel(copyOf(train), { ...model, postBrowse: { damping: 0, prior: 0, order: SEQUENTIAL_RULES }, nextBest: { damping: 0, prior: 0, order: SEQUENTIAL_RULES } }), null);
  // the window every method learns from, as the model's (maxAgeDays)
  const index = sessionIndex(train, shopperSessions(train, cutoffOf(latestTime(train), model)));
  const kindOf = (prefix: readonly ShopperEvent[]): RecommendationKind => (prefix.some((e) => e.kind === KIND_PURCHASE) ? 'NEXT_BEST_PRODUCT' : 'POST_BROWSE');
  const exclude = (prefix: readonly ShopperEvent[]) => toRecommendationFilter({ excludeItemIds: [...new Set(prefix.map((e) => e.itemId))].slice(-MAX_EXCLUDED) });
  const out = new Map<string, Method>();
  const popular = (prefix: readonly ShopperEvent[]): number[] => served.recommend(kindOf(prefix), 0, MAX_RECOMMENDATIONS, exclude(prefix)).map((e) => e.itemId);
  out.set('popularity', popular);
  out.set('sequential', (prefix) => {
    const last = prefix[prefix.length - 1]!;
    return sr.recommend(last.kind === KIND_PURCHASE ? 'NEXT_BEST_PRODUCT' : 'POST_BROWSE', last.itemId, MAX_RECOMMENDATIONS, exclude(prefix)).map((e) => e.itemId);
  });
  out.set('v-sknn', (prefix) => {
    const items = prefix.map((e) => train.items.indexOf(e.itemId)).filter((i) => i >= 0);
    const seen = new Set(prefix.map((e) => e.itemId));
    const ids = train.items.idsNow();
    const ranked = [...vsknnScores(index, items, options.vsknn).entries()].map(([i, score]) => ({ id: ids[i]!, score }))
      .filter((c) => !seen.has(c.id)).sort((a, b) => b.score - a.score || a.id - b.id).slice(0, MAX_RECOMMENDATIONS).map((c) => c.id);
    for (const id of popular(prefix)) if (ranked.length < MAX_RECOMMENDATIONS && !ranked.includes(id)) ranked.push(id);
    return ranked;
  });
  const describe = (o: ForYouOptions): string => `for-you a=${o.anchors ?? DEFAULT_FOR_YOU.anchors} r=${o.decay ?? DEFAULT_FOR_YOU.decay}${(o.normalise ?? DEFAULT_FOR_YOU.normalise) ? '' : ' raw'}`;
  out.set(`${describe({})} (default)`, (prefix) => forYou(served, prefix, MAX_RECOMMENDATIONS, null).map((e) => e.itemId));
  for (const variant of options.forYouVariants ?? []) out.set(describe(variant), (prefix) => forYou(served, prefix, MAX_RECOMMENDATIONS, null, variant).map((e) => e.itemId));
  return out;
}

function copyOf(log: EventLog): EventLog {
  const copy = new EventLog();
  for (let e = 0; e < log.length; e++) copy.addKeys(log.kind[e]!, log.items.idAt(log.item[e]!), log.session[e]!, log.user[e]!, log.order[e]!, log.time[e]!);
  return copy;
}

/** HR@10 and MRR@10 with their standard errors. */
function score(queries: readonly Query[], method: Method): { hitRate: number; hitRateError: number; mrr: number; mrrError: number } {
  let hits = 0;
  let reciprocal = 0;
  let reciprocal2 = 0;
  for (const { prefix, target } of queries) {
    const rank = method(prefix).slice(0, MAX_RECOMMENDATIONS).indexOf(target);
    if (rank < 0) continue;
    hits++;
    reciprocal += 1 / (rank + 1);
    reciprocal2 += 1 / (rank + 1) ** 2;
  }
  const n = Math.max(queries.length, 1);
  const hitRate = hits / n;
  const mrr = reciprocal / n;
  return {
    hitRate, hitRateError: Math.sqrt(Math.max(0, hitRate - hitRate * hitRate) / n),
    mrr, mrrError: Math.sqrt(Math.max(0, reciprocal2 / n - mrr * mrr) / n),
  };
}

/** Every method trained before the test split and scored on it; the validation split (the latest part of the
 * training part, trained on the rest) gives each its validation HR@10, where weightings are compared. */
export function evaluateShoppers(log: EventLog, options: ShopperTaskOptions = {}): ShopperEvaluation {
  const fraction = options.testFraction ?? 0.2;
  const outer = split(log, fraction);
  const inner = split(outer.train, fraction);
  const validation = methods(inner.train, options);
  const test = methods(outer.train, options);
  const rows: ShopperRow[] = [];
  for (const [name, method] of test) {
    rows.push({ method: name, validationHitRate: score(inner.queries, validation.get(name)!).hitRate, ...score(outer.queries, method), queries: outer.queries.length });
  }
  return { rows, trainEvents: outer.train.length, testSessions: outer.testSessions };
}

export function formatShopperTable(rows: readonly ShopperRow[]): string {
  const header = ['method', 'val HR@10', 'HR@10', '± se', 'MRR@10', '± se', 'queries'];
  const lines = rows.map((r) => [r.method, r.validationHitRate.toFixed(4), r.hitRate.toFixed(4), r.hitRateError.toFixed(4), r.mrr.toFixed(4), r.mrrError.toFixed(4), String(r.queries)]);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const fmt = (cells: string[]): string => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [fmt(header), widths.map((w) => '-'.repeat(w)).join('  '), ...lines.map(fmt)].join('\n');
}
