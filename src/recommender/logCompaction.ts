import type { KeyInterner } from './interners.js';
import { COLUMN_NAMES, columnsOf } from './logColumns.js';
import type { Columns } from './logColumns.js';

/** Where compact moved each event and key of a log: new index or id, -1 where dropped. */
export interface LogCompaction {
  /** By the event's index below `before` (what follows means nothing). */
  events: Int32Array;
  sessions: Int32Array;
  users: Int32Array;
  orders: Int32Array;
  /** Events before, and kept. */
  before: number;
  kept: number;
}

/** A compaction done in steps (EventLog.beginCompact): what its steps have done so far. */
export interface CompactionUnderWay {
  readonly cutoff: number;
  /** The log's length when it began: events from here on are the finish's. */
  readonly end: number;
  /** Events scanned (their new indexes, their keys marked), then copied to `to`; keys' names moved (all three kinds together). */
  scanned: number;
  copied: number;
  named: number;
  kept: number;
  /** Each scanned event's new index, -1 where dropped (and room after them: see beginCompact). */
  readonly events: Int32Array;
  /** Session, user and order keys by their ids when it began: once the scan is done, each one's new id (-1: dropped). */
  readonly keys: [Int32Array, Int32Array, Int32Array];
  readonly keysKept: [number, number, number];
  /** The kept keys' names by new id, and the other way round: the interners' next contents. */
  readonly names: [string[], string[], string[]];
  readonly maps: [Map<string, number>, Map<string, number>, Map<string, number>];
  /** The new columns, once the scan is done. */
  to: Columns | null;
}

/** What a key's name moved to the next interner costs a step against an event scanned or copied: a Map insertion against a few writes. */
const NAME_COST = 8;

/** A key's new id where `map` has it; one without a name (addKeys) as it is. */
function rekeyed(map: Int32Array, key: number): number {
  return key >= 0 && key < map.length ? map[key]! : key;
}

/** The session, user and order interners of a log. */
export type Interners = [KeyInterner, KeyInterner, KeyInterner];

/** A compaction of a log of `length` events in columns of `capacity` (see EventLog.beginCompact). */
export function beginCompaction(cutoff: number, length: number, capacity: number, interners: Interners): CompactionUnderWay {
  const [sessions, users, orders] = interners;
  return {
    // as long as the log's columns, so that the finish writes the events added meanwhile in it
    // (until the log grows) rather than copying it into a longer one on the swap's turn
    cutoff, end: length, scanned: 0, copied: 0, named: 0, kept: 0, events: new Int32Array(Math.max(length, capacity)), to: null,
    keys: [new Int32Array(sessions.size), new Int32Array(users.size), new Int32Array(orders.size)],
    keysKept: [0, 0, 0],
    names: [[], [], []],
    maps: [new Map<string, number>(), new Map<string, number>(), new Map<string, number>()],
  };
}

/** Up to `maxEvents` more of a compaction's steps over the log's columns (see EventLog.compactStep). */
export function compactionStep(c: CompactionUnderWay, log: Columns, interners: Interners, maxEvents: number): boolean {
  let budget = maxEvents;
  if (c.to === null) {
    budget -= scan(c, log, budget);
    if (c.to === null || budget <= 0) return false;
  }
  if (c.copied < c.end) {
    budget -= copy(c, log, budget);
    if (c.copied < c.end || budget <= 0) return false;
  }
  let before = 0;
  for (let k = 0; k < 3 && budget > 0; before += c.keys[k]!.length, k++) {
    const keys = c.keys[k]!;
    const from = c.named - before;
    if (from >= keys.length) continue;
    const stop = Math.min(keys.length, from + Math.ceil(budget / NAME_COST));
    const names = c.names[k]!;
    const map = c.maps[k]!;
    const interner = interners[k]!;
    for (let id = from; id < stop; id++) {
      if (keys[id]! < 0) continue;
      const name = interner.nameOf(id);
      map.set(name, names.length);
      names.push(name);
    }
    budget -= NAME_COST * (stop - from);
    c.named += stop - from;
  }
  return c.named === c.keys[0].length + c.keys[1].length + c.keys[2].length;
}

/** Scans up to `budget` events: each one's new index, and the keys of those kept. Scanned done, it numbers the keys. */
function scan(c: CompactionUnderWay, log: Columns, budget: number): number {
  const { time, session, user, order } = log;
  const [sessions, users, orders] = c.keys;
  const events = c.events;
  const from = c.scanned;
  const stop = Math.min(c.end, from + budget);
  let kept = c.kept;
  // 1 marks a key a kept event has, until numbered
  for (let e = from; e < stop; e++) {
    if (!(time[e]! >= c.cutoff)) {
      events[e] = -1;
      continue;
    }
    events[e] = kept++;
    const s = session[e]!;
    const u = user[e]!;
    const o = order[e]!;
    if (s >= 0 && s < sessions.length) sessions[s] = 1;
    if (u >= 0 && u < users.length) users[u] = 1;
    if (o >= 0 && o < orders.length) orders[o] = 1;
  }
  c.scanned = stop;
  c.kept = kept;
  if (stop === c.end) {
    for (let k = 0; k < 3; k++) {
      const keys = c.keys[k]!;
      let next = 0;
      for (let id = 0; id < keys.length; id++) keys[id] = keys[id] === 1 ? next++ : -1;
      c.keysKept[k] = next;
    }
    // twice what is kept, as grow() leaves it: sized to `kept` exactly, the next event (in the next
    // batch, on the request path) copied the whole log again into columns of twice that
    c.to = columnsOf(Math.max(1024, 2 * kept));
  }
  return stop - from;
}

/** Copies up to `budget` more of the events scanned to the new columns, their keys renumbered. */
function copy(c: CompactionUnderWay, log: Columns, budget: number): number {
  const { kind, item, time, session, user, order } = log;
  const to = c.to!;
  const events = c.events;
  const [sessions, users, orders] = c.keys;
  const from = c.copied;
  const stop = Math.min(c.end, from + budget);
  for (let e = from; e < stop; e++) {
    const j = events[e]!;
    if (j < 0) continue;
    to.kind[j] = kind[e]!;
    to.item[j] = item[e]!;
    to.time[j] = time[e]!;
    to.session[j] = rekeyed(sessions, session[e]!);
    to.user[j] = rekeyed(users, user[e]!);
    to.order[j] = rekeyed(orders, order[e]!);
  }
  c.copied = stop;
  return stop - from;
}

/** Whether every step of a compaction is done (the finish's turn). */
export function compactionDone(c: CompactionUnderWay): boolean {
  return c.to !== null && c.copied >= c.end && c.named >= c.keys[0].length + c.keys[1].length + c.keys[2].length;
}

/** The finish of a compaction whose steps are done, over a log of `length` events now: the new columns with the events
 * added meanwhile, the interners moved to the kept names, and where each event and key went. */
export function finishCompaction(c: CompactionUnderWay, log: Columns, length: number, interners: Interners): { to: Columns; moved: LogCompaction } {
  const before = length;
  // every key numbered now: those of the events added meanwhile get the next ids, in their order
  const maps = interners.map((interner, k) => {
    const map = new Int32Array(interner.size).fill(-1);
    map.set(c.keys[k]!);
    return map;
  }) as [Int32Array, Int32Array, Int32Array];
  const next = [...c.keysKept];
  const number = (k: number, key: number): number => {
    const map = maps[k]!;
    if (key < 0 || key >= map.length) return key; // without a name (addKeys): as it is
    if (map[key]! < 0) {
      map[key] = next[k]!++;
      const name = interners[k]!.nameOf(key);
      c.maps[k]!.set(name, c.names[k]!.length);
      c.names[k]!.push(name);
    }
    return map[key]!;
  };
  const kept = c.kept + before - c.end;
  let to = c.to!;
  if (to.kind.length < kept) {
    const grown = columnsOf(2 * kept);
    for (const name of COLUMN_NAMES) grown[name].set(to[name].subarray(0, c.kept));
    to = grown;
  }
  const { kind, item, session, user, order, time } = log;
  let events = c.events;
  if (events.length < before) {
    events = new Int32Array(before);
    events.set(c.events);
  }
  for (let e = c.end, j = c.kept; e < before; e++, j++) {
    events[e] = j;
    to.kind[j] = kind[e]!;
    to.item[j] = item[e]!;
    to.time[j] = time[e]!;
    to.session[j] = number(0, session[e]!);
    to.user[j] = number(1, user[e]!);
    to.order[j] = number(2, order[e]!);
  }
  interners.forEach((interner, k) => interner.replace(c.names[k]!, c.maps[k]!));
  const [sessions, users, orders] = maps;
  return { to, moved: { events, sessions, users, orders, before, kept } };
}
