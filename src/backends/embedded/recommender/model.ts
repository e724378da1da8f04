import type { Catalog } from '../catalog.js';
import { categoryOf, familyOf } from '../catalog.js';
import type { EventLog } from '../events/event.js';
import { KIND_PURCHASE, KIND_VIEW } from '../events/event.js';
import { buildNeighbours } from './cooccurrence.js';
import type { ItemFacts, Neighbours, Weighting } from './cooccurrence.js';
import { userHistories, visits } from './sessions.js';

/**
 * The default weighting of both lists, chosen by `evaluate` on the real logs in
 * /work/shared/data (Diginetica views and purchases, Instacart baskets): see DEFAULT_WEIGHTING's
 * note in the report of that command. Cosine had the best NDCG@10 on post-browse and on both
 * next-best-product logs; lift and pmi chase one-off pairs of rare items on logs this sparse,
 * and count is popularity in disguise.
 */
export const DEFAULT_WEIGHTING: Weighting = 'cosine';

/** Options of buildModel; every field has a default. */
export interface ModelOptions {
  /** Weighting of co-occurrence for post-browse; default DEFAULT_WEIGHTING. */
  postBrowseWeighting?: Weighting;
  /** Weighting of co-occurrence for next-best-product; default DEFAULT_WEIGHTING. */
  nextBestWeighting?: Weighting;
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
  /** Candidate items by descending popularity (views + 3 x purchases). */
  popular: Int32Array;
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
    { weighting: options.postBrowseWeighting ?? DEFAULT_WEIGHTING, topK: options.topK ?? 30 },
    facts,
  );
  const nextBest = buildNeighbours(
    log,
    [
      { sequences: visits(log, KIND_PURCHASE), maxItems },
      { sequences: userHistories(log, options.userHistoryWeight ?? 0.25), maxItems: options.maxItemsPerHistory ?? 50, keepLast: true },
    ],
    { weighting: options.nextBestWeighting ?? DEFAULT_WEIGHTING, topK: options.topK ?? 30, sameCategoryFactor: options.sameCategoryFactor ?? 0.5 },
    facts,
  );
  const views = new Float64Array(nItems);
  const purchases = new Float64Array(nItems);
  for (let i = 0; i < log.length; i++) {
    if (log.kind[i] === KIND_PURCHASE) purchases[log.item[i]!]!++;
    else views[log.item[i]!]!++;
  }
  const popular = popularityOrder(views, purchases, candidate);
  return { log, postBrowse, nextBest, views, purchases, popular, candidate, buildMs: performance.now() - t0 };
}

/** Popularity score of an item: a purchase says more than a view. */
export function popularity(model: Pick<RecModel, 'views' | 'purchases'>, i: number): number {
  return model.views[i]! + 3 * model.purchases[i]!;
}

function popularityOrder(views: Float64Array, purchases: Float64Array, candidate: Uint8Array | null): Int32Array {
  const seen: number[] = [];
  const unseen: number[] = [];
  for (let i = 0; i < views.length; i++) {
    if (candidate !== null && candidate[i] !== 1) continue;
    if (views[i]! + purchases[i]! > 0) seen.push(i);
    else unseen.push(i);
  }
  const score = (i: number): number => views[i]! + 3 * purchases[i]!;
  seen.sort((a, b) => score(b) - score(a) || a - b);
  const out = new Int32Array(seen.length + unseen.length);
  out.set(seen);
  out.set(unseen, seen.length);
  return out;
}
