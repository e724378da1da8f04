import type { EventLog } from './eventLog.js';
import { GroupCells } from './groupCells.js';
import { growFloat64, growInt32 } from './typedArrays.js';

/** A live index's groups in reused slots, with n(b) and N kept as they come and go. The cells after a group's items
 * hold where each position sits in its item's lists (itemGroup, itemPos), so a group leaves in O(its size). */
export class LiveGroups {
  readonly cells = new GroupCells();
  /** Each slot's weight (0 when free). */
  weight: number[] = [];
  private readonly free: number[] = [];
  /** Positions of all groups (what a build walks). */
  positions = 0;
  /** N: the weights of all groups (exact sums, see ORDER_SCALE). */
  total = 0;
  itemGroup: number[][] = [];
  itemPos: number[][] = [];
  /** n(b). */
  occurrences: Float64Array = new Float64Array(0);
  private itemStamp: Int32Array = new Int32Array(0);
  private stamp = 0;

  constructor(private readonly ordered: boolean, private readonly collapseRepeats: boolean) {}

  /** How many items have room. */
  get items(): number {
    return this.itemGroup.length;
  }

  /** Room for `n` items; the per-item arrays are then `occurrences.length` long. */
  ensureItems(n: number): void {
    while (this.itemGroup.length < n) {
      this.itemGroup.push([]);
      this.itemPos.push([]);
    }
    if (this.occurrences.length < n) {
      this.occurrences = growFloat64(this.occurrences, Math.max(n, 2 * this.occurrences.length, 1024));
      this.itemStamp = growInt32(this.itemStamp, this.occurrences.length, -1);
    }
  }

  /** The items of the events list[from..to) by the build's rules (buildGroups). */
  itemsOf(log: EventLog, list: readonly number[], from: number, to: number, maxItems: number, keepLast: boolean): number[] {
    const stamp = ++this.stamp;
    const items: number[] = [];
    let distinct = 0;
    for (let j = 0; j < to - from; j++) {
      const item = log.item[list[keepLast ? to - 1 - j : from + j]!]!;
      if (this.itemStamp[item] !== stamp) {
        if (distinct === maxItems) break;
        this.itemStamp[item] = stamp;
        distinct++;
      } else if (!this.ordered || (this.collapseRepeats && items[items.length - 1] === item)) {
        continue;
      }
      items.push(item);
    }
    if (keepLast) items.reverse();
    return items;
  }

  /** Takes a group of `items` weighing `weight`; `changed` hears of each distinct item once its n(b) moved. Returns its slot. */
  add(items: readonly number[], weight: number, changed: (b: number) => void): number {
    const g = this.free.pop() ?? this.cells.capacity;
    const slots = this.cells.add(g, items) + items.length;
    const cells = this.cells.cells;
    const mark = ++this.stamp;
    for (let p = 0; p < items.length; p++) {
      const b = items[p]!;
      cells[slots + p] = this.itemGroup[b]!.length;
      this.itemGroup[b]!.push(g);
      this.itemPos[b]!.push(p);
      if (this.itemStamp[b] !== mark) {
        this.itemStamp[b] = mark;
        this.occurrences[b]! += weight;
        changed(b);
      }
    }
    this.weight[g] = weight;
    this.positions += items.length;
    this.total += weight;
    return g;
  }

  /** Lets group g go; `changed` as for add. */
  remove(g: number, changed: (b: number) => void): void {
    const cells = this.cells.cells;
    const start = this.cells.start(g);
    const n = this.cells.length(g);
    const weight = this.weight[g]!;
    const mark = ++this.stamp;
    for (let p = 0; p < n; p++) {
      const b = cells[start + p]!;
      const groups = this.itemGroup[b]!;
      const positions = this.itemPos[b]!;
      const at = cells[start + n + p]!;
      const last = groups.length - 1;
      if (at !== last) {
        const mg = groups[last]!;
        const mp = positions[last]!;
        groups[at] = mg;
        positions[at] = mp;
        cells[this.cells.start(mg) + this.cells.length(mg) + mp] = at;
      }
      groups.pop();
      positions.pop();
      if (this.itemStamp[b] !== mark) {
        this.itemStamp[b] = mark;
        this.occurrences[b]! -= weight;
        changed(b);
      }
    }
    this.positions -= n;
    this.total -= weight;
    this.cells.remove(g);
    this.weight[g] = 0;
    this.free.push(g);
  }
}
