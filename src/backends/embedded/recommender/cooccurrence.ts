import type { EventLog } from '../events/event.js';
import type { Sequences } from './sessions.js';

/**
 * How a co-occurrence count c(a,b) becomes a score, given n(a), n(b) (groups holding each item)
 * and N (all groups). Every option but `count` discounts items that are everywhere:
 * - `count`: c, the raw count (what "bought together" widgets naively show; popularity-biased).
 * - `cosine`: c / sqrt(n(a) n(b)).
 * - `lift`: c N / (n(a) n(b)), how much more often than chance; favours rare items.
 * - `pmi`: log(lift).
 * - `damped`: (c + k n(b)/N) / (n(a)^(1-d) n(b)^d), an asymmetric cosine between count (d = 0)
 *   and conditional probability P(a|b) (d = 1), with cosine's ranking at d = 0.5: the neighbour's
 *   popularity is discounted by n(b)^d (d = `damping`). k (`prior`) adds k pseudo-groups spread
 *   by popularity, i.e. the count is smoothed towards what the anchor's groups would hold by
 *   chance; it decides only where the co-occurrence evidence is thin, and lets the most frequent
 *   items compete for every anchor.
 * cosine, lift and pmi are also multiplied by c / (c + shrinkage), so a single co-occurrence of
 * two rare items does not outrank steady evidence.
 */
export type Weighting = 'count' | 'cosine' | 'lift' | 'pmi' | 'damped';
export const WEIGHTINGS: readonly Weighting[] = ['count', 'cosine', 'lift', 'pmi', 'damped'];

/** Precomputed neighbours in CSR form: item a's are `item[start[a] .. start[a+1])`, best first. */
export interface Neighbours {
  start: Int32Array;
  item: Int32Array;
  score: Float64Array;
  /** Unweighted number of groups shared with the anchor. */
  evidence: Int32Array;
}

/** What the build may know of items (by dense index), to spend the top-K only on usable items. */
export interface ItemFacts {
  /** 1 where the item may be recommended (it is in the catalogue); all items when absent. */
  candidate?: Uint8Array;
  /** The family (parentItemId interned); -1 unknown. Same family is never a neighbour. */
  family?: Int32Array;
  /** The leaf category interned; -1 unknown. */
  category?: Int32Array;
}

/** Options of buildNeighbours. */
export interface NeighbourOptions {
  weighting: Weighting;
  /** Neighbours kept per item before lookup-time filters; default 30. */
  topK?: number;
  /** Score factor for a neighbour in the anchor's leaf category; default 1 (next-best-product uses less). */
  sameCategoryFactor?: number;
  /** The s in c / (c + s) for cosine, lift and pmi; default 2. */
  shrinkage?: number;
  /** The d of `damped`; default 0.2. */
  damping?: number;
  /** The k of `damped` (pseudo-groups spread by popularity); default 0. */
  prior?: number;
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

/** Distinct item sets of all groups, in CSR form, with their weights. */
function itemSets(log: EventLog, sets: readonly GroupSet[], nItems: number): { start: Int32Array; items: Int32Array; weight: Float32Array } {
  let total = 0;
  let groups = 0;
  for (const s of sets) {
    total += s.sequences.events.length;
    groups += s.sequences.count;
  }
  const start = new Int32Array(groups + 1);
  const items = new Int32Array(total);
  const weight = new Float32Array(groups);
  const stamp = new Int32Array(nItems).fill(-1);
  let g = 0;
  let n = 0;
  for (const { sequences, maxItems, keepLast } of sets) {
    for (let s = 0; s < sequences.count; s++) {
      const from = sequences.start[s]!;
      const to = sequences.start[s + 1]!;
      const begin = n;
      for (let j = 0; j < to - from && n - begin < maxItems; j++) {
        const item = log.item[sequences.events[keepLast === true ? to - 1 - j : from + j]!]!;
        if (stamp[item] === g) continue;
        stamp[item] = g;
        items[n++] = item;
      }
      weight[g] = sequences.weight[s]!;
      start[++g] = n;
    }
  }
  return { start, items: items.subarray(0, n), weight };
}

/** A bounded min-heap keeping the best `k` (score, evidence, item) triples. */
class TopK {
  readonly score: Float64Array;
  readonly evidence: Int32Array;
  readonly item: Int32Array;
  size = 0;
  constructor(readonly k: number) {
    this.score = new Float64Array(k);
    this.evidence = new Int32Array(k);
    this.item = new Int32Array(k);
  }
  private less(i: number, j: number): boolean {
    const a = this.score[i]!;
    const b = this.score[j]!;
    if (a !== b) return a < b;
    if (this.evidence[i] !== this.evidence[j]) return this.evidence[i]! < this.evidence[j]!;
    return this.item[i]! > this.item[j]!;
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
    if (score < s0 || (score === s0 && (evidence < this.evidence[0]! || (evidence === this.evidence[0] && item > this.item[0]!)))) return;
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
        if (ps > s || (ps === s && (pe > e || (pe === e && pt < t)))) break;
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
  groupWeight: Float32Array, acc: Float32Array, touched: Int32Array,
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
 * 1 / n(b)^e for every item (the neighbour's popularity discount), or log n(b) for pmi: computed
 * once per build so that the pair loop does one multiplication instead of a Math.pow.
 */
function popularityTerms(occurrences: Float64Array, weighting: Weighting, damping: number): Float64Array {
  const out = new Float64Array(occurrences.length);
  const exponent = weighting === 'cosine' ? 0.5 : weighting === 'lift' ? 1 : weighting === 'damped' ? damping : 0;
  for (let b = 0; b < out.length; b++) {
    const n = occurrences[b]!;
    if (weighting === 'pmi') out[b] = n > 0 ? Math.log(n) : 0;
    else out[b] = n > 0 ? Math.pow(n, -exponent) : 0;
  }
  return out;
}

/**
 * The `count` most frequent candidate items of the groups (the prior's candidates), ordered by
 * `key` (their score without co-occurrence, up to a factor), best first.
 */
function mostFrequent(occurrences: Float64Array, candidate: Uint8Array | undefined, count: number, key: (b: number) => number, orig: Int32Array, rank: Int32Array): Int32Array {
  // Ties go to the lower real index, as everywhere.
  const heap = new TopK(count);
  for (let b = 0; b < occurrences.length; b++) {
    if (occurrences[b]! > 0 && (candidate === undefined || candidate[b] === 1)) heap.offer(occurrences[b]!, 0, orig[b]!);
  }
  const chosen = new Int32Array(heap.size);
  heap.drain(new Float64Array(heap.size), new Int32Array(heap.size), chosen, 0);
  for (const b of chosen) heap.offer(key(rank[b]!), 0, b);
  const item = new Int32Array(heap.size);
  heap.drain(new Float64Array(heap.size), new Int32Array(heap.size), item, 0);
  return item.map((b) => rank[b]!);
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
  return out;
}

/**
 * Neighbours of every item by co-occurrence in groups (visits, orders, histories). Instead of
 * materialising all pairs, each item's groups are walked through an item-to-group index and the
 * counts gathered in a dense scratch array: memory stays O(items + events), and every item's
 * top-K is chosen right after its counts are complete.
 */
export function buildNeighbours(log: EventLog, sets: readonly GroupSet[], options: NeighbourOptions, facts: ItemFacts = {}): Neighbours {
  const nItems = log.items.size;
  const topK = options.topK ?? 30;
  const factor = options.sameCategoryFactor ?? 1;
  const shrinkage = options.shrinkage ?? 2;
  const damping = options.damping ?? 0.2;
  const weighting = options.weighting;
  const prior = weighting === 'damped' ? options.prior ?? 0 : 0;
  const groups = itemSets(log, sets, nItems);
  const nGroups = groups.weight.length;
  // Everything below works on items renumbered by descending number of groups (their rank), so
  // that the scratch entries the pair loop hits most, those of popular items, share a few cache
  // lines instead of being spread over megabytes. Outputs and tie-breaks use the real index.
  const { rank, orig } = renumberByDegree(groups.items, nItems);
  const { candidate, family, category } = permuteFacts(facts, orig);

  const occurrences = new Float64Array(nItems);
  const byItemStart = new Int32Array(nItems + 1);
  let total = 0;
  for (let g = 0; g < nGroups; g++) {
    const w = groups.weight[g]!;
    total += w;
    for (let j = groups.start[g]!; j < groups.start[g + 1]!; j++) {
      const item = groups.items[j]!;
      occurrences[item]! += w;
      byItemStart[item + 1]!++;
    }
  }
  for (let i = 0; i < nItems; i++) byItemStart[i + 1]! += byItemStart[i]!;
  const byItem = new Int32Array(groups.items.length);
  const fill = byItemStart.slice(0, nItems);
  for (let g = 0; g < nGroups; g++) {
    for (let j = groups.start[g]!; j < groups.start[g + 1]!; j++) byItem[fill[groups.items[j]!]!++] = g;
  }

  // Float32: half the cache footprint of the hottest array; exact for counts below 2^24. When
  // every group weighs 1, counts alone (Int32) give the same numbers in half the space again.
  const unit = groups.weight.every((w) => w === 1);
  const acc = new Float32Array(unit ? 0 : 2 * nItems);
  const count = new Int32Array(unit ? nItems : 0);
  // Sized for the worst case so that the hot loop never checks for growth.
  const touched = new Int32Array(nItems);
  const heap = new TopK(topK);
  const outStart = new Int32Array(nItems + 1);
  let cap = Math.max(1024, Math.min(nItems * topK, 4 * groups.items.length));
  let outItem = new Int32Array(cap);
  let outScore = new Float64Array(cap);
  let outEvidence = new Int32Array(cap);
  let out = 0;
  const pmi = weighting === 'pmi';
  const term = popularityTerms(occurrences, weighting, damping);
  // Non-candidates get a 0 term, so that one read both filters and scores (pmi checks candidate).
  if (candidate !== undefined && !pmi) for (let b = 0; b < nItems; b++) if (candidate[b] !== 1) term[b] = 0;
  const shrink = weighting === 'cosine' || weighting === 'lift' || pmi ? shrinkage : 0;
  const logTotal = Math.log(total);
  // With a prior, the most frequent items compete for every anchor even without co-occurrence.
  // Without it (c = 0) their scores are prior n(b)^(1-d) / N times the anchor's part: the same
  // order for every anchor, so they are merged in that order after the heap instead of through it.
  const priorOf = prior > 0 ? occurrences.map((n) => (prior * n) / total) : null;
  const frequent = priorOf === null ? new Int32Array(0) : mostFrequent(occurrences, candidate, topK, (b) => priorOf[b]! * term[b]!, orig, rank);
  const frequentBase = Float64Array.from(frequent, (b) => (priorOf === null ? 0 : priorOf[b]! * term[b]!));
  const isFrequent = new Uint8Array(prior > 0 ? nItems : 0);
  for (const b of frequent) isFrequent[b] = 1;
  const offeredAt = prior > 0 ? new Int32Array(nItems).fill(-1) : null;
  const sorted = { score: new Float64Array(topK), evidence: new Int32Array(topK), item: new Int32Array(topK) };
  const mergeScore = new Float64Array(topK);
  const mergeItem = new Int32Array(topK);

  /**
   * The score of b for anchor a (see Weighting): (c + prior) n(b)^-e times a's part, shrunk by
   * c / (c + s) where the weighting says so. `anchor` is a's part, the same for all its b.
   */
  const scoreOf = (c: number, b: number, anchor: number): number => {
    const shrunk = shrink > 0 ? c / (c + shrink) : 1;
    if (pmi) return (Math.log(c) + anchor - term[b]!) * shrunk;
    return (priorOf === null ? c : c + priorOf[b]!) * term[b]! * anchor * shrunk;
  };

  for (let a0 = 0; a0 < nItems; a0++) {
    outStart[a0] = out;
    const a = rank[a0]!;
    const nTouched = unit
      ? gatherUnit(a, byItemStart, byItem, groups.start, groups.items, count, touched)
      : gather(a, byItemStart, byItem, groups.start, groups.items, groups.weight, acc, touched);
    if (nTouched === 0 && offeredAt === null) continue;
    const na = occurrences[a]!;
    const anchor = weighting === 'cosine' ? 1 / Math.sqrt(na) : weighting === 'lift' ? total / na
      : weighting === 'damped' ? Math.pow(na, damping - 1) : pmi ? logTotal - Math.log(na) : 1;
    const famA = family === undefined ? -1 : family[a]!;
    const catA = category === undefined || factor === 1 ? -1 : category[a]!;
    for (let t = 0; t < nTouched; t++) {
      const b = touched[t]!;
      let c: number;
      let ev: number;
      if (unit) {
        c = ev = count[b]!;
        count[b] = 0;
      } else {
        const i = b << 1;
        c = acc[i]!;
        ev = acc[i + 1]!;
        acc[i] = 0;
        acc[i + 1] = 0;
      }
      if (pmi ? candidate !== undefined && candidate[b] !== 1 : term[b] === 0) continue;
      if (famA >= 0 && family![b] === famA) continue;
      if (offeredAt !== null && isFrequent[b] === 1) offeredAt[b] = a;
      let s = scoreOf(c, b, anchor);
      if (catA >= 0 && category![b] === catA) s = s >= 0 ? s * factor : s / factor;
      heap.offer(s, ev, orig[b]!);
    }
    if (out + topK > cap) {
      cap = Math.max(cap * 2, out + topK);
      const i2 = new Int32Array(cap); i2.set(outItem); outItem = i2;
      const s2 = new Float64Array(cap); s2.set(outScore); outScore = s2;
      const e2 = new Int32Array(cap); e2.set(outEvidence); outEvidence = e2;
    }
    if (offeredAt === null || na === 0) {
      out += heap.drain(outScore, outEvidence, outItem, out);
      continue;
    }
    // The frequent items a shares no group with: in anchor-independent order, except where the
    // same-category factor applies (rare: they go through the heap).
    let nMerge = 0;
    for (let j = 0; j < frequent.length; j++) {
      const b = frequent[j]!;
      if (offeredAt[b] === a || b === a || (famA >= 0 && family![b] === famA)) continue;
      const s = frequentBase[j]! * anchor;
      if (catA >= 0 && category![b] === catA) heap.offer(s * factor, 0, orig[b]!);
      else {
        mergeScore[nMerge] = s;
        mergeItem[nMerge++] = orig[b]!;
      }
    }
    const nSorted = heap.drain(sorted.score, sorted.evidence, sorted.item, 0);
    let i = 0;
    let j = 0;
    const end = out + topK;
    while (out < end && (i < nSorted || j < nMerge)) {
      // Same order as the heap: score, then evidence, then the lower index; merged ones have no evidence.
      const takeSorted = j === nMerge || (i < nSorted && (sorted.score[i]! > mergeScore[j]!
        || (sorted.score[i] === mergeScore[j] && (sorted.evidence[i]! > 0 || sorted.item[i]! < mergeItem[j]!))));
      if (takeSorted) {
        outScore[out] = sorted.score[i]!; outEvidence[out] = sorted.evidence[i]!; outItem[out++] = sorted.item[i++]!;
      } else {
        outScore[out] = mergeScore[j]!; outEvidence[out] = 0; outItem[out++] = mergeItem[j++]!;
      }
    }
  }
  outStart[nItems] = out;
  return { start: outStart, item: outItem.slice(0, out), score: outScore.slice(0, out), evidence: outEvidence.slice(0, out) };
}
