/** `a`, or a copy at least `n` long (twice as long at least), new entries `fill`. */
export function growInt32(a: Int32Array, n: number, fill = 0): Int32Array {
  if (a.length >= n) return a;
  const b = new Int32Array(Math.max(n, 2 * a.length)).fill(fill);
  b.set(a);
  return b;
}

/** `a`, or a copy at least `n` long (twice as long at least), new entries 0. */
export function growFloat64(a: Float64Array, n: number): Float64Array {
  if (a.length >= n) return a;
  const b = new Float64Array(Math.max(n, 2 * a.length));
  b.set(a);
  return b;
}
