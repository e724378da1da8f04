import { KIND_PURCHASE } from './eventLog.js';
import type { EventLog } from './eventLog.js';

/** Sequences of event indexes in CSR form: sequence s is `events[start[s] .. start[s+1])`, in time order. `weight[s]`
 * is what one sequence counts for in co-occurrence. */
export interface Sequences {
  count: number;
  start: Int32Array;
  events: Int32Array;
  weight: Float32Array;
}

/** A user's log without session ids is split where they were idle this long (the usual web-analytics visit). */
export const DEFAULT_SESSION_GAP_MS = 30 * 60 * 1000;

class SequenceBuilder {
  private start: number[] = [0];
  private events: Int32Array;
  private n = 0;
  private weights: number[] = [];
  constructor(capacity: number) {
    this.events = new Int32Array(Math.max(capacity, 1));
  }
  push(e: number): void {
    this.events[this.n++] = e;
  }
  /** Closes the open sequence (dropping it when empty). */
  close(weight: number): void {
    if (this.n === this.start[this.start.length - 1]) return;
    this.start.push(this.n);
    this.weights.push(weight);
  }
  build(): Sequences {
    return {
      count: this.weights.length,
      start: Int32Array.from(this.start),
      events: this.events.subarray(0, this.n),
      weight: Float32Array.from(this.weights),
    };
  }
}

/** Buckets event indexes by an integer key with a counting sort: O(n + keys), no comparisons, stable, so events keep
 * the log's order within a bucket. */
function bucket(indexes: Int32Array, keys: Int32Array, keySpace: number): { start: Int32Array; order: Int32Array } {
  const start = new Int32Array(keySpace + 1);
  for (let i = 0; i < indexes.length; i++) start[keys[i]! + 1]!++;
  for (let k = 0; k < keySpace; k++) start[k + 1]! += start[k]!;
  const fill = start.slice(0, keySpace);
  const order = new Int32Array(indexes.length);
  for (let i = 0; i < indexes.length; i++) order[fill[keys[i]!]!++] = indexes[i]!;
  return { start, order };
}

function sortByTime(log: EventLog, order: Int32Array, from: number, to: number): void {
  const time = log.time;
  let sorted = true;
  for (let i = from + 1; i < to; i++) {
    if (time[order[i]!]! < time[order[i - 1]!]!) {
      sorted = false;
      break;
    }
  }
  if (sorted) return;
  // Stable for equal times (Array.prototype.sort is), so the file order breaks ties.
  const part = Array.from(order.subarray(from, to)).sort((a, b) => time[a]! - time[b]!);
  order.set(part, from);
}

/** Options of groupEvents. */
export interface GroupOptions {
  /** Idle time splitting a user's log into sessions where there are no session ids; default 30 min. */
  sessionGapMs?: number;
  /** Events before this time are left out (RECS_EVENTS_MAX_AGE_DAYS); default none. */
  since?: number;
}

/** Visits of one kind of event: by session id, else by user split at `sessionGapMs` idle; for purchases the order.
 * Events with neither are dropped: they show no co-occurrence. */
export function visits(log: EventLog, kind: number, options: GroupOptions = {}): Sequences {
  const gap = options.sessionGapMs ?? DEFAULT_SESSION_GAP_MS;
  const since = options.since ?? -Infinity;
  const primary = kind === KIND_PURCHASE ? log.order : log.session;
  const secondary = kind === KIND_PURCHASE ? log.session : log.user;
  let n = 0;
  let maxKey = 0;
  for (let i = 0; i < log.length; i++) {
    if (log.kind[i] !== kind || log.time[i]! < since) continue;
    const k = primary[i]! >= 0 ? primary[i]! : secondary[i]!;
    if (k < 0) continue;
    n++;
    if (k > maxKey) maxKey = k;
  }
  const indexes = new Int32Array(n);
  const keys = new Int32Array(n);
  const splitAtGaps = new Uint8Array(2 * maxKey + 2);
  n = 0;
  for (let i = 0; i < log.length; i++) {
    if (log.kind[i] !== kind || log.time[i]! < since) continue;
    const p = primary[i]!;
    const k = p >= 0 ? 2 * p : secondary[i]! >= 0 ? 2 * secondary[i]! + 1 : -1;
    if (k < 0) continue;
    indexes[n] = i;
    keys[n++] = k;
  }
  // Only a user's log (views) is split at gaps; an order or a session is one unit however long.
  if (kind !== KIND_PURCHASE) for (let k = 1; k < splitAtGaps.length; k += 2) splitAtGaps[k] = 1;
  const { start, order } = bucket(indexes, keys, 2 * maxKey + 2);
  const out = new SequenceBuilder(n);
  for (let k = 0; k < start.length - 1; k++) {
    const from = start[k]!;
    const to = start[k + 1]!;
    if (from === to) continue;
    sortByTime(log, order, from, to);
    let last = -Infinity;
    for (let j = from; j < to; j++) {
      const e = order[j]!;
      if (splitAtGaps[k] === 1 && log.time[e]! - last > gap) out.close(1);
      last = log.time[e]!;
      out.push(e);
    }
    out.close(1);
  }
  return out.build();
}

/** Each user's purchases, in time order: the looser evidence for next-best-product. */
export function userHistories(log: EventLog, weight: number, since = -Infinity): Sequences {
  let n = 0;
  let maxUser = -1;
  for (let i = 0; i < log.length; i++) {
    if (log.kind[i] === KIND_PURCHASE && log.user[i]! >= 0 && log.time[i]! >= since) {
      n++;
      if (log.user[i]! > maxUser) maxUser = log.user[i]!;
    }
  }
  const indexes = new Int32Array(n);
  const keys = new Int32Array(n);
  n = 0;
  for (let i = 0; i < log.length; i++) {
    if (log.kind[i] === KIND_PURCHASE && log.user[i]! >= 0 && log.time[i]! >= since) {
      indexes[n] = i;
      keys[n++] = log.user[i]!;
    }
  }
  const { start, order } = bucket(indexes, keys, maxUser + 1);
  const out = new SequenceBuilder(n);
  for (let u = 0; u <= maxUser; u++) {
    const from = start[u]!;
    const to = start[u + 1]!;
    if (from === to) continue;
    sortByTime(log, order, from, to);
    for (let j = from; j < to; j++) out.push(order[j]!);
    out.close(weight);
  }
  return out.build();
}
