import { DEFAULT_NBP_REBUILD_SECONDS } from '../config/defaults.js';
import { buildNeighbours } from './buildNeighbours.js';
import { categoryOf, familyOf } from './catalog.js';
import type { Catalog } from './catalog.js';
import { KIND_PURCHASE, KIND_VIEW } from './eventLog.js';
import type { EventLog } from './eventLog.js';
import type { ItemIndex } from './interners.js';
import type { GroupSet, ItemFacts, NeighbourOptions, Neighbours, Scoring } from './neighbours.js';
import { userHistories, visits } from './sessions.js';
import { DAY_MS } from './weights.js';

export type { Scoring } from './neighbours.js';

/** Post-browse scoring, chosen by `evaluate`'s search (docs/recommender.md, "How the defaults were chosen"). */
export const DEFAULT_POST_BROWSE: Scoring = { damping: 0, prior: 0, order: { window: 10, backward: 0.5, exponent: 1 }, halfLifeDays: 14, sameCategoryFactor: 3 };
/** Next-best-product scoring, chosen likewise. */
export const DEFAULT_NEXT_BEST: Scoring = { damping: 0.3, prior: 100, sameCategoryFactor: 0.5 };

/** Options of buildModel; every field has a default. */
export interface ModelOptions {
  /** Scoring of co-views for post-browse; default DEFAULT_POST_BROWSE. */
  postBrowse?: Scoring;
  /** Scoring of co-purchases for next-best-product; default DEFAULT_NEXT_BEST. */
  nextBest?: Scoring;
  /** Neighbours kept per item before lookup-time filters; default 30. */
  topK?: number;
  /** Distinct items of a visit or order taken into account; default 30 (see GroupSet.maxItems). */
  maxItemsPerGroup?: number;
  /** Distinct latest items of a user's purchase history taken into account; default 50. */
  maxItemsPerHistory?: number;
  /** Idle time splitting a user's views into visits where there are no session ids; default 30 min. */
  sessionGapMs?: number;
  /** Weight of co-purchase across a user's whole history relative to within one order; default 0.25: the same basket is
   * a statement about the pair, months apart is mostly about the user. */
  userHistoryWeight?: number;
  /** Events this many days older than the log's newest event (not the clock) stop counting; default 0: none. */
  maxAgeDays?: number;
  /** Purchases since the last full build, as a share of those it counted, past which a live model rebuilds next-best-product; default DEFAULT_NEXT_BEST_REBUILD_SHARE, 0: every batch. */
  nextBestRebuildShare?: number;
  /** ... or once that build is older than this many seconds with purchases since; default DEFAULT_NEXT_BEST_REBUILD_SECONDS, 0: after every batch. */
  nextBestRebuildSeconds?: number;
  /** A live anchor with at least this many positions keeps its neighbours' sums (NeighbourSums); default 128. The lists are the same either way. */
  hotPositions?: number;
  /** See NeighbourOptions.parallelFromPositions (a full build's second thread); default PARALLEL_FROM_POSITIONS. */
  parallelFromPositions?: number;
}

/** Default of nextBestRebuildShare: a few more purchases barely move the statistics, a build per flush costs a whole build. */
export const DEFAULT_NEXT_BEST_REBUILD_SHARE = 0.05;
/** Default of ModelOptions.nextBestRebuildSeconds: RECS_NBP_REBUILD_SECONDS's. */
export const DEFAULT_NEXT_BEST_REBUILD_SECONDS = DEFAULT_NBP_REBUILD_SECONDS;

/** The newest event time of the log (-Infinity when empty). */
export function latestTime(log: EventLog): number {
  let latest = -Infinity;
  for (let i = 0; i < log.length; i++) if (log.time[i]! > latest) latest = log.time[i]!;
  return latest;
}

/** The time before which events no longer count (see ModelOptions.maxAgeDays). */
export function cutoffOf(latest: number, options: ModelOptions): number {
  const ms = maxAgeMsOf(options);
  return ms > 0 ? latest - ms : -Infinity;
}

/** How far before the newest event events count (cutoffOf), in ms; 0: all of them. */
export function maxAgeMsOf(options: ModelOptions): number {
  const days = options.maxAgeDays ?? 0;
  return days > 0 ? days * DAY_MS : 0;
}

/** The facts a build knows of items by dense index, categories numbered in item order as a live model numbers them. */
export function itemFacts(items: ItemIndex, catalog: Catalog | null): ItemFacts {
  if (catalog === null) return {};
  const nItems = items.size;
  const candidate = new Uint8Array(nItems);
  const family = new Int32Array(nItems).fill(-1);
  const category = new Int32Array(nItems).fill(-1);
  const families = new Map<number, number>();
  const categories = new Map<string, number>();
  for (let i = 0; i < nItems; i++) {
    const item = catalog.get(items.idAt(i));
    if (item === undefined) continue;
    candidate[i] = 1;
    const f = familyOf(item);
    let fi = families.get(f);
    if (fi === undefined) families.set(f, (fi = families.size));
    family[i] = fi;
    const c = categoryOf(item);
    if (c !== null) {
      let ci = categories.get(c);
      if (ci === undefined) categories.set(c, (ci = categories.size));
      category[i] = ci;
    }
  }
  const names = [...categories.keys()];
  const byName = names.map((_, c) => c).sort((x, y) => (names[x]! < names[y]! ? -1 : names[x]! > names[y]! ? 1 : 0));
  const categoryRank = new Int32Array(names.length);
  byName.forEach((c, r) => (categoryRank[c] = r));
  return { candidate, family, category, categoryRank };
}

/** The built model: neighbours and popularity by dense item index (log.items). */
export interface RecModel {
  /** Item ids to the dense indexes of every array here (the log's index, shared with it). */
  items: ItemIndex;
  postBrowse: Neighbours;
  nextBest: Neighbours;
  views: Float64Array;
  purchases: Float64Array;
  /** Candidate items by descending views (then purchases): the post-browse fallback. */
  popularViewed: Int32Array;
  /** Candidate items by descending purchases (then views): the next-best-product fallback. */
  popularBought: Int32Array;
  /** Each item's leaf category interned (-1 none); null without a catalogue. */
  category: Int32Array | null;
  buildMs: number;
  /** A live model (live.ts) brings an anchor's list up to date before a lookup reads it. */
  refresh?(kind: 'postBrowse' | 'nextBest', anchor: number): void;
}

/** Builds both neighbour lists; catalogue items join the log's item index so that fallbacks reach items nobody saw. */
export function buildModel(log: EventLog, options: ModelOptions = {}, catalog: Catalog | null = null): RecModel {
  const t0 = performance.now();
  if (catalog !== null) for (const item of catalog.values()) log.items.intern(item.itemId);
  const nItems = log.items.size;
  const facts = itemFacts(log.items, catalog);
  const since = cutoffOf(latestTime(log), options);
  const postBrowse = buildNeighbours(log, postBrowseSets(log, options, since), postBrowseScoring(options), facts);
  const nextBest = buildNeighbours(log, nextBestSets(log, options, since), nextBestScoring(options), facts);
  const views = new Float64Array(nItems);
  const purchases = new Float64Array(nItems);
  for (let i = 0; i < log.length; i++) {
    if (log.time[i]! < since) continue;
    if (log.kind[i] === KIND_PURCHASE) purchases[log.item[i]!]!++;
    else views[log.item[i]!]!++;
  }
  const candidate = facts.candidate ?? null;
  const popularViewed = popularityOrder(views, purchases, candidate, log.items);
  const popularBought = popularityOrder(purchases, views, candidate, log.items);
  return { items: log.items, postBrowse, nextBest, views, purchases, popularViewed, popularBought, category: facts.category ?? null, buildMs: performance.now() - t0 };
}

/** Post-browse's scoring with the options' top-K. */
export function postBrowseScoring(options: ModelOptions): NeighbourOptions {
  return { ...(options.postBrowse ?? DEFAULT_POST_BROWSE), topK: options.topK ?? 30, parallelFromPositions: options.parallelFromPositions };
}

/** Next-best-product's scoring with the options' top-K. */
export function nextBestScoring(options: ModelOptions): NeighbourOptions {
  return { ...(options.nextBest ?? DEFAULT_NEXT_BEST), topK: options.topK ?? 30, parallelFromPositions: options.parallelFromPositions };
}

/** Post-browse's groups: visits of views from `since`. */
export function postBrowseSets(log: EventLog, options: ModelOptions, since: number): GroupSet[] {
  const groupOptions = options.sessionGapMs === undefined ? { since } : { sessionGapMs: options.sessionGapMs, since };
  return [{ sequences: visits(log, KIND_VIEW, groupOptions), maxItems: options.maxItemsPerGroup ?? 30 }];
}

/** Next-best-product's groups: orders, and users' purchase histories, from `since`. */
export function nextBestSets(log: EventLog, options: ModelOptions, since: number): GroupSet[] {
  return [
    { sequences: visits(log, KIND_PURCHASE, { since }), maxItems: options.maxItemsPerGroup ?? 30 },
    { sequences: userHistories(log, options.userHistoryWeight ?? 0.25, since), maxItems: options.maxItemsPerHistory ?? 50, keepLast: true },
  ];
}

/** Compares items (indexes) by descending `first` count, then `second`, then ascending item id: a total order that
 * every process gives the same events alike (indexes follow the order items came in). */
export function byPopularity(first: Float64Array, second: Float64Array, items: ItemIndex): (a: number, b: number) => number {
  // the ids' array itself, not a method call: most items tie on counts, and a sort compares them often
  const ids = items.idsNow();
  return (a, b) => first[b]! - first[a]! || second[b]! - second[a]! || ids[a]! - ids[b]!;
}

/** Candidates by descending `first` count, then `second`; never-seen items last. */
export function popularityOrder(first: Float64Array, second: Float64Array, candidate: Uint8Array | null, items: ItemIndex): Int32Array {
  const seen: number[] = [];
  const unseen: number[] = [];
  for (let i = 0; i < first.length; i++) {
    if (candidate !== null && candidate[i] !== 1) continue;
    if (first[i]! + second[i]! > 0) seen.push(i);
    else unseen.push(i);
  }
  const order = byPopularity(first, second, items);
  seen.sort(order);
  unseen.sort(order); // counts of 0 alike: by id
  const out = new Int32Array(seen.length + unseen.length);
  out.set(seen);
  out.set(unseen, seen.length);
  return out;
}
