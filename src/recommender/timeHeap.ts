import type { EventLog } from './eventLog.js';
import { growInt32 } from './typedArrays.js';

/** A min-heap of event indexes by time, for expiry. */
export class TimeHeap {
  private heap: Int32Array = new Int32Array(1024);
  size = 0;
  constructor(private readonly log: EventLog) {}
  push(e: number): void {
    if (this.size === this.heap.length) this.heap = growInt32(this.heap, 2 * this.size);
    const time = this.log.time;
    let i = this.size++;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (time[this.heap[parent]!]! <= time[e]!) break;
      this.heap[i] = this.heap[parent]!;
      i = parent;
    }
    this.heap[i] = e;
  }
  peekTime(): number {
    return this.size === 0 ? Infinity : this.log.time[this.heap[0]!]!;
  }
  /** Renumbers the events held (EventLog.compact keeps their order, and so the heap's). */
  remap(events: Int32Array): void {
    for (let i = 0; i < this.size; i++) this.heap[i] = events[this.heap[i]!]!;
  }
  pop(): number {
    const top = this.heap[0]!;
    const last = this.heap[--this.size]!;
    const time = this.log.time;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= this.size) break;
      const r = l + 1;
      const m = r < this.size && time[this.heap[r]!]! < time[this.heap[l]!]! ? r : l;
      if (time[this.heap[m]!]! >= time[last]!) break;
      this.heap[i] = this.heap[m]!;
      i = m;
    }
    this.heap[i] = last;
    return top;
  }
}
