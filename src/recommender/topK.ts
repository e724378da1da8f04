/** A bounded min-heap of the best `k` (score, evidence, item); a tie goes to the lower item id, not index: indexes
 * follow the order items came in, which differs between a process, a replica and a restart. */
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
      // Most items have fewer than k neighbours: appended unordered (drain sorts them), made a heap only once full.
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
  /** Empties the heap into the arrays from `at`, best first; returns how many. An insertion sort from the leaves (larger
   * entries) first leaves little to shift, which beats k pops with sift-downs. */
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
