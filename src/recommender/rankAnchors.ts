import { startAnchorThread } from './anchorThread.js';
import type { CategoryAssociation } from './categoryPrior.js';
import { gather, gatherOrdered, gatherUnit } from './gather.js';
import type { PairScore } from './neighbours.js';
import { TopK } from './topK.js';
import { anchorFactor, ORDER_SCALE } from './weights.js';

/** Everything the anchor loop of buildNeighbours reads (by rank, see renumberByDegree): plain typed arrays and numbers,
 * so that it crosses to a second thread (anchorThread.ts) as it is. */
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
  association: Omit<CategoryAssociation, 'occurrences'> | null;
}

/** The lists of the anchors (item indexes) from .. to-1: `start` from 0 (to - from + 1 entries), and their anchor factors where there is a prior. */
export interface RankedAnchors {
  start: Int32Array;
  item: Int32Array;
  score: Float64Array;
  evidence: Int32Array;
  anchorScale: Float64Array;
}

/** Ranks every anchor; with `twoThreads`, two threads take chunks from a shared counter, so neither waits. The chunks
 * in order are one thread's lists, bit for bit; a second thread not started by the last chunk is called off. */
export function rankEveryAnchor(pass: AnchorPass, pairScore: PairScore | null, twoThreads: boolean): RankedAnchors {
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

/** Ranks the chunks of ANCHOR_CHUNK anchors this thread claims from `next` (the index of the next chunk, shared between
 * threads) until none is left, calling `ranked` after each; the array holds them at their index. */
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
  // Doubles keep sums of the exact terms exact (see ORDER_SCALE) in a 16-byte ordered slot; where every group weighs 1
  // and pairs are unordered, Int32 counts give the same numbers in a quarter of the space.
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
