import { KIND_PURCHASE, KIND_VIEW } from './eventLog.js';
import type { EventLog } from './eventLog.js';
import type { LogCompaction } from './logCompaction.js';
import type { ModelOptions } from './model.js';

/** How one group set of a live index keys, splits and weighs its events (the live twin of sessions.ts). */
export interface LiveSet {
  kind: number;
  /** The event's key in this set, or -1: no group (sessions.ts drops such events too). */
  keyOf(log: EventLog, e: number): number;
  /** Whether a key's events split where idle for more than the gap (a user's views without session). */
  splits(key: number): boolean;
  /** The key a key becomes when the log is compacted (its ids renumbered: EventLog.compact). */
  rekey(key: number, moved: LogCompaction): number;
  weight: number;
  maxItems: number;
  keepLast: boolean;
}

export function postBrowseLiveSets(options: ModelOptions): LiveSet[] {
  return [{
    kind: KIND_VIEW,
    keyOf: (log, e) => (log.session[e]! >= 0 ? 2 * log.session[e]! : log.user[e]! >= 0 ? 2 * log.user[e]! + 1 : -1),
    splits: (key) => (key & 1) === 1,
    rekey: (key, moved) => ((key & 1) === 0 ? 2 * moved.sessions[key >> 1]! : 2 * moved.users[key >> 1]! + 1),
    weight: 1,
    maxItems: options.maxItemsPerGroup ?? 30,
    keepLast: false,
  }];
}

export function nextBestLiveSets(options: ModelOptions): LiveSet[] {
  return [
    {
      kind: KIND_PURCHASE,
      keyOf: (log, e) => (log.order[e]! >= 0 ? 2 * log.order[e]! : log.session[e]! >= 0 ? 2 * log.session[e]! + 1 : -1),
      splits: () => false,
      rekey: (key, moved) => ((key & 1) === 0 ? 2 * moved.orders[key >> 1]! : 2 * moved.sessions[key >> 1]! + 1),
      weight: 1,
      maxItems: options.maxItemsPerGroup ?? 30,
      keepLast: false,
    },
    {
      kind: KIND_PURCHASE,
      keyOf: (log, e) => log.user[e]!,
      splits: () => false,
      rekey: (key, moved) => moved.users[key]!,
      weight: Math.fround(options.userHistoryWeight ?? 0.25),
      maxItems: options.maxItemsPerHistory ?? 50,
      keepLast: true,
    },
  ];
}
