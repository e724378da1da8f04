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


/*
 * The defaults, chosen on validation splits (the latest 20% of the training part; the test split
 * picks nothing) of the logs in /work/shared/data by `evaluate`'s coordinate search. The figures
 * are validation NDCG@10 from `evaluate --grid --max-age-days 0`, each parameter varied around
 * these defaults (re-run after recency moved to its 1/4096 grid and order weights to exact
 * multiples of 1/2520: the chosen values did not change). Its standard error is about 0.0036 on
 * Diginetica post-browse and 0.004 on Instacart. --max-age-days 0: Diginetica's purchase times
 * run up to 153 days past their date, so 90 days before the newest event leave too little to
 * choose on (every post-browse method 0.0007 on validation; the README has the figures).
 * Post-browse (Diginetica views, the one log of views):
 * - Order and distance: pairs up to 10 apart weigh 1/distance, and half that where b came before
 *   the anchor: 0.0308, against 0.0304 for item sets (well within one standard error) and 0.0230
 *   forward only (sequential rules). A view before the anchor is evidence too (shoppers go back
 *   and forth between candidates), but less than one after it (b = 1: 0.0303, 0.25: 0.0297).
 *   Windows of 5 to 20 are within 0.0012; 1 (the next item only) 0.0186. Exponents 0 to 2 of the
 *   distance are within 0.0009 of 1.
 * - Recency: evidence halving every 14 days, 0.0308 (3 days 0.0297, 60 days 0.0307, 180 days
 *   0.0298, none 0.0295): the log spans 150 days and what is viewed together drifts.
 * - No popularity discount (d = 0): 0.0308, against 0.0301 at d = 0.3 and 0.0247 at 1. No prior:
 *   k = 1 already falls to 0.0162 (the most viewed items are not what one views next).
 * - Repeated views of one item collapsed into one position: no gain (0.0307), so not.
 * - With a catalogue, an item of the anchor's category counts three times (sameCategoryFactor 3):
 *   no public log has categories to measure it on, so it is set on the demo shop, where 12% of
 *   views are detours to random categories and one co-view of a detour would otherwise tie with a
 *   substitute (same-category share of the top 5: 80% at 1, 90% at 2, 93% at 3).
 * Next-best-product (Instacart baskets; Diginetica's purchases are too thin to decide anything:
 * 0.0016 to 0.0042 for every setting tried, about 3 to 8 hits, at a standard error of 0.0015):
 * - Item sets, d = 0.3, k = 100: 0.0385. Pairs by add-to-cart order: 0.0365 to 0.0373 whatever the
 *   window; d = 0 to 0.2 0.0384 to 0.0385, d = 0.5 0.0351; k = 30 0.0325, k = 0 0.0207 (a basket
 *   is a set; the most bought items are what thin evidence is best filled with where nothing else
 *   is known). Recency means nothing here (the preset's clock is the order id, 17 minutes in all).
 * - With a catalogue, the prior goes to the categories most bought with the anchor's (its own
 *   among them) instead of to popularity, and items of the anchor's own category count half: a
 *   second phone is a substitute, the case and charger the complements. Set on the demo shop,
 *   where that gives complements for every anchor whose category has them (demoAndStore.test.ts).
 *   Measured with Instacart's aisles as categories (`evaluate --categories products.csv
 *   --category-column aisle_id`), the association is best taken whole (categoryLift 0: 0.0354;
 *   0.5: 0.0351, 1: 0.0275, as chance alone puts fruit in most baskets), and halving is wrong
 *   there (f = 0.25: 0.0336, 2: 0.0402, 3: 0.0415): in a grocery, an aisle's items are bought
 *   together. The default keeps halving, which is what a shop of substitutable products needs;
 *   the README says so with the figures.
 * Recency leaves the lists of a live path equal to a full build's: with no prior, scaling every
 * weight by the same factor (a later reference time) scales c, n(a) and n(b) alike, and the
 * score c / (n(a)^(1-d) n(b)^d) not at all. A live path keeps the weights relative to a fixed
 * epoch (2^((t - epoch) / halfLife), renormalised now and then) and gets the same numbers.
 */
/** Post-browse scoring (see above). */
export const DEFAULT_POST_BROWSE: Scoring = { damping: 0, prior: 0, order: { window: 10, backward: 0.5, exponent: 1 }, halfLifeDays: 14, sameCategoryFactor: 3 };
/** Next-best-product scoring (see above). */
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
  /**
   * Weight of co-purchase across a user's whole history relative to within one order; default
   * 0.25: the same basket is a statement about the pair, months apart is mostly about the user.
   */
  userHistoryWeight?: number;
  /**
   * Events older than this many days before the newest event of the log stop counting (the
   * server passes RECS_EVENTS_MAX_AGE_DAYS, 90 by default); default 0 here: none (evaluation and
   * benchmarks on historical logs). Age is measured against the newest event rather than the
   * clock: in a live shop that is now, and a public log from 2016 stays usable as it is.
   */
  maxAgeDays?: number;
  /**
   * A live model (live.ts) keeps next-best-product from its last full build's prior statistics
   * (cooccurrence.ts, PriorStats) and builds it whole again, in a worker where it can, once the
   * purchases taken in or out since exceed this share of those that build counted; default
   * DEFAULT_NEXT_BEST_REBUILD_SHARE. 0: after every batch with purchases.
   */
  nextBestRebuildShare?: number;
  /**
   * ... or once that build is older than this many seconds with purchases since (the server
   * passes RECS_NBP_REBUILD_SECONDS); default DEFAULT_NEXT_BEST_REBUILD_SECONDS. 0: after every
   * batch with purchases.
   */
  nextBestRebuildSeconds?: number;
  /**
   * A live model's anchor with at least this many positions keeps its neighbours' sums as its
   * groups come and go, rather than gathering them from every position when a batch made it
   * re-rank (liveNeighbours.ts, NeighbourSums); default 128. The lists are the same either way (tests take
   * every anchor that way with 1).
   */
  hotPositions?: number;
  /** See NeighbourOptions.parallelFromPositions (a full build's second thread); default PARALLEL_FROM_POSITIONS. */
  parallelFromPositions?: number;
}

/**
 * Default of ModelOptions.nextBestRebuildShare: one full build per 5% of new purchases costs
 * about 20 times a build's cost per purchase, spread over them, where a build per flush cost the
 * whole build every 100 ms under a stream of purchases; in between, scores drift only by the
 * popularity of neighbours and categories, which 5% more purchases barely move.
 */
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

/**
 * The facts a build knows of items (see ItemFacts), by dense index; empty without a catalogue.
 * Categories and families are numbered in item order, so that a live model that recomputes them
 * after new records numbers them as a full build over the same items does; where the order of
 * categories counts, it is their names' (categoryRank).
 */
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
  /** Events of each kind per item. */
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

/**
 * Builds both neighbour lists from the log. Catalogue items are added to the log's item index so
 * that fallbacks can reach items nobody has seen yet; without a catalogue every item of the log is
 * a candidate (evaluation on ids).
 */
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

/**
 * Compares items (indexes) by descending `first` count, then `second`, then ascending item id: a
 * total order that every process gives the same events alike (indexes follow the order items came in).
 */
export function byPopularity(first: Float64Array, second: Float64Array, items: ItemIndex): (a: number, b: number) => number {
  // the ids' array itself: most items tie on counts of a few, and a sort of a million compares
  // them some twenty million times (a method call each was 6% of a 10M-event build)
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
