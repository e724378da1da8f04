/** The live groups' items, then each item's slot in its list of positions, in one Int32Array (an array per group cost
 * more than its numbers). A freed block goes to the next group of its size, so the cells stay at the peak per size. */
export class GroupCells {
  /** The cells; replaced when it grows, so read it after any add, not before. */
  cells = new Int32Array(1024);
  private at = new Int32Array(64);
  private size = new Int32Array(64);
  private top = 0;
  /** Per size n, the starts of freed blocks of 2n cells. */
  private readonly free: number[][] = [];
  private groups = 0;

  /** How many group numbers have been given blocks: one past the highest. */
  get capacity(): number {
    return this.groups;
  }

  /** Where group g's items start in `cells`. */
  start(g: number): number {
    return this.at[g]!;
  }

  /** How many items group g holds (0 for a number not in use). */
  length(g: number): number {
    return this.size[g]!;
  }

  /** Gives group g (not in use) `items`, its slots 0 until set; returns where its items start. */
  add(g: number, items: readonly number[]): number {
    const n = items.length;
    if (g >= this.at.length) {
      this.at = grown(this.at, g + 1);
      this.size = grown(this.size, g + 1);
    }
    if (g >= this.groups) this.groups = g + 1;
    let at = this.free[n]?.pop();
    if (at === undefined) {
      at = this.top;
      if (at + 2 * n > this.cells.length) this.cells = grown(this.cells, at + 2 * n);
      this.top += 2 * n;
    }
    const cells = this.cells;
    for (let p = 0; p < n; p++) {
      cells[at + p] = items[p]!;
      cells[at + n + p] = 0;
    }
    this.at[g] = at;
    this.size[g] = n;
    return at;
  }

  /** Lets group g's block go, to the next group of its size. */
  remove(g: number): void {
    const n = this.size[g]!;
    if (n > 0) (this.free[n] ??= []).push(this.at[g]!);
    this.size[g] = 0;
    this.at[g] = 0;
  }
}

function grown(a: Int32Array, n: number): Int32Array<ArrayBuffer> {
  const b = new Int32Array(Math.max(n, 2 * a.length));
  b.set(a);
  return b;
}
