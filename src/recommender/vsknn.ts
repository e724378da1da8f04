import type { EventLog } from './eventLog.js';
import type { Sequences } from './sessions.js';

/** Session-based kNN with vector multiplication (V-SKNN, Ludewig & Jannach 2018): past sessions sharing items with the
 * current one, those items weighed by their position in it (linear decay), vote for their items. */
export interface VsknnOptions {
  /** Neighbour sessions that vote; default 100. */
  k?: number;
  /** Most recent sessions sharing an item with the current one that are compared; default 500. */
  sample?: number;
}

/** Past sessions as V-SKNN reads them: each one's distinct items (model indexes), its last time, and the sessions of
 * each item, newest first. */
export interface SessionIndex {
  items: Int32Array[];
  time: Float64Array;
  sessionsOf: Map<number, Int32Array>;
}

/** Indexes `sequences` (of `log`'s events). */
export function sessionIndex(log: EventLog, sequences: Sequences): SessionIndex {
  const items: Int32Array[] = [];
  const time = new Float64Array(sequences.count);
  const lists = new Map<number, number[]>();
  for (let s = 0; s < sequences.count; s++) {
    const distinct = new Set<number>();
    let last = -Infinity;
    for (let j = sequences.start[s]!; j < sequences.start[s + 1]!; j++) {
      const e = sequences.events[j]!;
      distinct.add(log.item[e]!);
      if (log.time[e]! > last) last = log.time[e]!;
    }
    items.push(Int32Array.from(distinct));
    time[s] = last;
  }
  const order = Array.from({ length: sequences.count }, (_, s) => s).sort((a, b) => time[b]! - time[a]! || b - a);
  for (const s of order) {
    for (const i of items[s]!) {
      let list = lists.get(i);
      if (list === undefined) lists.set(i, (list = []));
      list.push(s);
    }
  }
  const sessionsOf = new Map<number, Int32Array>();
  for (const [i, list] of lists) sessionsOf.set(i, Int32Array.from(list));
  return { items, time, sessionsOf };
}

/** Item scores for a session whose items (model indexes) are `current`, oldest first. */
export function vsknnScores(index: SessionIndex, current: readonly number[], options: VsknnOptions = {}): Map<number, number> {
  const k = options.k ?? 100;
  const sample = options.sample ?? 500;
  // the latest position of each item, 1-based: weight position / length
  const weight = new Map<number, number>();
  current.forEach((item, p) => weight.set(item, (p + 1) / current.length));
  const candidates = new Set<number>();
  for (const item of weight.keys()) for (const s of index.sessionsOf.get(item) ?? []) candidates.add(s);
  let sessions = [...candidates];
  if (sessions.length > sample) sessions = sessions.sort((a, b) => index.time[b]! - index.time[a]! || b - a).slice(0, sample);
  const similar = sessions.map((s) => {
    let sim = 0;
    for (const i of index.items[s]!) sim += weight.get(i) ?? 0;
    return { s, sim };
  }).sort((a, b) => b.sim - a.sim || index.time[b.s]! - index.time[a.s]!).slice(0, k);
  const scores = new Map<number, number>();
  for (const { s, sim } of similar) for (const i of index.items[s]!) scores.set(i, (scores.get(i) ?? 0) + sim);
  return scores;
}
