import type { Catalog } from '../catalog.js';
import { categoryOf, familyOf } from '../catalog.js';
import type { EventLog } from '../events/event.js';
import { KIND_PURCHASE, KIND_VIEW } from '../events/event.js';
import { buildNeighbours } from './cooccurrence.js';
import type { ItemFacts, Neighbours, Weighting } from './cooccurrence.js';
import { userHistories, visits } from './sessions.js';

/**
 * The default weighting of both lists, chosen by `evaluate` on the real logs in /work/shared/data
 * (latest 20% held out): raw `count` had the best NDCG@10 on all three: Diginetica post-browse
 * 0.0292 (pmi 0.0243, cosine 0.0235, lift 0.0211), Diginetica next-best-product 0.0090 (lift
 * 0.0087, cosine 0.0084), Instacart baskets 0.0306 (cosine 0.0202, pmi 0.0154). On logs this
 * sparse most pairs are seen once, and the popularity-normalised weightings then rank one-off
 * pairs of rare items first; the popularity baseline itself beats every model on Instacart.
 * The price is coverage (Instacart: 35% of items recommended against 73% with cosine), so
 * re-run `evaluate` on a full-size log before trusting this choice there.
 */
export const DEFAULT_WEIGHTING: Weighting = 'count';

/** Options of buildModel; every field has a default. */
export interface ModelOptions {
  /** Weighting of co-occurrence for post-browse; default DEFAULT_WEIGHTING. */
  postBrowseWeighting?: Weighting;
  /** Weighting of co-occurrence for next-best-product; default DEFAULT_WEIGHTING. */
  nextBestWeighting?: Weighting;
  /** The s in the c / (c + s) factor shrinking cosine, lift and pmi scores of thin evidence; default 2. */
  shrinkage?: number;
  /** The d of the `damped` weighting; default 0.2. */
  damping?: number;
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
   * Next-best-product score factor for an item of the anchor's leaf category; default 0.5: a
   * second phone is a substitute, the case is the complement.
   */
  sameCategoryFactor?: number;
}

/** The built model: neighbours and popularity by dense item index (log.items). */
export interface RecModel {
  log: EventLog;
  postBrowse: Neighbours;
  nextBest: Neighbours;
  /** Events of each kind per item. */
  views: Float64Array;
  purchases: Float64Array;
  /** Candidate items by descending views (then purchases): the post-browse fallback. */
  popularViewed: Int32Array;
  /** Candidate items by descending purchases (then views): the next-best-product fallback. */
  popularBought: Int32Array;
  /** 1 where an item may be recommended; null when every item may (no catalogue). */
  candidate: Uint8Array | null;
  buildMs: number;
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
  const facts: ItemFacts = {};
  let candidate: Uint8Array | null = null;
  if (catalog !== null) {
    candidate = new Uint8Array(nItems);
    const family = new Int32Array(nItems).fill(-1);
    const category = new Int32Array(nItems).fill(-1);
    const families = new Map<number, number>();
    const categories = new Map<string, number>();
    for (let i = 0; i < nItems; i++) {
      const item = catalog.get(log.items.idAt(i));
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
    facts.candidate = candidate;
    facts.family = family;
    facts.category = category;
  }
  const maxItems = options.maxItemsPerGroup ?? 30;
  const groupOptions = options.sessionGapMs === undefined ? {} : { sessionGapMs: options.sessionGapMs };
  const postBrowse = buildNeighbours(
    log,
    [{ sequences: visits(log, KIND_VIEW, groupOptions), maxItems }],
    { weighting: options.postBrowseWeighting ?? DEFAULT_WEIGHTING, topK: options.topK ?? 30, shrinkage: options.shrinkage ?? 2, damping: options.damping ?? 0.2 },
    facts,
  );
  const nextBest = buildNeighbours(
    log,
    [
      { sequences: visits(log, KIND_PURCHASE), maxItems },
      { sequences: userHistories(log, options.userHistoryWeight ?? 0.25), maxItems: options.maxItemsPerHistory ?? 50, keepLast: true },
    ],
    { weighting: options.nextBestWeighting ?? DEFAULT_WEIGHTING, topK: options.topK ?? 30, shrinkage: options.shrinkage ?? 2, damping: options.damping ?? 0.2, sameCategoryFactor: options.sameCategoryFactor ?? 0.5 },
    facts,
  );
  const views = new Float64Array(nItems);
  const purchases = new Float64Array(nItems);
  for (let i = 0; i < log.length; i++) {
    if (log.kind[i] === KIND_PURCHASE) purchases[log.item[i]!]!++;
    else views[log.item[i]!]!++;
  }
  const popularViewed = popularityOrder(views, purchases, candidate);
  const popularBought = popularityOrder(purchases, views, candidate);
  return { log, postBrowse, nextBest, views, purchases, popularViewed, popularBought, candidate, buildMs: performance.now() - t0 };
}

/** Compares items by descending `first` count, then `second`, then index (a stable, total order). */
export function byPopularity(first: Float64Array, second: Float64Array): (a: number, b: number) => number {
  return (a, b) => first[b]! - first[a]! || second[b]! - second[a]! || a - b;
}

/** Candidates by descending `first` count, then `second`; never-seen items last. */
function popularityOrder(first: Float64Array, second: Float64Array, candidate: Uint8Array | null): Int32Array {
  const seen: number[] = [];
  const unseen: number[] = [];
  for (let i = 0; i < first.length; i++) {
    if (candidate !== null && candidate[i] !== 1) continue;
    if (first[i]! + second[i]! > 0) seen.push(i);
    else unseen.push(i);
  }
  seen.sort(byPopularity(first, second));
  const out = new Int32Array(seen.length + unseen.length);
  out.set(seen);
  out.set(unseen, seen.length);
  return out;
}
