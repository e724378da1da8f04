/** Adds up item a's co-occurrence into `acc` (weight at 2b, shared groups at 2b + 1: one cache line, b being random),
 * listing the items met in `touched`; returns how many. Its own small function so that V8 optimises it hot. */
export function gather(
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

/** gather for groups that all weigh 1 (visits): one Int32 per item, the number of shared groups, halves the scratch
 * memory the memory-bound pair loop hits, and one read-modify-write per pair instead of two. */
export function gatherUnit(
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

/** gather for ordered groups: weight · decay[distance] for items within the window; weight, count and group stamp
 * share one 16-byte slot per item (one cache line per pair). The caller clears the slots listed in `touched`. */
export function gatherOrdered(
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
