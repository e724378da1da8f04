import type { Neighbours } from './neighbours.js';

/** Folds the overrides into the CSR arrays, so that lookups and memory stay those of a built model. */
export function foldOverrides(n: Neighbours, nItems: number): void {
  const overrides = n.overrides;
  if (overrides === undefined || overrides.size === 0) return;
  const built = n.start.length - 1;
  let total = 0;
  for (let a = 0; a < nItems; a++) {
    const o = overrides.get(a);
    total += o !== undefined ? o.item.length : a < built ? n.start[a + 1]! - n.start[a]! : 0;
  }
  const start = new Int32Array(nItems + 1);
  const item = new Int32Array(total);
  const score = new Float64Array(total);
  const evidence = new Int32Array(total);
  let at = 0;
  for (let a = 0; a < nItems; a++) {
    start[a] = at;
    const o = overrides.get(a);
    if (o !== undefined) {
      item.set(o.item, at); score.set(o.score, at); evidence.set(o.evidence, at);
      at += o.item.length;
    } else if (a < built) {
      const from = n.start[a]!;
      const to = n.start[a + 1]!;
      item.set(n.item.subarray(from, to), at); score.set(n.score.subarray(from, to), at); evidence.set(n.evidence.subarray(from, to), at);
      at += to - from;
    }
  }
  start[nItems] = at;
  // One assignment after another while lookups run in between is impossible (single thread).
  n.start = start;
  n.item = item;
  n.score = score;
  n.evidence = evidence;
  overrides.clear();
}
