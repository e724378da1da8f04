import type { EventLog } from './eventLog.js';
import type { Groups, GroupSet } from './neighbours.js';
import { DAY_MS, recencyWeight, referenceStep } from './weights.js';

/** The groups of all sets: distinct items or, where `ordered`, positions, up to maxItems+1 distinct; weights halve every `halfLifeDays`. */
export function buildGroups(
  log: EventLog, sets: readonly GroupSet[], nItems: number, ordered: boolean, collapseRepeats: boolean, halfLifeDays: number,
  int32: (n: number) => Int32Array = (n) => new Int32Array(n),
): Groups {
  let total = 0;
  let groups = 0;
  for (const s of sets) {
    total += s.sequences.events.length;
    groups += s.sequences.count;
  }
  const start = new Int32Array(groups + 1);
  const items = int32(total);
  const weight = new Float64Array(groups);
  const stamp = new Int32Array(nItems).fill(-1);
  let latest = -Infinity;
  if (halfLifeDays > 0) for (let i = 0; i < log.length; i++) if (log.time[i]! > latest) latest = log.time[i]!;
  const halfLifeMs = halfLifeDays * DAY_MS;
  const reference = halfLifeDays > 0 ? referenceStep(latest, halfLifeMs) : 0;
  let g = 0;
  let n = 0;
  for (const { sequences, maxItems, keepLast } of sets) {
    for (let s = 0; s < sequences.count; s++) {
      const from = sequences.start[s]!;
      const to = sequences.start[s + 1]!;
      const begin = n;
      let distinct = 0;
      for (let j = 0; j < to - from; j++) {
        const item = log.item[sequences.events[keepLast === true ? to - 1 - j : from + j]!]!;
        if (stamp[item] !== g) {
          if (distinct === maxItems) break;
          stamp[item] = g;
          distinct++;
        } else if (!ordered || (collapseRepeats && items[n - 1] === item)) {
          continue;
        }
        items[n++] = item;
      }
      if (keepLast === true) items.subarray(begin, n).reverse();
      weight[g] = halfLifeDays > 0 ? sequences.weight[s]! * recencyWeight(log.time[sequences.events[to - 1]!]!, halfLifeMs, reference) : sequences.weight[s]!;
      start[++g] = n;
    }
  }
  return { start, items: items.subarray(0, n), weight };
}
