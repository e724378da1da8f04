import type { EventLog } from './eventLog.js';
import type { LiveGroups } from './liveGroups.js';
import type { ModelOptions } from './model.js';
import type { AnchorList, ItemFacts, NeighbourOptions, Neighbours, PriorStats } from './neighbours.js';
import { TopK } from './topK.js';
import { anchorFactor, ORDER_SCALE, orderDecay } from './weights.js';

/** Re-ranks one anchor of a live index (LiveNeighbours) from its groups as they stand, with the build's terms, scoring
 * and ties, so that its list is the one a build over the same events gives. */
export class LiveRanker {
  // Scratch: weight (double) at 2b, count at 4b + 2, stamp at 4b + 3 (as gatherOrdered).
  private slots = new ArrayBuffer(0);
  private slotWeight = new Float64Array(0);
  private slotCount = new Int32Array(0);
  private touched = new Int32Array(0);
  private readonly heap: TopK;
  private readonly ordered: boolean;
  private readonly decay: Float64Array;
  private readonly backward: number;
  readonly window: number;
  readonly damping: number;
  private readonly factor: number;
  /** k; where > 0 the prior's statistics are those of the last full build (see PriorStats). */
  readonly prior: number;
  private partnerWeight = new Float64Array(0);
  private readonly hot: number;
  private stamp = 0;

  constructor(private readonly log: EventLog, private readonly groups: LiveGroups, scoring: NeighbourOptions, options: ModelOptions) {
    this.heap = new TopK(scoring.topK ?? 30, log.items.idsNow());
    this.ordered = scoring.order !== undefined && scoring.order.window > 0;
    this.decay = this.ordered ? orderDecay(scoring.order!) : new Float64Array(0);
    this.backward = scoring.order?.backward ?? 0;
    this.window = this.ordered ? scoring.order!.window : Infinity;
    this.damping = scoring.damping ?? 0.3;
    this.factor = scoring.sameCategoryFactor ?? 1;
    this.prior = scoring.prior ?? 0;
    this.hot = Math.max(1, options.hotPositions ?? HOT_POSITIONS);
  }

  /** Scratch for the items the groups have room for (LiveGroups.ensureItems). */
  fit(): void {
    const n = this.groups.occurrences.length;
    if (this.touched.length >= n) return;
    this.slots = new ArrayBuffer(16 * n);
    this.slotWeight = new Float64Array(this.slots);
    this.slotCount = new Int32Array(this.slots);
    this.touched = new Int32Array(n);
  }

  /** Whether a group comes twice in `groups` (an item viewed twice in one visit): only then must a re-rank sort them by
   * group (byGroup) to count each group's evidence once, which costs. */
  private repeatsGroup(groups: number[]): boolean {
    const marks = this.groupMarks();
    const mark = ++this.stamp;
    for (let j = 0; j < groups.length; j++) {
      if (marks[groups[j]!] === mark) return true;
      marks[groups[j]!] = mark;
    }
    return false;
  }

  private groupMark = new Int32Array(0);

  private groupMarks(): Int32Array {
    const n = this.groups.cells.capacity;
    if (this.groupMark.length < n) this.groupMark = new Int32Array(Math.max(n, 2 * this.groupMark.length));
    return this.groupMark;
  }

  private readonly sums = new Map<number, NeighbourSums>();
  private neighbourStamp = new Int32Array(0);

  /** Anchor a's list as buildNeighbours computes it: gathered from its positions or, for a popular anchor, from the
   * sums kept as its groups come and go (NeighbourSums), then scored. */
  rank(a: number, facts: ItemFacts, scale: number, neighbours: Neighbours, lookup = false): AnchorList {
    const positionsOfA = this.groups.itemGroup[a]?.length ?? 0;
    let kept = this.sums.get(a);
    let wanted = lookup;
    if (kept !== undefined && (positionsOfA < this.hot >> 1 || kept.changes > positionsOfA + HOT_POSITIONS)) {
      // Few positions left, or more changes taken in than it holds: summed afresh if lookups
      // read it since it was summed, else dropped (its upkeep then costs nothing).
      wanted ||= kept.read;
      this.sums.delete(a);
      kept = undefined;
    }
    // Kept for anchors that lookups read: one only the flush re-ranks changes far more often than
    // it is read, and its upkeep would cost more than its re-ranking.
    if (kept === undefined && wanted && positionsOfA >= this.hot) {
      kept = this.sumsOf(a);
      this.sums.set(a, kept);
    }
    if (kept !== undefined && lookup) kept.read = true;
    const nTouched = kept !== undefined ? this.gatherKept(kept, scale) : this.gather(a, scale);
    return this.score(a, facts, scale, neighbours, nTouched);
  }

  private gather(a: number, scale: number): number {
    let groups = this.groups.itemGroup[a] ?? [];
    let positions = this.groups.itemPos[a] ?? [];
    if (this.ordered && groups.length > 1 && this.repeatsGroup(groups)) ({ groups, positions } = byGroup(groups, positions));
    const weight = this.slotWeight;
    const counts = this.slotCount;
    const touched = this.touched;
    const cells = this.groups.cells.cells;
    let nTouched = 0;
    for (let j = 0; j < groups.length; j++) {
      const g = groups[j]!;
      const k = positions[j]!;
      const start = this.groups.cells.start(g);
      const n = this.groups.cells.length(g);
      const w = this.groups.weight[g]! * scale;
      if (this.ordered) {
        const wb = w * this.backward;
        const hi = Math.min(n, k + this.window + 1);
        for (let p = this.backward === 0 ? k + 1 : Math.max(0, k - this.window); p < hi; p++) {
          const b = cells[start + p]!;
          if (b === a) continue;
          const i = b << 2;
          const stamp = counts[i + 3]!;
          if (stamp !== g + 1) {
            if (stamp === 0) touched[nTouched++] = b;
            counts[i + 3] = g + 1;
            counts[i + 2]!++;
          }
          weight[b << 1]! += p > k ? w * this.decay[p - k]! : wb * this.decay[k - p]!;
        }
      } else {
        for (let p = 0; p < n; p++) {
          const b = cells[start + p]!;
          if (b === a) continue;
          const i = b << 2;
          if (counts[i + 2] === 0) touched[nTouched++] = b;
          weight[b << 1]! += w;
          counts[i + 2]!++;
        }
      }
    }
    return nTouched;
  }

  /** The kept sums into the scratch, scaled as gather's (an exact power of two: see scaleFor); how many. */
  private gatherKept(kept: NeighbourSums, scale: number): number {
    const weight = this.slotWeight;
    const counts = this.slotCount;
    const touched = this.touched;
    for (let j = 0; j < kept.item.length; j++) {
      const b = kept.item[j]!;
      touched[j] = b;
      weight[b << 1] = kept.weight[j]! * scale;
      counts[(b << 2) + 2] = kept.evidence[j]!;
    }
    return kept.item.length;
  }

  private score(a: number, facts: ItemFacts, scale: number, neighbours: Neighbours, nTouched: number): AnchorList {
    const weight = this.slotWeight;
    const counts = this.slotCount;
    const touched = this.touched;
    const { candidate, family, category } = facts;
    const damping = this.damping;
    const anchor = anchorFactor(this.groups.occurrences[a]! * scale, damping);
    const famA = family === undefined || a >= family.length ? -1 : family[a]!;
    const catA = category === undefined || a >= category.length ? -1 : category[a]!;
    const sameCategory = catA >= 0 && this.factor !== 1;
    const heap = this.heap;
    heap.ids = this.log.items.idsNow(); // the array grows with new items: the one of now
    // Under a prior (see PriorStats): the build's π_a(b) from the last full build's statistics,
    // and the anchor's own scale for its prior list.
    const stats = this.prior > 0 ? neighbours.priorStats : undefined;
    let partners = 0;
    if (stats !== undefined) {
      growAnchorScale(neighbours, this.prior, a + 1);
      neighbours.anchorScale[a] = anchor;
      if (catA >= 0 && catA < stats.partnerStart.length - 1) {
        if (this.partnerWeight.length < stats.partnerStart.length - 1) this.partnerWeight = new Float64Array(stats.partnerStart.length - 1);
        for (let j = stats.partnerStart[catA]!; j < stats.partnerStart[catA + 1]!; j++) this.partnerWeight[stats.partner[j]!] = stats.partnerWeight[j]!;
        partners = stats.partnerStart[catA + 1]! - stats.partnerStart[catA]!;
      }
    }
    for (let t = 0; t < nTouched; t++) {
      const b = touched[t]!;
      const i = b << 2;
      const raw = weight[b << 1]!;
      const ev = counts[i + 2]!;
      weight[b << 1] = 0;
      counts[i + 2] = 0;
      counts[i + 3] = 0;
      const c = this.ordered ? raw / ORDER_SCALE : raw;
      const nb = stats === undefined ? this.groups.occurrences[b]! * scale : neighbourCount(stats, b, this.groups.occurrences[b]!);
      const term = nb > 0 && (candidate === undefined || candidate[b] === 1) ? Math.pow(nb, -damping) : 0;
      if (term === 0) continue;
      if (famA >= 0 && family![b] === famA) continue;
      let s: number;
      // The build's (c + prior·π) · n(b)^-d · n(a)^(d-1); with prior 0, c + 0 is c.
      if (stats === undefined) s = c * term * anchor;
      else s = (c + this.prior * priorOf(stats, this.groups.total, partners, this.partnerWeight, category, b, nb)) * term * anchor;
      if (sameCategory && category![b] === catA) s = s >= 0 ? s * this.factor : s / this.factor;
      heap.offer(s, ev, b);
    }
    if (partners > 0) for (let j = stats!.partnerStart[catA]!; j < stats!.partnerStart[catA + 1]!; j++) this.partnerWeight[stats!.partner[j]!] = 0;
    const n = heap.size;
    // Views on buffers of more than 64 bytes: V8 keeps smaller typed arrays on its heap, and a
    // lookup that meets both kinds runs slower.
    const list: AnchorList = { item: new Int32Array(Math.max(n, 32)).subarray(0, n), score: new Float64Array(Math.max(n, 16)).subarray(0, n), evidence: new Int32Array(Math.max(n, 32)).subarray(0, n) };
    heap.drain(list.score, list.evidence, list.item, 0);
    return list;
  }

  private sumsOf(a: number): NeighbourSums {
    const kept = new NeighbourSums();
    const groups = this.groups.itemGroup[a]!;
    const marks = this.groupMarks();
    const mark = ++this.stamp;
    for (const g of groups) {
      if (marks[g] === mark) continue;
      marks[g] = mark;
      this.sumGroup(kept, a, g, 1);
    }
    kept.changes = 0;
    return kept;
  }

  /** Adds (sign 1) or takes out (-1) group g's terms for anchor a, as gather adds them, unscaled. Every term is exact in a
   * double, so sums kept over time equal sums gathered at once, bit for bit. */
  private sumGroup(kept: NeighbourSums, a: number, g: number, sign: number): void {
    const cells = this.groups.cells.cells;
    const start = this.groups.cells.start(g);
    const n = this.groups.cells.length(g);
    const w = this.groups.weight[g]!;
    if (this.neighbourStamp.length < this.groups.occurrences.length) this.neighbourStamp = new Int32Array(this.groups.occurrences.length);
    const seen = this.neighbourStamp;
    const mark = ++this.stamp;
    kept.changes++;
    for (let k = 0; k < n; k++) {
      if (cells[start + k] !== a) continue;
      if (this.ordered) {
        const wb = w * this.backward;
        const hi = Math.min(n, k + this.window + 1);
        for (let p = this.backward === 0 ? k + 1 : Math.max(0, k - this.window); p < hi; p++) {
          const b = cells[start + p]!;
          if (b === a) continue;
          const first = seen[b] !== mark;
          seen[b] = mark;
          kept.add(b, sign * (p > k ? w * this.decay[p - k]! : wb * this.decay[k - p]!), first ? sign : 0);
        }
      } else {
        for (let p = 0; p < n; p++) {
          const b = cells[start + p]!;
          if (b !== a) kept.add(b, sign * w, sign);
        }
      }
    }
  }

  /** Group g came (sign 1) or goes (-1): the sums kept for the anchors it holds follow. */
  keepSums(g: number, sign: number): void {
    if (this.sums.size === 0) return;
    const cells = this.groups.cells.cells;
    const start = this.groups.cells.start(g);
    const n = this.groups.cells.length(g);
    for (let p = 0; p < n; p++) {
      const a = cells[start + p]!;
      const kept = this.sums.get(a);
      // an anchor twice in the group: summed once, over both its positions
      if (kept !== undefined && cells.indexOf(a, start) === start + p) this.sumGroup(kept, a, g, sign);
    }
  }
}

/** Room for `n` anchors' n(a)^(d-1) in the lists served (a kind with a prior): 1, a build's value for an item in no
 * group, until a re-rank sets it (every item whose n(a) changes is marked). */
export function growAnchorScale(neighbours: Neighbours, prior: number, n: number): void {
  const scale = neighbours.anchorScale;
  if (prior === 0 || scale.length >= n) return;
  const grown = new Float64Array(Math.max(n, 2 * scale.length)).fill(1);
  grown.set(scale);
  neighbours.anchorScale = grown;
}

/** Default of ModelOptions.hotPositions: a hot anchor that lookups read is then re-ranked from its neighbours, not its positions. */
const HOT_POSITIONS = 128;

/** One anchor's neighbours: per item b, the summed (unscaled) pair weight and the groups holding b near it; b leaves
 * with its last group. `changes`: groups in or out since it was summed afresh. */
class NeighbourSums {
  private readonly at = new Map<number, number>();
  readonly item: number[] = [];
  readonly weight: number[] = [];
  readonly evidence: number[] = [];
  changes = 0;
  /** Whether a lookup re-ranked the anchor since it was summed (else it is dropped when due to be summed afresh). */
  read = false;

  add(b: number, weight: number, evidence: number): void {
    let j = this.at.get(b);
    if (j === undefined) {
      j = this.item.length;
      this.at.set(b, j);
      this.item.push(b);
      this.weight.push(0);
      this.evidence.push(0);
    }
    this.weight[j]! += weight;
    this.evidence[j]! += evidence;
    if (this.evidence[j] === 0) {
      // its last group went (its weight is back to exactly 0): swap the last entry in
      const last = this.item.length - 1;
      if (j !== last) {
        this.item[j] = this.item[last]!;
        this.weight[j] = this.weight[last]!;
        this.evidence[j] = this.evidence[last]!;
        this.at.set(this.item[j]!, j);
      }
      this.item.pop();
      this.weight.pop();
      this.evidence.pop();
      this.at.delete(b);
    }
  }
}

/** b's n(b) on the neighbour's side: the statistics', or its current `own` where they do not know it (as the build, see PriorStats). */
function neighbourCount(stats: PriorStats, b: number, own: number): number {
  const frozen = b < stats.occurrences.length ? stats.occurrences[b]! : 0;
  return frozen > 0 ? frozen : own;
}

/** π_a(b) as the build computes it: the partner weight of b's category times b's share of it, where the anchor's
 * category has partners; else n(b) / N (the current N, `total`, where the statistics are an empty log's). */
function priorOf(stats: PriorStats, total: number, partners: number, partnerWeight: Float64Array, category: Int32Array | undefined, b: number, nb: number): number {
  if (partners === 0) return nb / (stats.total > 0 ? stats.total : total);
  const cb = category === undefined || b >= category.length ? -1 : category[b]!;
  if (cb < 0) return 0;
  const nCategories = stats.partnerStart.length - 1;
  const share = cb < nCategories && stats.categoryOccurrences[cb]! > 0 ? nb / stats.categoryOccurrences[cb]! : 0;
  return (cb < partnerWeight.length ? partnerWeight[cb]! : 0) * share;
}

function byGroup(groups: number[], positions: number[]): { groups: number[]; positions: number[] } {
  const keys = new Float64Array(groups.length);
  for (let j = 0; j < groups.length; j++) keys[j] = groups[j]! * 2_097_152 + positions[j]!;
  keys.sort();
  return { groups: Array.from(keys, (x) => Math.floor(x / 2_097_152)), positions: Array.from(keys, (x) => x % 2_097_152) };
}
