import type { Sequences } from './sessions.js';

/** How c(a,b) depends on where b stands from a within a group: pairs at most `window` apart count 1 /
 * distance^exponent, times `backward` where b came first (docs/recommender.md, "How a pair is scored"). */
export interface OrderWeights {
  window: number;
  backward: number;
  exponent: number;
}

/** How co-occurrence becomes a score: (c + k π_a(b)) / (n(a)^(1-d) n(b)^d). Every term is a sum of per-event parts, so
 * a live path gives a full build's lists without a rebuild (docs/recommender.md, "How a pair is scored"). */
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
  /** Score factor for a neighbour in the anchor's leaf category (with a catalogue); default 1. */
  sameCategoryFactor?: number;
  /** How much of the co-occurrence chance gives two categories is taken off before the prior follows it; default 0. */
  categoryLift?: number;
  /** An evaluation-only pair formula (tools/evaluate.ts): a function cannot cross the build worker's boundary. */
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
  /** The prior's lists, one per category and a last one for the rest, merged at lookup: one list serves thousands of
   * anchors. Scores are up to the anchor's factor `anchorScale[a]`. */
  priorStart: Int32Array;
  priorItem: Int32Array;
  priorScore: Float64Array;
  /** n(a)^(d-1) (1 for an item in no group); empty without a prior. */
  anchorScale: Float64Array;
  /** 1 where a prior item of the anchor's own category keeps its score; else sameCategoryFactor. */
  sameCategoryFactor: number;
  /** Anchors re-ranked since the build (the live model): their lists replace the CSR ones. */
  overrides?: Map<number, AnchorList>;
  /** What the prior took from the whole log; absent without a prior. */
  priorStats?: PriorStats;
}

/** What a score with a prior takes from the whole log. A build given them scores with them, so a live path re-ranks
 * only the anchors a batch touched and still gives that build's lists. */
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
  /** Each category's rank by name, for ties between categories: the numbering depends on the order items came in. */
  categoryRank?: Int32Array;
}

/** Options of buildNeighbours. */
export interface NeighbourOptions extends Scoring {
  /** Neighbours kept per item before lookup-time filters; default 30. */
  topK?: number;
  /** Groups' events from which a build ranks in two threads; default PARALLEL_FROM_POSITIONS. 0: always, Infinity: never. */
  parallelFromPositions?: number;
}

/** An anchor's neighbours, best first: `item[from .. to)` of the arrays (a live model's re-ranked list, else the build's). */
export interface NeighbourRange extends AnchorList {
  from: number;
  to: number;
}

/** Where `anchor`'s neighbours are; an empty range for an item beyond the build (no override yet). */
export function neighboursOf(n: Neighbours, anchor: number): NeighbourRange {
  const override = n.overrides?.get(anchor);
  if (override !== undefined) return { ...override, from: 0, to: override.item.length };
  const inside = anchor >= 0 && anchor + 1 < n.start.length;
  return { item: n.item, score: n.score, evidence: n.evidence, from: inside ? n.start[anchor]! : 0, to: inside ? n.start[anchor + 1]! : 0 };
}

/** One anchor's re-ranked list (see Neighbours.overrides). */
export interface AnchorList {
  item: Int32Array;
  score: Float64Array;
  evidence: Int32Array;
}

export interface GroupSet {
  sequences: Sequences;
  /** Distinct items kept per group: pairs grow with the square of a group's size, and outliers (crawlers) say nothing. */
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
