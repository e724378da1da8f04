import type { Sequences } from './sessions.js';

/**
 * How a pair's co-occurrence weight c(a,b) depends on where b stands relative to a within a group
 * (a visit, an order). Absent: every pair of distinct items of the group counts 1 (an item set).
 * Present: every pair of positions i (item a) and j (item b) at most `window` apart counts
 * 1 / |j - i|^exponent, times `backward` where b came before a. window 10, backward 0, exponent 1
 * is the sequential rules of Ludewig & Jannach (2018); window 1, backward 0 counts only the next
 * item (consecutive co-occurrence).
 */
export interface OrderWeights {
  window: number;
  backward: number;
  exponent: number;
}

/**
 * How co-occurrence becomes a score, for an anchor a and a neighbour b, given c(a,b) (see
 * OrderWeights), n(a), n(b) (weighted groups holding each item) and N (all groups):
 *   (c + k π_a(b)) / (n(a)^(1-d) n(b)^d)
 * d (`damping`) discounts the neighbour's popularity: d = 0 ranks by raw count, 0.5 like cosine,
 * 1 like lift (c against what b's popularity alone would give: what is "bought anyway").
 * k (`prior`) adds k pseudo-groups of a spread over items by π_a(b): with a catalogue, by how often
 * b's category is in a group with a's (see categoryAssociation) times b's share of its
 * category; without one (or for an anchor whose category has no partner), by popularity n(b)/N.
 * It decides where evidence is thin. Items of a's own category are multiplied by
 * `sameCategoryFactor`, evidence and prior alike.
 *
 * Every term is a sum of per-event contributions (c, n, N, the category counts), so a live path
 * can apply an event without a rebuild: append it to its group; add its pair weights against the
 * group's positions within the window (forward from the earlier ones to it, backward from it to
 * them), and its category pairs if its category is new to the group; bump n(b) and N where the
 * item is new to the group. Scores are then computed when an anchor is looked up, from the counts
 * as they stand (the popularity discount, lift and the prior are ratios of counts, never stored
 * scores), over the anchor's pairs touched since the build merged with its built neighbours, and
 * the category prior lists of the categories touched re-ranked likewise: the lists are those a
 * full build over the same events gives, as long as the live path applies the build's caps too
 * (a group's first maxItems distinct items; the top-K per anchor).
 */
export interface Scoring {
  /** d, default 0.3. */
  damping?: number;
  /** k, default 0. */
  prior?: number;
  /** Order and distance within a group; default none (item sets). */
  order?: OrderWeights;
  /** Views of the same item one after the other count as one position (ordered groups only); default false. */
  collapseRepeats?: boolean;
  /** A group's weight halves every this many days (see recencyWeight); default 0 (no decay). */
  halfLifeDays?: number;
  /**
   * Score factor for a neighbour in the anchor's leaf category (with a catalogue); default 1.
   * Below 1 for next-best-product (a second phone is a substitute, the case the complement),
   * above for post-browse (a shopper comparing phones wants phones).
   */
  sameCategoryFactor?: number;
  /**
   * How much of the co-occurrence chance gives two categories is taken off before the prior
   * follows it (see categoryAssociation); default 0: the categories most bought with the anchor's,
   * including those bought with everything.
   */
  categoryLift?: number;
  /**
   * An evaluation-only pair formula replacing the damped one (cosine, lift, pmi: tools/evaluate.ts).
   * Never set on the request path: a function cannot cross the build worker's boundary.
   */
  pairScore?: PairScore;
}

/** score(c, n(a), n(b), N) of an evaluation-only weighting. */
export type PairScore = (c: number, na: number, nb: number, total: number) => number;

/** Precomputed neighbours in CSR form: item a's are `item[start[a] .. start[a+1])`, best first. */
export interface Neighbours {
  start: Int32Array;
  item: Int32Array;
  score: Float64Array;
  /** Unweighted number of groups shared with the anchor (within the window where ordered). */
  evidence: Int32Array;
  /**
   * Items that compete for an anchor without shared groups, by the prior alone: list p is
   * `priorItem[priorStart[p] .. priorStart[p+1])`, best first, with `priorScore` its score up to
   * the anchor's factor `anchorScale[a]`. List c serves anchors of category c; the last list
   * (index `priorStart.length - 2`) serves the others and every category whose own list is
   * empty. Empty without a prior. Kept per category rather than merged into every item's
   * neighbours: one list serves thousands of anchors at lookup, where merging two sorted
   * lists costs less than a microsecond.
   */
  priorStart: Int32Array;
  priorItem: Int32Array;
  priorScore: Float64Array;
  /** n(a)^(d-1) (1 for an item in no group); empty without a prior. */
  anchorScale: Float64Array;
  /** 1 where a prior item of the anchor's own category keeps its score; else sameCategoryFactor. */
  sameCategoryFactor: number;
  /** Anchors re-ranked since the build (live.ts): their lists replace the CSR ones. */
  overrides?: Map<number, AnchorList>;
  /** What the prior took from the whole log (see PriorStats); absent without a prior. */
  priorStats?: PriorStats;
}

/**
 * What a score with a prior takes from the whole log rather than from the anchor's own groups:
 * N, every category's n(A) and the category partners (categoryAssociation), and each item's n(b)
 * on the neighbour's side (its popularity discount n(b)^-d and its share of its category). One
 * new order moves all of them a little, and through them every anchor's list; the anchor's own
 * terms, c(a,b) and n(a), move only for the items of the groups that changed. A build given these
 * statistics (buildNeighbours' `frozen`) scores with them instead of its own, except for an item
 * they do not know (n(b) = 0 in them: new since) whose current n(b) is taken: so a live path (see
 * live.ts) that keeps them from its last full build re-ranks only the anchors a batch touched, and
 * still gives that build's lists bit for bit. The prior lists (Neighbours.priorStart) come from
 * them alone, so they are those of the build that made them.
 */
export interface PriorStats {
  /** N: weighted groups. */
  total: number;
  /** n(b) by item index (the real one, not the build's rank). */
  occurrences: Float64Array;
  /** n(A) by category. */
  categoryOccurrences: Float64Array;
  /** Category A's partners are `partner[partnerStart[A] .. partnerStart[A+1])` with their weights. */
  partnerStart: Int32Array;
  partner: Int32Array;
  partnerWeight: Float64Array;
}

/** What the build may know of items (by dense index), to spend the top-K only on usable items. */
export interface ItemFacts {
  /** 1 where the item may be recommended (it is in the catalogue); all items when absent. */
  candidate?: Uint8Array;
  /** The family (parentItemId interned); -1 unknown. Same family is never a neighbour. */
  family?: Int32Array;
  /** The leaf category interned (0 .. categories-1); -1 unknown. */
  category?: Int32Array;
  /**
   * Each category's rank among the categories' names (by category number): ties between
   * partner categories go by it (categoryAssociation), so that the lists do not depend on the
   * order a process met the items in, which numbers the categories. Absent: by number.
   */
  categoryRank?: Int32Array;
}

/** Options of buildNeighbours. */
export interface NeighbourOptions extends Scoring {
  /** Neighbours kept per item before lookup-time filters; default 30. */
  topK?: number;
  /**
   * A build over at least this many events in its groups (visits, orders, histories), and
   * 2 * ANCHOR_CHUNK items, ranks its anchors in two threads where there are two cores; default
   * PARALLEL_FROM_POSITIONS. 0: always (tests), Infinity: never.
   */
  parallelFromPositions?: number;
}

/**
 * Re-ranked lists of some anchors that replace their `start`-indexed ones (the live path, see
 * live.ts); absent on a built model.
 */
export interface AnchorList {
  item: Int32Array;
  score: Float64Array;
  evidence: Int32Array;
}

export interface GroupSet {
  sequences: Sequences;
  /**
   * Distinct items kept per group. Pairs grow with the square of a group's size: one crawler
   * session of 5,000 views would cost 12.5M pair updates and say nothing about shoppers. Real
   * visits and baskets rarely exceed a few dozen distinct items, so the cap only touches outliers.
   */
  maxItems: number;
  /** Keep the latest items of a long group instead of the first (user histories). */
  keepLast?: boolean;
}

/** Groups in CSR form: group g is `items[start[g] .. start[g+1])` (positions in time order where ordered), weighing `weight[g]`. */
export interface Groups {
  start: Int32Array;
  items: Int32Array;
  weight: Float64Array;
}
