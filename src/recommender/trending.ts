import { underCategory } from '../model/itemLists.js';
import type { Catalog } from './catalog.js';
import type { EventLog } from './eventLog.js';
import { DAY_MS } from './weights.js';

/** The whole window trending compares against, in days: the last day and the days before it. */
export const TRENDING_WINDOW_DAYS = 28;
/** Added to the events a day before: a rate below about one a day is noise, so such items are compared on their
 * last day's count alone, and an item new today is not divided by zero. */
export const TRENDING_BASE_RATE = 1;
/** Items with fewer events than this in the last day are left out: one or two events are chance. */
export const TRENDING_MIN_EVENTS = 3;

/** One trending item: its id and the rule's score. */
export interface TrendingEntry {
  itemId: number;
  score: number;
  /** Its events in the last day. */
  recent: number;
}

/** Items by descending events in the last day / (TRENDING_BASE_RATE + events a day over the 27 days before), for items
 * with a record and TRENDING_MIN_EVENTS in the last day; ties by recent events, then lower id. "now" is the log's newest
 * event, so one log gives one list; `maxAgeMs` (the model's window, 0: none) shortens the window when shorter. */
export function trendingOf(log: EventLog, catalog: Catalog | null, maxAgeMs = 0): TrendingEntry[] {
  const n = log.length;
  if (n === 0) return [];
  const time = log.time;
  let now = -Infinity;
  for (let e = 0; e < n; e++) if (time[e]! > now) now = time[e]!;
  const windowMs = maxAgeMs > 0 ? Math.min(maxAgeMs, TRENDING_WINDOW_DAYS * DAY_MS) : TRENDING_WINDOW_DAYS * DAY_MS;
  const dayStart = now - DAY_MS;
  const windowStart = now - windowMs;
  const beforeDays = Math.max(windowMs / DAY_MS - 1, 1);
  const size = log.items.size;
  const recent = new Uint32Array(size);
  const before = new Uint32Array(size);
  const item = log.item;
  for (let e = 0; e < n; e++) {
    const t = time[e]!;
    if (t > dayStart) recent[item[e]!]!++;
    else if (t > windowStart) before[item[e]!]!++;
  }
  const ids = log.items.idsNow();
  const out: TrendingEntry[] = [];
  for (let i = 0; i < size; i++) {
    if (recent[i]! < TRENDING_MIN_EVENTS) continue;
    const itemId = ids[i]!;
    if (catalog !== null && !catalog.has(itemId)) continue;
    out.push({ itemId, score: recent[i]! / (TRENDING_BASE_RATE + before[i]! / beforeDays), recent: recent[i]! });
  }
  out.sort((a, b) => b.score - a.score || b.recent - a.recent || a.itemId - b.itemId);
  return out;
}

/** The first `first` entries whose items the catalogue holds (null: any), under `categoryPath` (null: any). */
export function inCategory<T extends { itemId: number }>(entries: readonly T[], catalog: Catalog | null, categoryPath: string | null, first: number): T[] {
  const out: T[] = [];
  for (const entry of entries) {
    if (out.length >= first) break;
    if (catalog === null) {
      if (categoryPath === null) out.push(entry);
      continue;
    }
    const item = catalog.get(entry.itemId);
    if (item !== undefined && (categoryPath === null || underCategory(item.categoryPath, categoryPath))) out.push(entry);
  }
  return out;
}

/** A pass shorter than this is done again at every change of the model. */
const FRESH_MS = 1;
/** A longer one at most once every this many times it took. */
const RECOMPUTE_FACTOR = 10;

/** trendingOf kept for a model and computed again after it changes, but a pass of FRESH_MS or more at most once every
 * RECOMPUTE_FACTOR times it took: a long log's pass holds at most about a tenth of the event loop, and its list is at
 * most that long behind the events. A new log (a reload) is always passed over at once. */
export class TrendingScores {
  private kept: { model: object; log: EventLog; entries: TrendingEntry[]; at: number; ms: number } | null = null;

  constructor(private readonly clock: () => number = () => performance.now()) {}

  /** The scores for `model` (any object that changes when the events do) over `log`. */
  of(model: object, log: EventLog, catalog: Catalog | null, maxAgeMs: number): readonly TrendingEntry[] {
    const kept = this.kept;
    const start = this.clock();
    if (kept !== null && kept.log === log && (kept.model === model || (kept.ms >= FRESH_MS && start - kept.at < RECOMPUTE_FACTOR * kept.ms))) return kept.entries;
    const entries = trendingOf(log, catalog, maxAgeMs);
    const at = this.clock();
    this.kept = { model, log, entries, at, ms: at - start };
    return entries;
  }
}
