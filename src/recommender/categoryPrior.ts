import type { Groups, PriorStats } from './neighbours.js';
import { TopK } from './topK.js';

/** Each category's partner categories (`partner[start[A] .. start[A+1])`) with their weights, and n(A). */
export interface CategoryAssociation {
  start: Int32Array;
  partner: Int32Array;
  weight: Float64Array;
  occurrences: Float64Array;
}

/** How often each category shares a group with another beyond `lift` times chance: (C(A,B) - lift n(A) n(B) / N) / n(A)
 * where positive, at most `maxPartners` per category; its thin anchors are filled from these partners (see Scoring). */
export function categoryAssociation(groups: Groups, category: Int32Array, nCategories: number, lift: number, maxPartners: number, rank?: Int32Array): CategoryAssociation {
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

/** Partner categories kept per category for the prior (see categoryAssociation). */
export const MAX_PARTNER_CATEGORIES = 10;

/** This build's prior statistics (see PriorStats), by real index. */
export function statsOf(total: number, occurrences: Float64Array, orig: Int32Array, association: CategoryAssociation | null): PriorStats {
  const byIndex = new Float64Array(orig.length);
  for (let r = 0; r < orig.length; r++) byIndex[orig[r]!] = occurrences[r]!;
  return {
    total, occurrences: byIndex,
    categoryOccurrences: association?.occurrences ?? new Float64Array(0),
    partnerStart: association?.start ?? new Int32Array(1), partner: association?.partner ?? new Int32Array(0), partnerWeight: association?.weight ?? new Float64Array(0),
  };
}

/** The prior's lists (see Neighbours.priorStart): per category its partners' items by k · weight · share(b) · n(b)^-d;
 * last, every item by k · n(b)/N · n(b)^-d. At most `size` each. */
export function priorListsOf(
  prior: number, factor: number, size: number, occurrences: Float64Array, total: number, term: Float64Array, category: Int32Array | undefined,
  association: Omit<CategoryAssociation, 'occurrences'> | null, share: Float64Array, orig: Int32Array,
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
