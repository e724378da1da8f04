import { availableParallelism } from 'node:os';
import { startAnchorThread } from './anchorThread.js';
import type { EventLog } from './eventLog.js';
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
interface Groups {
  start: Int32Array;
  items: Int32Array;
  weight: Float64Array;
}

export const DAY_MS = 86_400_000;

/**
 * Order weights are kept as multiples of 1/ORDER_SCALE (2520 = lcm(1..10), so 1/d for every
 * distance of the default window is an integer there) and recency weights on a 2^-12 grid of
 * their half-life step: every term added up is then exact in a double, so sums are the same in
 * whatever order groups come and go. That is what lets the live path (live.ts) add and subtract
 * groups and still give the lists of a full build bit for bit.
 */
export const ORDER_SCALE = 2520;

/**
 * A group's recency weight: 2^((t - reference)/H) with reference = referenceStep · H, on a fixed
 * grid of half-lives from the Unix epoch: the fraction within one step is rounded to 12 bits (a
 * relative error below 2^-12) and the whole steps are an exact power of two. Moving the reference
 * by m steps then scales every weight, and so every c and n, by exactly 2^-m, which leaves
 * c / n(a) (damping 0) bit for bit the same: the live path never revisits old groups because
 * time passed. The full build takes the step of the log's latest event as its reference.
 */
export function recencyWeight(time: number, halfLifeMs: number, referenceStep: number): number {
  const x = time / halfLifeMs;
  const step = Math.floor(x);
  return (Math.round(Math.pow(2, x - step) * 4096) / 4096) * Math.pow(2, step - referenceStep);
}

/** The reference step of recencyWeight for a log whose latest event is at `latest`. */
export function referenceStep(latest: number, halfLifeMs: number): number {
  return Math.floor(latest / halfLifeMs);
}

/** d ↦ ORDER_SCALE / d^exponent for d in 1..window (index 0 unused). */
export function orderDecay(order: OrderWeights): Float64Array {
  const decay = new Float64Array(order.window + 1);
  for (let d = 1; d < decay.length; d++) decay[d] = ORDER_SCALE / Math.pow(d, order.exponent);
  return decay;
}

/** n(a)^(d-1): a division where d = 0, as it is correctly rounded (an exact power-of-two scale passes through it). */
export function anchorFactor(na: number, damping: number): number {
  return na > 0 ? (damping === 0 ? 1 / na : Math.pow(na, damping - 1)) : 1;
}

/**
 * The groups of all sets: their distinct items, or, where `ordered`, their positions (an item
 * may then occur more than once) up to the one that would bring in a (maxItems+1)th distinct
 * item. A group's weight is its sequence's, halved every `halfLifeDays` before the log's latest
 * event.
 */
function buildGroups(
  log: EventLog, sets: readonly GroupSet[], nItems: number, ordered: boolean, collapseRepeats: boolean, halfLifeDays: number,
  int32: (n: number) => Int32Array = (n) => new Int32Array(n),
): Groups {
  let total = 0;
  let groups = 0;
  for (const s of sets) {
    total += s.sequences.events.length;
    groups += s.sequences.count;
  }
  const start = new Int32Array(groups + 1);
  const items = int32(total);
  const weight = new Float64Array(groups);
  const stamp = new Int32Array(nItems).fill(-1);
  let latest = -Infinity;
  if (halfLifeDays > 0) for (let i = 0; i < log.length; i++) if (log.time[i]! > latest) latest = log.time[i]!;
  const halfLifeMs = halfLifeDays * DAY_MS;
  const reference = halfLifeDays > 0 ? referenceStep(latest, halfLifeMs) : 0;
  let g = 0;
  let n = 0;
  for (const { sequences, maxItems, keepLast } of sets) {
    for (let s = 0; s < sequences.count; s++) {
      const from = sequences.start[s]!;
      const to = sequences.start[s + 1]!;
      const begin = n;
      let distinct = 0;
      for (let j = 0; j < to - from; j++) {
        const item = log.item[sequences.events[keepLast === true ? to - 1 - j : from + j]!]!;
        if (stamp[item] !== g) {
          if (distinct === maxItems) break;
          stamp[item] = g;
          distinct++;
        } else if (!ordered || (collapseRepeats && items[n - 1] === item)) {
          continue;
        }
        items[n++] = item;
      }
      if (keepLast === true) items.subarray(begin, n).reverse();
      weight[g] = halfLifeDays > 0 ? sequences.weight[s]! * recencyWeight(log.time[sequences.events[to - 1]!]!, halfLifeMs, reference) : sequences.weight[s]!;
      start[++g] = n;
    }
  }
  return { start, items: items.subarray(0, n), weight };
}

/**
 * A bounded min-heap keeping the best `k` (score, evidence, item) triples; a tie in both goes to
 * the lower item id (`ids`, by item index, the array of the moment: set before offering). Not to
 * the lower index: indexes are given in the order items first came (an event, a record), which
 * differs between the process that took them live, a replica and a restart, so that the same
 * events gave tied neighbours in another order on each.
 */
export class TopK {
  readonly score: Float64Array;
  readonly evidence: Int32Array;
  readonly item: Int32Array;
  size = 0;
  constructor(readonly k: number, public ids: Float64Array) {
    this.score = new Float64Array(k);
    this.evidence = new Int32Array(k);
    this.item = new Int32Array(k);
  }
  private less(i: number, j: number): boolean {
    const a = this.score[i]!;
    const b = this.score[j]!;
    if (a !== b) return a < b;
    if (this.evidence[i] !== this.evidence[j]) return this.evidence[i]! < this.evidence[j]!;
    return this.ids[this.item[i]!]! > this.ids[this.item[j]!]!;
  }
  private swap(i: number, j: number): void {
    const s = this.score[i]!; this.score[i] = this.score[j]!; this.score[j] = s;
    const e = this.evidence[i]!; this.evidence[i] = this.evidence[j]!; this.evidence[j] = e;
    const t = this.item[i]!; this.item[i] = this.item[j]!; this.item[j] = t;
  }
  private down(i: number): void {
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < this.size && this.less(l, m)) m = l;
      if (r < this.size && this.less(r, m)) m = r;
      if (m === i) return;
      this.swap(i, m);
      i = m;
    }
  }
  offer(score: number, evidence: number, item: number): void {
    if (this.size < this.k) {
      // Most items have fewer neighbours than k: appended unordered (drain sorts them), and made
      // a heap only once it is full.
      const i = this.size++;
      this.score[i] = score; this.evidence[i] = evidence; this.item[i] = item;
      if (this.size === this.k) for (let j = (this.k >> 1) - 1; j >= 0; j--) this.down(j);
      return;
    }
    const s0 = this.score[0]!;
    if (score < s0 || (score === s0 && (evidence < this.evidence[0]! || (evidence === this.evidence[0] && this.ids[item]! > this.ids[this.item[0]!]!)))) return;
    this.score[0] = score; this.evidence[0] = evidence; this.item[0] = item;
    this.down(0);
  }
  /**
   * Empties the heap into the arrays from `at`, best first; returns how many. An insertion sort:
   * at most k entries, and visiting the heap from its leaves (its larger entries) first leaves
   * little to shift, which beats k pops with sift-downs.
   */
  drain(score: Float64Array, evidence: Int32Array, item: Int32Array, at: number): number {
    const n = this.size;
    for (let i = n - 1, placed = 0; i >= 0; i--, placed++) {
      const s = this.score[i]!;
      const e = this.evidence[i]!;
      const t = this.item[i]!;
      let j = at + placed;
      while (j > at) {
        const ps = score[j - 1]!;
        const pe = evidence[j - 1]!;
        const pt = item[j - 1]!;
        if (ps > s || (ps === s && (pe > e || (pe === e && this.ids[pt]! < this.ids[t]!)))) break;
        score[j] = ps; evidence[j] = pe; item[j] = pt;
        j--;
      }
      score[j] = s; evidence[j] = e; item[j] = t;
    }
    this.size = 0;
    return n;
  }
}

/**
 * Adds up item a's co-occurrence counts over its groups into `acc` (weighted count at 2b, number
 * of shared groups at 2b + 1: both in one cache line, as b is random), listing each item met once
 * in `touched`; returns how many. A function of its own so that V8 optimises it as a small hot
 * function rather than only by on-stack replacement of the whole build loop.
 */
function gather(
  a: number, byItemStart: Int32Array, byItem: Int32Array, groupStart: Int32Array, groupItems: Int32Array,
  groupWeight: Float64Array, acc: Float64Array, touched: Int32Array,
): number {
  let nTouched = 0;
  for (let j = byItemStart[a]!, end = byItemStart[a + 1]!; j < end; j++) {
    const g = byItem[j]!;
    const w = groupWeight[g]!;
    for (let k = groupStart[g]!, kEnd = groupStart[g + 1]!; k < kEnd; k++) {
      const b = groupItems[k]!;
      if (b === a) continue;
      const i = b << 1;
      if (acc[i + 1] === 0) touched[nTouched++] = b;
      acc[i]! += w;
      acc[i + 1]!++;
    }
  }
  return nTouched;
}

/**
 * gather for groups that all weigh 1 (visits): the weighted count is then the number of shared
 * groups, so one Int32 per item is enough. Half the scratch memory the random accesses of the
 * pair loop hit, and one read-modify-write per pair instead of two; that loop is memory-bound.
 */
function gatherUnit(
  a: number, byItemStart: Int32Array, byItem: Int32Array, groupStart: Int32Array, groupItems: Int32Array,
  count: Int32Array, touched: Int32Array,
): number {
  let nTouched = 0;
  for (let j = byItemStart[a]!, end = byItemStart[a + 1]!; j < end; j++) {
    const g = byItem[j]!;
    for (let k = groupStart[g]!, kEnd = groupStart[g + 1]!; k < kEnd; k++) {
      const b = groupItems[k]!;
      if (b === a) continue;
      if (count[b]!++ === 0) touched[nTouched++] = b;
    }
  }
  return nTouched;
}


/**
 * gather for ordered groups: item a's occurrences are positions, and each adds
 * weight * decay[distance] for the items within the window after it (times `backward` before
 * it). The shared-group count needs a group stamp per item, as a group can hold a and b at
 * several positions. Weight, count and stamp share one 16-byte slot per item (`weight` and
 * `counts` view the same buffer: the double weight at 2b, count at 4b + 2, stamp g + 1 at
 * 4b + 3, 0 when untouched by this anchor; the caller clears the slots it is handed in
 * `touched`): one cache line per pair instead of three.
 */
function gatherOrdered(
  a: number, byItemStart: Int32Array, byItem: Int32Array, positionGroup: Int32Array, groupStart: Int32Array, groupItems: Int32Array,
  groupWeight: Float64Array, decay: Float64Array, backward: number, weight: Float64Array, counts: Int32Array, touched: Int32Array,
): number {
  const window = decay.length - 1;
  let nTouched = 0;
  for (let j = byItemStart[a]!, end = byItemStart[a + 1]!; j < end; j++) {
    const k = byItem[j]!;
    const g = positionGroup[k]!;
    const w = groupWeight[g]!;
    const wb = w * backward;
    const hi = Math.min(groupStart[g + 1]!, k + window + 1);
    for (let p = backward === 0 ? k + 1 : Math.max(groupStart[g]!, k - window); p < hi; p++) {
      const b = groupItems[p]!;
      if (b === a) continue;
      const i = b << 2;
      const stamp = counts[i + 3]!;
      if (stamp !== g + 1) {
        if (stamp === 0) touched[nTouched++] = b;
        counts[i + 3] = g + 1;
        counts[i + 2]!++;
      }
      weight[b << 1]! += p > k ? w * decay[p - k]! : wb * decay[k - p]!;
    }
  }
  return nTouched;
}

/**
 * How often each category is in the same group as another (for A = B: two distinct items of A),
 * beyond what chance gives by `lift` (0: not at all, 1: all of it): for categories A and B,
 * (C(A,B) - lift n(A) n(B) / N) / n(A), where positive; at most `maxPartners` per category,
 * best first, ties by `rank` (ItemFacts.categoryRank), else by number. A category's partners
 * are what its thin anchors are filled from (see Scoring).
 */
function categoryAssociation(groups: Groups, category: Int32Array, nCategories: number, lift: number, maxPartners: number, rank?: Int32Array): { start: Int32Array; partner: Int32Array; weight: Float64Array; occurrences: Float64Array } {
  const occurrences = new Float64Array(nCategories);
  // Dense while it is small (a shop's few hundred leaves), a map beyond (a 4,000-node taxonomy).
  const dense = nCategories * nCategories <= 1 << 22 ? new Float64Array(nCategories * nCategories) : null;
  const pairs = new Map<number, number>();
  const add = (key: number, w: number): void => {
    if (dense !== null) dense[key]! += w;
    else pairs.set(key, (pairs.get(key) ?? 0) + w);
  };
  const itemStamp = new Int32Array(category.length).fill(-1);
  const categoryStamp = new Int32Array(nCategories).fill(-1);
  const distinctItems = new Int32Array(nCategories);
  const present: number[] = [];
  let total = 0;
  const nGroups = groups.weight.length;
  for (let g = 0; g < nGroups; g++) {
    const w = groups.weight[g]!;
    total += w;
    present.length = 0;
    for (let p = groups.start[g]!; p < groups.start[g + 1]!; p++) {
      const b = groups.items[p]!;
      if (itemStamp[b] === g) continue;
      itemStamp[b] = g;
      const c = category[b]!;
      if (c < 0) continue;
      if (categoryStamp[c] !== g) {
        categoryStamp[c] = g;
        distinctItems[c] = 0;
        present.push(c);
      }
      distinctItems[c]!++;
    }
    for (const a of present) {
      occurrences[a]! += w;
      if (distinctItems[a]! >= 2) add(a * nCategories + a, w);
      for (const b of present) if (b !== a) add(a * nCategories + b, w);
    }
  }
  const lists: { partner: number; weight: number }[][] = Array.from({ length: nCategories }, () => []);
  if (dense !== null) dense.forEach((c, key) => c > 0 && pairs.set(key, c));
  for (const [key, c] of pairs) {
    const a = Math.floor(key / nCategories);
    const b = key - a * nCategories;
    const excess = (c - (lift * occurrences[a]! * occurrences[b]!) / total) / occurrences[a]!;
    if (excess > 0) lists[a]!.push({ partner: b, weight: excess });
  }
  const start = new Int32Array(nCategories + 1);
  const partner: number[] = [];
  const weight: number[] = [];
  lists.forEach((list, a) => {
    list.sort(rank === undefined ? (x, y) => y.weight - x.weight || x.partner - y.partner : (x, y) => y.weight - x.weight || rank[x.partner]! - rank[y.partner]!);
    for (const e of list.slice(0, maxPartners)) {
      partner.push(e.partner);
      weight.push(e.weight);
    }
    start[a + 1] = partner.length;
  });
  return { start, partner: Int32Array.from(partner), weight: Float64Array.from(weight), occurrences };
}

/**
 * Ranks of items by descending number of groups (a counting sort, stable), and the inverse;
 * renumbers `items` in place.
 */
function renumberByDegree(items: Int32Array, nItems: number): { rank: Int32Array; orig: Int32Array } {
  const degree = new Int32Array(nItems);
  let maxDegree = 0;
  for (let k = 0; k < items.length; k++) {
    const d = ++degree[items[k]!]!;
    if (d > maxDegree) maxDegree = d;
  }
  const slot = new Int32Array(maxDegree + 2);
  for (let b = 0; b < nItems; b++) slot[maxDegree - degree[b]! + 1]!++;
  for (let d = 0; d <= maxDegree; d++) slot[d + 1]! += slot[d]!;
  const rank = new Int32Array(nItems);
  const orig = new Int32Array(nItems);
  for (let b = 0; b < nItems; b++) {
    const r = slot[maxDegree - degree[b]!]!++;
    rank[b] = r;
    orig[r] = b;
  }
  for (let k = 0; k < items.length; k++) items[k] = rank[items[k]!]!;
  return { rank, orig };
}

/** The facts indexed by rank. */
function permuteFacts(facts: ItemFacts, orig: Int32Array): ItemFacts {
  const permute = <T extends Uint8Array | Int32Array>(a: T | undefined): T | undefined => {
    if (a === undefined) return undefined;
    const out = a.slice() as T;
    for (let r = 0; r < orig.length; r++) out[r] = a[orig[r]!]!;
    return out;
  };
  const out: ItemFacts = {};
  const candidate = permute(facts.candidate);
  const family = permute(facts.family);
  const category = permute(facts.category);
  if (candidate !== undefined) out.candidate = candidate;
  if (family !== undefined) out.family = family;
  if (category !== undefined) out.category = category;
  // by category, not by item
  if (facts.categoryRank !== undefined) out.categoryRank = facts.categoryRank;
  return out;
}


/** Partner categories kept per category for the prior (see categoryAssociation). */
const MAX_PARTNER_CATEGORIES = 10;

/**
 * Neighbours of every item by co-occurrence in groups (visits, orders, histories). Instead of
 * materialising all pairs, each item's groups are walked through an item-to-group index and the
 * counts gathered in a dense scratch array: memory stays O(items + events), and every item's
 * top-K is chosen right after its counts are complete.
 */
export function buildNeighbours(log: EventLog, sets: readonly GroupSet[], options: NeighbourOptions, facts: ItemFacts = {}, frozen?: PriorStats): Neighbours {
  const prepared = prepareNeighbours(log, sets, options, facts, frozen);
  return prepared.finish(rankEveryAnchor(prepared.pass, options.pairScore ?? null, prepared.twoThreads));
}

/** A build up to its anchor loop: the loop's pass, and what makes the loop's lists the build's neighbours. */
export interface PreparedNeighbours {
  pass: AnchorPass;
  /** Whether the loop takes a second thread (see NeighbourOptions.parallelFromPositions); its largest arrays are then shared memory. */
  twoThreads: boolean;
  finish(ranked: RankedAnchors): Neighbours;
}

/** buildNeighbours up to its anchor loop. */
export function prepareNeighbours(log: EventLog, sets: readonly GroupSet[], options: NeighbourOptions, facts: ItemFacts = {}, frozen?: PriorStats): PreparedNeighbours {
  const nItems = log.items.size;
  const topK = options.topK ?? 30;
  const factor = options.sameCategoryFactor ?? 1;
  const damping = options.damping ?? 0.3;
  const pairScore = options.pairScore ?? null;
  const prior = pairScore === null ? options.prior ?? 0 : 0;
  const order = options.order ?? null;
  const ordered = order !== null && order.window > 0;
  // A second thread reads the index of positions (three arrays of 4 bytes a position: 108 MB at
  // 10M events) in shared memory rather than in a copy of its own.
  const upTo = sets.reduce((n, s) => n + s.sequences.events.length, 0);
  const twoThreads = pairScore === null && upTo >= (options.parallelFromPositions ?? PARALLEL_FROM_POSITIONS) && nItems >= 2 * ANCHOR_CHUNK && availableParallelism() >= 2;
  const int32 = twoThreads ? (n: number): Int32Array => new Int32Array(new SharedArrayBuffer(4 * n)) : (n: number): Int32Array => new Int32Array(n);
  const groups = buildGroups(log, sets, nItems, ordered, options.collapseRepeats === true, options.halfLifeDays ?? 0, int32);
  const nGroups = groups.weight.length;
  // Everything below works on items renumbered by descending number of positions (their rank),
  // so that the scratch entries the pair loop hits most, those of popular items, share a few
  // cache lines instead of being spread over megabytes. Outputs and tie-breaks use the real index.
  const { rank, orig } = renumberByDegree(groups.items, nItems);
  const { candidate, family, category, categoryRank } = permuteFacts(facts, orig);

  // n(b): weighted groups holding b (once however often it occurs there).
  const occurrences = new Float64Array(nItems);
  const byItemStart = new Int32Array(nItems + 1);
  const stamp = new Int32Array(nItems).fill(-1);
  let total = 0;
  for (let g = 0; g < nGroups; g++) {
    const w = groups.weight[g]!;
    total += w;
    for (let j = groups.start[g]!; j < groups.start[g + 1]!; j++) {
      const item = groups.items[j]!;
      byItemStart[item + 1]!++;
      if (stamp[item] === g) continue;
      stamp[item] = g;
      occurrences[item]! += w;
    }
  }
  for (let i = 0; i < nItems; i++) byItemStart[i + 1]! += byItemStart[i]!;
  // An item's groups (item sets) or positions (ordered: positionGroup maps them to their group).
  const byItem = int32(groups.items.length);
  const positionGroup = int32(ordered ? groups.items.length : 0);
  const fill = byItemStart.slice(0, nItems);
  for (let g = 0; g < nGroups; g++) {
    for (let j = groups.start[g]!; j < groups.start[g + 1]!; j++) {
      byItem[fill[groups.items[j]!]!++] = ordered ? j : g;
      if (ordered) positionGroup[j] = g;
    }
  }
  const decay = ordered ? orderDecay(order) : new Float64Array(0);
  const backward = order?.backward ?? 0;

  // Doubles, so that sums of the exact terms stay exact (see ORDER_SCALE); the ordered slot stays
  // 16 bytes. When every group weighs 1 and pairs are unordered, counts alone (Int32) give the
  // same numbers in a quarter of the space.
  const unit = !ordered && groups.weight.every((w) => w === 1);
  const ids = log.items.idsNow(); // a build interns nothing: no copy needed
  // The prior's statistics (see PriorStats): this build's, or those given.
  const givenStats = prior > 0 ? frozen : undefined;
  // (An empty log's statistics have no N: the current one serves.)
  const priorTotal = givenStats !== undefined && givenStats.total > 0 ? givenStats.total : total;
  const frozenCounts = givenStats === undefined ? occurrences : inRankOrder(givenStats.occurrences, orig);
  // n(b) on the neighbour's side: the given statistics' where they know b.
  let neighbourCounts = occurrences;
  if (givenStats !== undefined) {
    neighbourCounts = frozenCounts.slice();
    for (let b = 0; b < nItems; b++) if (!(neighbourCounts[b]! > 0)) neighbourCounts[b] = occurrences[b]!;
  }
  // n(b)^-d, computed once per build so that the pair loop does one multiplication instead of a
  // Math.pow; 0 for non-candidates, so that one read both filters and scores.
  const termOf = (counts: Float64Array): Float64Array => {
    const out = new Float64Array(nItems);
    for (let b = 0; b < nItems; b++) out[b] = counts[b]! > 0 && (candidate === undefined || candidate[b] === 1) ? Math.pow(counts[b]!, -damping) : 0;
    return out;
  };
  const term = termOf(neighbourCounts);

  // The prior π_a(b): by category association where the anchor's category has partners, else by
  // popularity (see Scoring).
  const nCategories = givenStats !== undefined ? givenStats.partnerStart.length - 1 : category === undefined ? 0 : category.reduce((m, c) => Math.max(m, c + 1), 0);
  const association = prior > 0 && nCategories > 0 && category !== undefined
    ? givenStats === undefined
      ? categoryAssociation(groups, category, nCategories, options.categoryLift ?? 0, MAX_PARTNER_CATEGORIES, categoryRank)
      : { start: givenStats.partnerStart, partner: givenStats.partner, weight: givenStats.partnerWeight, occurrences: givenStats.categoryOccurrences }
    : null;
  // b's share of its category's groups.
  const shareOf = (counts: Float64Array): Float64Array => {
    const out = new Float64Array(association === null ? 0 : nItems);
    if (association !== null) {
      for (let b = 0; b < nItems; b++) {
        const c = category![b]!;
        if (c >= 0 && c < nCategories && association.occurrences[c]! > 0) out[b] = counts[b]! / association.occurrences[c]!;
      }
    }
    return out;
  };
  const share = shareOf(neighbourCounts);
  const priorLists = prior > 0
    ? givenStats === undefined
      ? priorListsOf(prior, factor, topK, occurrences, total, term, category, association, share, orig, ids)
      : priorListsOf(prior, factor, topK, frozenCounts, priorTotal, termOf(frozenCounts), category, association, shareOf(frozenCounts), orig, ids)
    : null;
  const pass: AnchorPass = {
    nItems, topK, factor, damping, prior, priorTotal, ordered, unit, backward,
    rank, orig, ids, occurrences, neighbourCounts, term, share, decay,
    byItemStart, byItem, positionGroup, groupStart: groups.start, groupItems: groups.items, groupWeight: groups.weight,
    family: family ?? null, category: category ?? null,
    // every category the facts number (a category newer than given statistics has no partners)
    nCategories: category === undefined ? 0 : Math.max(nCategories, category.reduce((m, c) => Math.max(m, c + 1), 0)),
    association: association === null ? null : { start: association.start, partner: association.partner, weight: association.weight },
  };
  const finish = (ranked: RankedAnchors): Neighbours => ({
    start: ranked.start, item: ranked.item, score: ranked.score, evidence: ranked.evidence,
    priorStart: priorLists?.start ?? new Int32Array(1), priorItem: priorLists?.item ?? new Int32Array(0), priorScore: priorLists?.score ?? new Float64Array(0),
    anchorScale: ranked.anchorScale, sameCategoryFactor: factor,
    ...(prior > 0 ? { priorStats: givenStats ?? statsOf(total, occurrences, orig, association) } : {}),
  });
  return { pass, twoThreads, finish };
}

/**
 * Default of NeighbourOptions.parallelFromPositions: below a million positions a build takes
 * about a second or less, and a second thread's start (tens of milliseconds built, hundreds from
 * source) and the copy of the pass's smaller arrays would eat much of what it saves.
 */
export const PARALLEL_FROM_POSITIONS = 1_000_000;

/**
 * Everything the anchor loop of buildNeighbours reads (by rank, see renumberByDegree): plain
 * typed arrays and numbers, so that it crosses to a second thread (anchorThread.ts) as it is.
 */
export interface AnchorPass {
  nItems: number;
  topK: number;
  factor: number;
  damping: number;
  prior: number;
  priorTotal: number;
  ordered: boolean;
  unit: boolean;
  backward: number;
  rank: Int32Array;
  orig: Int32Array;
  ids: Float64Array;
  occurrences: Float64Array;
  neighbourCounts: Float64Array;
  term: Float64Array;
  share: Float64Array;
  decay: Float64Array;
  byItemStart: Int32Array;
  byItem: Int32Array;
  positionGroup: Int32Array;
  groupStart: Int32Array;
  groupItems: Int32Array;
  groupWeight: Float64Array;
  family: Int32Array | null;
  category: Int32Array | null;
  /** Categories numbered: the size of the partner-weight scratch. */
  nCategories: number;
  association: { start: Int32Array; partner: Int32Array; weight: Float64Array } | null;
}

/**
 * The lists of the anchors (item indexes) from .. to-1: `start` from 0 (to - from + 1 entries),
 * and their anchor factors where there is a prior.
 */
export interface RankedAnchors {
  start: Int32Array;
  item: Int32Array;
  score: Float64Array;
  evidence: Int32Array;
  anchorScale: Float64Array;
}

/**
 * Ranks every anchor; with `twoThreads` (see prepareNeighbours), in two threads
 * (anchorThread.ts) that take chunks of anchors in turn from a shared counter, so that neither
 * waits for the other however the work falls (an anchor costs its positions times the window,
 * or its groups' sizes, and a list; early items are the popular ones). Each anchor's list depends
 * only on the pass: the chunks put together in order are the lists of one thread, bit for bit.
 * A second thread that has not started by the time this one took the last chunk is called off.
 */
function rankEveryAnchor(pass: AnchorPass, pairScore: PairScore | null, twoThreads: boolean): RankedAnchors {
  if (!twoThreads) return rankAnchors(pass, 0, pass.nItems, pairScore, anchorScratch(pass));
  const next = new Int32Array(new SharedArrayBuffer(4));
  const thread = startAnchorThread(pass, next);
  const chunks = rankChunks(pass, next);
  for (const [c, ranked] of thread.wait()) chunks[c] = ranked;
  // chunks the thread claimed and did not rank (it failed or stalled): ranked here
  let scratch: AnchorScratch | null = null;
  for (let c = 0; c < chunks.length; c++) chunks[c] ??= rankChunk(pass, c, (scratch ??= anchorScratch(pass)));
  return joinRanked(chunks as RankedAnchors[]);
}

/** Anchors a chunk of rankChunks: small enough that the last chunks balance the threads. */
export const ANCHOR_CHUNK = 2048;

/**
 * Ranks the chunks of ANCHOR_CHUNK anchors this thread claims from `next` (the index of the next
 * chunk, shared between threads) until none is left, calling `ranked` after each; the array holds
 * them at their index.
 */
export function rankChunks(pass: AnchorPass, next: Int32Array, ranked: () => void = () => {}): (RankedAnchors | undefined)[] {
  const count = Math.ceil(pass.nItems / ANCHOR_CHUNK);
  const chunks: (RankedAnchors | undefined)[] = new Array<RankedAnchors | undefined>(count);
  const scratch = anchorScratch(pass);
  for (let c = Atomics.add(next, 0, 1); c < count; c = Atomics.add(next, 0, 1)) {
    chunks[c] = rankChunk(pass, c, scratch);
    ranked();
  }
  return chunks;
}

/** The lists of chunk c: the anchors from c * ANCHOR_CHUNK on, ANCHOR_CHUNK of them or the rest. */
export function rankChunk(pass: AnchorPass, c: number, scratch: AnchorScratch): RankedAnchors {
  return rankAnchors(pass, c * ANCHOR_CHUNK, Math.min(pass.nItems, (c + 1) * ANCHOR_CHUNK), null, scratch);
}

/** Consecutive ranges' lists as one. */
function joinRanked(parts: readonly RankedAnchors[]): RankedAnchors {
  let anchors = 0;
  let entries = 0;
  let scales = 0;
  for (const part of parts) {
    anchors += part.start.length - 1;
    entries += part.item.length;
    scales += part.anchorScale.length;
  }
  const start = new Int32Array(anchors + 1);
  const item = new Int32Array(entries);
  const score = new Float64Array(entries);
  const evidence = new Int32Array(entries);
  const anchorScale = new Float64Array(scales);
  let a = 0;
  let e = 0;
  let k = 0;
  for (const part of parts) {
    const n = part.start.length - 1;
    for (let i = 0; i < n; i++) start[a + i] = e + part.start[i]!;
    item.set(part.item, e);
    score.set(part.score, e);
    evidence.set(part.evidence, e);
    anchorScale.set(part.anchorScale, k);
    a += n;
    e += part.item.length;
    k += part.anchorScale.length;
  }
  start[anchors] = e;
  return { start, item, score, evidence, anchorScale };
}

/** A thread's scratch for rankAnchors, reused from one range to the next (every entry is left cleared). */
export interface AnchorScratch {
  acc: Float64Array;
  count: Int32Array;
  slotWeight: Float64Array;
  slotCount: Int32Array;
  touched: Int32Array;
  partnerWeight: Float64Array;
  heap: TopK;
}

export function anchorScratch(pass: AnchorPass): AnchorScratch {
  const { nItems, ordered, unit } = pass;
  // Doubles, so that sums of the exact terms stay exact (see ORDER_SCALE); the ordered slot stays
  // 16 bytes. When every group weighs 1 and pairs are unordered, counts alone (Int32) give the
  // same numbers in a quarter of the space.
  const slots = new ArrayBuffer(ordered ? 16 * nItems : 0);
  return {
    acc: new Float64Array(unit || ordered ? 0 : 2 * nItems),
    count: new Int32Array(unit ? nItems : 0),
    slotWeight: new Float64Array(slots),
    slotCount: new Int32Array(slots),
    // Sized for the worst case so that the hot loop never checks for growth.
    touched: new Int32Array(nItems),
    partnerWeight: new Float64Array(pass.nCategories),
    heap: new TopK(pass.topK, pass.ids),
  };
}

/** The anchor loop of buildNeighbours over the anchors (item indexes) from .. to-1 (see RankedAnchors). */
export function rankAnchors(pass: AnchorPass, from: number, to: number, pairScore: PairScore | null, scratch: AnchorScratch): RankedAnchors {
  const {
    topK, factor, damping, prior, priorTotal, ordered, unit, backward, rank, orig, occurrences, neighbourCounts, term, share, decay,
    byItemStart, byItem, positionGroup, groupStart, groupItems, groupWeight, family, category, association,
  } = pass;
  const { acc, count, slotWeight, slotCount, touched, partnerWeight, heap } = scratch;
  const outStart = new Int32Array(to - from + 1);
  let cap = Math.max(1024, Math.min((to - from) * topK, 4 * byItemStart[pass.nItems]!));
  let outItem = new Int32Array(cap);
  let outScore = new Float64Array(cap);
  let outEvidence = new Int32Array(cap);
  let out = 0;
  const anchorScale = new Float64Array(prior > 0 ? to - from : 0);
  for (let a0 = from; a0 < to; a0++) {
    outStart[a0 - from] = out;
    const a = rank[a0]!;
    const na = occurrences[a]!;
    const anchor = anchorFactor(na, damping);
    if (prior > 0) anchorScale[a0 - from] = anchor;
    const nTouched = ordered
      ? gatherOrdered(a, byItemStart, byItem, positionGroup, groupStart, groupItems, groupWeight, decay, backward, slotWeight, slotCount, touched)
      : unit
        ? gatherUnit(a, byItemStart, byItem, groupStart, groupItems, count, touched)
        : gather(a, byItemStart, byItem, groupStart, groupItems, groupWeight, acc, touched);
    if (nTouched === 0) continue;
    const famA = family === null ? -1 : family[a]!;
    const catA = category === null ? -1 : category[a]!;
    const sameCategory = catA >= 0 && factor !== 1;
    // The anchor's partner categories, spread into a dense scratch array for the pair loop.
    let partners = 0;
    if (association !== null && catA >= 0 && catA < association.start.length - 1) {
      for (let j = association.start[catA]!; j < association.start[catA + 1]!; j++) partnerWeight[association.partner[j]!] = association.weight[j]!;
      partners = association.start[catA + 1]! - association.start[catA]!;
    }
    for (let t = 0; t < nTouched; t++) {
      const b = touched[t]!;
      let c: number;
      let ev: number;
      if (unit) {
        c = ev = count[b]!;
        count[b] = 0;
      } else if (ordered) {
        const i = b << 2;
        c = slotWeight[b << 1]! / ORDER_SCALE;
        ev = slotCount[i + 2]!;
        slotWeight[b << 1] = 0;
        slotCount[i + 2] = 0;
        slotCount[i + 3] = 0;
      } else {
        const i = b << 1;
        c = acc[i]!;
        ev = acc[i + 1]!;
        acc[i] = 0;
        acc[i + 1] = 0;
      }
      if (term[b] === 0) continue;
      if (famA >= 0 && family![b] === famA) continue;
      let s: number;
      if (pairScore !== null) s = pairScore(c, na, occurrences[b]!, priorTotal); // (no prior: this build's N)
      else {
        const pi = prior === 0 ? 0 : partners > 0 ? (category![b]! >= 0 ? partnerWeight[category![b]!]! * share[b]! : 0) : neighbourCounts[b]! / priorTotal;
        s = (c + prior * pi) * term[b]! * anchor;
      }
      if (sameCategory && category![b] === catA) s = s >= 0 ? s * factor : s / factor;
      heap.offer(s, ev, orig[b]!);
    }
    if (partners > 0) for (let j = association!.start[catA]!; j < association!.start[catA + 1]!; j++) partnerWeight[association!.partner[j]!] = 0;
    if (out + topK > cap) {
      cap = Math.max(cap * 2, out + topK);
      const i2 = new Int32Array(cap); i2.set(outItem); outItem = i2;
      const s2 = new Float64Array(cap); s2.set(outScore); outScore = s2;
      const e2 = new Int32Array(cap); e2.set(outEvidence); outEvidence = e2;
    }
    out += heap.drain(outScore, outEvidence, outItem, out);
  }
  outStart[to - from] = out;
  return { start: outStart, item: outItem.slice(0, out), score: outScore.slice(0, out), evidence: outEvidence.slice(0, out), anchorScale };
}

/** A by-rank copy of an array by real index (0 for items beyond it). */
function inRankOrder(byIndex: Float64Array, orig: Int32Array): Float64Array {
  const out = new Float64Array(orig.length);
  for (let r = 0; r < orig.length; r++) if (orig[r]! < byIndex.length) out[r] = byIndex[orig[r]!]!;
  return out;
}

/** This build's prior statistics (see PriorStats), by real index. */
function statsOf(total: number, occurrences: Float64Array, orig: Int32Array, association: { start: Int32Array; partner: Int32Array; weight: Float64Array; occurrences: Float64Array } | null): PriorStats {
  const byIndex = new Float64Array(orig.length);
  for (let r = 0; r < orig.length; r++) byIndex[orig[r]!] = occurrences[r]!;
  return {
    total, occurrences: byIndex,
    categoryOccurrences: association?.occurrences ?? new Float64Array(0),
    partnerStart: association?.start ?? new Int32Array(1), partner: association?.partner ?? new Int32Array(0), partnerWeight: association?.weight ?? new Float64Array(0),
  };
}

/**
 * The prior's lists (see Neighbours.priorStart): per category, the items of its partner
 * categories by k · weight(partner) · share(b) · n(b)^-d (times the same-category factor in its
 * own); last, every item by k · n(b)/N · n(b)^-d (the factor applied at lookup).
 * Each holds at most `size` items, best first (ties to the lower item id).
 */
function priorListsOf(
  prior: number, factor: number, size: number, occurrences: Float64Array, total: number, term: Float64Array, category: Int32Array | undefined,
  association: { start: Int32Array; partner: Int32Array; weight: Float64Array } | null, share: Float64Array, orig: Int32Array,
  ids: Float64Array,
): { start: Int32Array; item: Int32Array; score: Float64Array } {
  const nItems = occurrences.length;
  const nCategories = association === null ? 0 : association.start.length - 1;
  // Each category's items by descending share · n(b)^-d (the order within a partner category).
  const byCategory: number[][] = Array.from({ length: nCategories }, () => []);
  if (association !== null) {
    for (let b = 0; b < nItems; b++) if (term[b]! > 0 && category![b]! >= 0) byCategory[category![b]!]!.push(b);
    for (const list of byCategory) list.sort((x, y) => share[y]! * term[y]! - share[x]! * term[x]! || ids[orig[x]!]! - ids[orig[y]!]!);
  }
  const heap = new TopK(size, ids);
  const start = new Int32Array(nCategories + 2);
  const items: number[] = [];
  const scores: number[] = [];
  const drain = (): void => {
    const n = heap.size;
    const score = new Float64Array(n);
    const item = new Int32Array(n);
    heap.drain(score, new Int32Array(n), item, 0);
    for (let j = 0; j < n; j++) {
      items.push(item[j]!);
      scores.push(score[j]!);
    }
  };
  for (let c = 0; c < nCategories; c++) {
    for (let j = association!.start[c]!; j < association!.start[c + 1]!; j++) {
      const partner = association!.partner[j]!;
      const w = prior * association!.weight[j]! * (partner === c ? factor : 1);
      for (const b of byCategory[partner]!.slice(0, size)) heap.offer(w * share[b]! * term[b]!, 0, orig[b]!);
    }
    drain();
    start[c + 1] = items.length;
  }
  for (let b = 0; b < nItems; b++) if (term[b]! > 0) heap.offer((prior * occurrences[b]! * term[b]!) / total, 0, orig[b]!);
  drain();
  start[nCategories + 1] = items.length;
  return { start, item: Int32Array.from(items), score: Float64Array.from(scores) };
}
