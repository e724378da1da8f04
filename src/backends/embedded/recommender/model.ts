import type { Catalog } from '../catalog.js';
import { categoryOf, familyOf } from '../catalog.js';
import type { EventLog, ItemIndex } from '../events/event.js';
import { KIND_PURCHASE, KIND_VIEW } from '../events/event.js';
import { buildNeighbours } from './cooccurrence.js';
import type { ItemFacts, Neighbours, Weighting } from './cooccurrence.js';
import { userHistories, visits } from './sessions.js';

/** How one list turns co-occurrence into scores (see Weighting for the formulas). */
export interface Scoring {
  weighting: Weighting;
  /** The s in the c / (c + s) factor shrinking cosine, lift and pmi scores of thin evidence; default 2. */
  shrinkage?: number;
  /** The d of `damped`: the neighbour's popularity is discounted by n(b)^d; default 0.2. */
  damping?: number;
  /** The k of `damped`: pseudo-groups spread by popularity; default 0. */
  prior?: number;
}

/*
 * The defaults, chosen on validation splits (the latest 20% of the training part; the test split
 * picks nothing) of the logs in /work/shared/data: `evaluate --grid` prints every grid point.
 * Validation NDCG@10 (± standard error), count / damped d=0.3 k=0 / damped d=0.3 k=100 / popularity:
 *   Diginetica post-browse         0.0279 ± 0.0033 / 0.0267 / 0.0271 / 0.0034
 *   Diginetica next-best-product   0.0042 ± 0.0016 / 0.0037 / 0.0037 / 0.0034
 *   Instacart next-best-product    0.0295 ± 0.0037 / 0.0207 / 0.0385 / 0.0368
 * - Popularity discount d = 0.3. On Diginetica NDCG is flat for d from 0 to 0.5 (all within 0.4
 *   standard errors of raw count) and loses about one standard error from d = 0.75 on (towards
 *   lift); 0.3 sits inside the flat range, so the model stops ranking an item first just because
 *   it is everywhere at no measurable cost. Shrunk cosine, lift and pmi measured below count on
 *   every log whatever their shrinkage (best: 0.0267, 0.0255, 0.0269 on Diginetica post-browse).
 * - Popularity prior k = 100 for next-best-product: on Instacart (977 orders, most pairs seen
 *   once) the baseline of most-bought items beats every pure co-occurrence model; smoothing the
 *   counts towards chance with k pseudo-orders beats both (0.0385 against 0.0368 and 0.0295) and
 *   changes nothing measurable on Diginetica. It only matters for anchors seen in fewer than
 *   about k groups: on a full-size log the co-purchase evidence decides.
 * - No prior for post-browse: it did nothing measurable there (0.0271 against 0.0267), and with a
 *   catalogue a thin anchor is better filled from its own category (the fallbacks) than with
 *   globally popular items, which is what post-browse must not be about.
 */
/** Post-browse scoring: damped d = 0.3, no prior (see above). */
export const DEFAULT_POST_BROWSE: Scoring = { weighting: 'damped', damping: 0.3, prior: 0 };
/** Next-best-product scoring: damped d = 0.3, prior k = 100 (see above). */
export const DEFAULT_NEXT_BEST: Scoring = { weighting: 'damped', damping: 0.3, prior: 100 };

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
   * Next-best-product score factor for an item of the anchor's leaf category; default 0.5: a
   * second phone is a substitute, the case is the complement.
   */
  sameCategoryFactor?: number;
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
    { ...(options.postBrowse ?? DEFAULT_POST_BROWSE), topK: options.topK ?? 30 },
    facts,
  );
  const nextBest = buildNeighbours(
    log,
    [
      { sequences: visits(log, KIND_PURCHASE), maxItems },
      { sequences: userHistories(log, options.userHistoryWeight ?? 0.25), maxItems: options.maxItemsPerHistory ?? 50, keepLast: true },
    ],
    { ...(options.nextBest ?? DEFAULT_NEXT_BEST), topK: options.topK ?? 30, sameCategoryFactor: options.sameCategoryFactor ?? 0.5 },
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
  return { items: log.items, postBrowse, nextBest, views, purchases, popularViewed, popularBought, candidate, buildMs: performance.now() - t0 };
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
