import type { EventLog } from './eventLog.js';
import type { LiveSet } from './liveSets.js';
import type { LogCompaction } from './logCompaction.js';

/** A key's groups: one slot, or several where its events split (a user's visits). */
export type KeyGroups = number | number[];

/** A live index's events by key, per set (a visit, an order, a user), in the build's order, with each key's group slots
 * and the keys touched since the last commit; it follows the log's compaction in steps (beginRemap). */
export class LiveKeys {
  private readonly lists: Map<number, number[]>[];
  private readonly groups: Map<number, KeyGroups>[];
  private readonly touched: Set<number>[];
  /** A remap under way (beginRemap), per set: the keys changed since it began, and the new maps so far; where its steps
   * are (`s`: set and map, lists first; `from`: the entries left). */
  private remapping: {
    changed: Set<number>[];
    lists: Map<number, number[]>[];
    groups: Map<number, KeyGroups>[];
    s: number;
    from: MapIterator<[number, number[] | KeyGroups]> | null;
  } | null = null;

  constructor(private readonly log: EventLog, private readonly sets: readonly LiveSet[]) {
    this.lists = sets.map(() => new Map<number, number[]>());
    this.groups = sets.map(() => new Map<number, KeyGroups>());
    this.touched = sets.map(() => new Set());
  }

  /** The events of `key` in set s, in the build's order. */
  list(s: number, key: number): number[] | undefined {
    return this.lists[s]!.get(key);
  }

  groupsOf(s: number, key: number): KeyGroups | undefined {
    return this.groups[s]!.get(key);
  }

  setGroups(s: number, key: number, groups: KeyGroups): void {
    this.groups[s]!.set(key, groups);
  }

  /** Forgets a key whose events all left. */
  drop(s: number, key: number): void {
    this.lists[s]!.delete(key);
    this.groups[s]!.delete(key);
  }

  /** Files event e (of any kind) under its keys. */
  add(e: number): void {
    const log = this.log;
    for (let s = 0; s < this.sets.length; s++) {
      const set = this.sets[s]!;
      if (log.kind[e] !== set.kind) continue;
      const key = set.keyOf(log, e);
      if (key < 0) continue;
      this.touched[s]!.add(key);
      const list = this.lists[s]!.get(key);
      if (list === undefined) {
        this.lists[s]!.set(key, [e]);
        continue;
      }
      // After every event at or before its time: the build's order (time, then log order).
      const t = log.time[e]!;
      let lo = 0;
      let hi = list.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (log.time[list[mid]!]! <= t) lo = mid + 1;
        else hi = mid;
      }
      if (list.length < EXACT_LIST) this.lists[s]!.set(key, lo === list.length ? list.concat(e) : withAt(list, lo, e));
      else if (lo === list.length) list.push(e);
      else list.splice(lo, 0, e);
    }
  }

  /** Marks the keys of event e (taken out by age) for commit. */
  expire(e: number): void {
    for (let s = 0; s < this.sets.length; s++) {
      const set = this.sets[s]!;
      if (this.log.kind[e] !== set.kind) continue;
      const key = set.keyOf(this.log, e);
      if (key >= 0) this.touched[s]!.add(key);
    }
  }

  /** Hands every key touched since the last commit to `recompute`, set by set, and forgets them. */
  commit(recompute: (s: number, key: number) => void): void {
    for (let s = 0; s < this.sets.length; s++) {
      const changed = this.remapping?.changed[s];
      for (const key of this.touched[s]!) {
        recompute(s, key);
        changed?.add(key);
      }
      this.touched[s]!.clear();
    }
  }

  /** Files every event from `cutoff`, then hands each key to `recompute`, yielding every `step` events so a caller spreads it. */
  *load(cutoff: number, step: number, recompute: (s: number, key: number) => void): Generator<void, void, void> {
    const log = this.log;
    for (let e = 0; e < log.length; e++) {
      if (e % step === step - 1) yield;
      if (log.time[e]! < cutoff) continue;
      for (let s = 0; s < this.sets.length; s++) {
        const set = this.sets[s]!;
        if (log.kind[e] !== set.kind) continue;
        const key = set.keyOf(log, e);
        if (key < 0) continue;
        let list = this.lists[s]!.get(key);
        if (list === undefined) this.lists[s]!.set(key, (list = []));
        list.push(e);
      }
    }
    for (let s = 0; s < this.sets.length; s++) {
      let n = 0;
      for (const [key, list] of this.lists[s]!) {
        // Stable: equal times keep the log's order, as in the build.
        list.sort((x, y) => log.time[x]! - log.time[y]!);
        if (list.length < EXACT_LIST) this.lists[s]!.set(key, list.slice());
        recompute(s, key);
        if (++n % (step >> 4) === 0) yield;
      }
    }
  }

  /** Follows the log's compaction: keys whose events change are noted, remapStep copies the others renumbered to new
   * maps, finishRemap copies the noted ones and moves to the new maps. A remap begun replaces one under way. */
  beginRemap(): void {
    this.remapping = {
      changed: this.sets.map(() => new Set<number>()),
      lists: this.sets.map(() => new Map<number, number[]>()),
      groups: this.sets.map(() => new Map<number, KeyGroups>()),
      s: 0,
      from: null,
    };
  }

  /** Copies about `budget` events' worth of the remap, renumbered by `settled`; true when done (finishRemap's turn). */
  remapStep(settled: LogCompaction, budget: number): boolean {
    const r = this.remapping!;
    const events = settled.events;
    for (; r.s < 2 * this.sets.length; r.s++, r.from = null) {
      const s = r.s >> 1;
      const set = this.sets[s]!;
      const changed = r.changed[s]!;
      const touched = this.touched[s]!;
      // each key's list, then each key's groups; a key that changed since the remap began is the finish's
      const groups = (r.s & 1) === 1;
      r.from ??= groups ? this.groups[s]!.entries() : this.lists[s]!.entries();
      for (;;) {
        if (budget <= 0) return false;
        const next = r.from.next();
        if (next.done === true) break;
        const [key, value] = next.value;
        budget--;
        if (changed.has(key) || touched.has(key)) continue;
        const to = set.rekey(key, settled);
        if (!(to >= 0)) {
          changed.add(key); // a key the compaction had not numbered (never when filed before it): the finish's
          continue;
        }
        if (groups) r.groups[s]!.set(to, value);
        else {
          const list = value as number[];
          const moved = new Array<number>(list.length);
          for (let j = 0; j < list.length; j++) moved[j] = events[list[j]!]!;
          r.lists[s]!.set(to, moved);
          budget -= list.length;
        }
      }
    }
    return true;
  }

  /** Whether a remap is under way and its steps are done. */
  get remapDone(): boolean {
    return this.remapping !== null && this.remapping.s === 2 * this.sets.length;
  }

  /** Ends a remap whose steps are done: the keys that changed meanwhile, renumbered by `moved`, then the new maps in use. */
  finishRemap(moved: LogCompaction): void {
    const r = this.remapping!;
    this.remapping = null;
    const events = moved.events;
    for (let s = 0; s < this.sets.length; s++) {
      const set = this.sets[s]!;
      const lists = r.lists[s]!;
      const groups = r.groups[s]!;
      for (const changed of [r.changed[s]!, this.touched[s]!]) {
        for (const key of changed) {
          const to = set.rekey(key, moved);
          const list = this.lists[s]!.get(key);
          if (list === undefined) lists.delete(to);
          else lists.set(to, list.map((e) => events[e]!));
          const slots = this.groups[s]!.get(key);
          if (slots === undefined) groups.delete(to);
          else groups.set(to, slots);
        }
      }
      this.lists[s] = lists;
      this.groups[s] = groups;
      const touched = new Set<number>();
      for (const key of this.touched[s]!) touched.add(set.rekey(key, moved));
      this.touched[s] = touched;
    }
  }
}

/** Below this many events, a key's list is made anew, exactly sized, for each event it takes: an array grown by push
 * keeps room for many more, and there is one list for every visit and order. */
const EXACT_LIST = 16;

/** A copy of `list` with `e` at `at`, exactly sized. */
function withAt(list: readonly number[], at: number, e: number): number[] {
  const copy = new Array<number>(list.length + 1);
  for (let i = 0; i < at; i++) copy[i] = list[i]!;
  copy[at] = e;
  for (let i = at; i < list.length; i++) copy[i + 1] = list[i]!;
  return copy;
}
