import type { ListCountSink, ListCountsModel } from '../ports/attribution.js';
import { kindOfCode, LIST_CODES, variantOfCode, type ListCode } from '../model/trackingId.js';

/** How often counts are written to the store (or sent upstream), in ms: what a SIGKILL loses at most. */
export const LIST_COUNTS_FLUSH_MS = 2_000;
export const HOUR_MS = 3_600_000;

/** What is counted of a list: served, clicked (a VIEW naming it), bought from (a PURCHASE naming it). */
export const IMPRESSION = 0;
export const CLICK = 1;
export const PURCHASE = 2;
export type ListEvent = typeof IMPRESSION | typeof CLICK | typeof PURCHASE;
const SLOTS = LIST_CODES * 3;

/** Impressions, clicks and purchases per kind of list, variant and UTC hour, counted in memory (an
 * array slot each) and added to the store's hour rows in batches: replicas each add their own, so
 * the rows are the sum. A failed write keeps its counts for the next (as keys/usageCounter.ts). */
export class ListCounter {
  /** Since the process started, for Prometheus. */
  readonly totals = new Float64Array(SLOTS);
  private hour = -1;
  private current = new Float64Array(SLOTS);
  /** Hours gone by and failed writes, not written yet. */
  private earlier: ListCountsModel[] = [];
  private readonly timer: NodeJS.Timeout | null;
  private flushing: Promise<void> | null = null;

  constructor(
    /** The store, or a REST-mode front's upstream; null: counted for Prometheus only. */
    private readonly store: ListCountSink | null,
    private readonly now: () => number = Date.now,
    flushMs = LIST_COUNTS_FLUSH_MS,
  ) {
    this.timer = store === null ? null : setInterval(() => void this.flush().catch(() => undefined), flushMs);
    this.timer?.unref();
  }

  count(code: ListCode, event: ListEvent, n = 1): void {
    const hour = Math.floor(this.now() / HOUR_MS);
    if (hour !== this.hour) this.newHour(hour);
    const slot = code * 3 + event;
    this.current[slot] = this.current[slot]! + n;
    this.totals[slot] = this.totals[slot]! + n;
  }

  /** Counts an impression of each list an answer held; `codes` as RequestTracking gathered them. */
  readonly countImpressions = (codes: readonly ListCode[]): void => {
    for (const code of codes) this.count(code, IMPRESSION);
  };

  /** Adds counts another process made (a front's impressions) to the next write, not to the totals:
   * Prometheus counts what this process served. */
  add(rows: readonly ListCountsModel[]): void {
    this.earlier = merged([...this.earlier, ...rows]);
  }

  private newHour(hour: number): void {
    this.earlier.push(...rowsOf(this.hour, this.current));
    this.current = new Float64Array(SLOTS);
    this.hour = hour;
  }

  /** Counts not written yet: added to what the store answers. */
  unwritten(): ListCountsModel[] {
    return [...this.earlier, ...rowsOf(this.hour, this.current)];
  }

  /** Writes what was counted, one write at a time; counts a write failed to add wait for the next. */
  async flush(): Promise<void> {
    while (this.flushing !== null) await this.flushing;
    if (this.store === null) return;
    const batch = merged(this.unwritten());
    if (batch.length === 0) return;
    this.earlier = [];
    this.current = new Float64Array(SLOTS);
    this.flushing = this.store.addListCounts(batch).catch((error: unknown) => {
      this.earlier.push(...batch);
      throw error;
    }).finally(() => {
      this.flushing = null;
    });
    await this.flushing;
  }

  /** Waits for a write under way, so that a read of the store and of unwritten() counts each count once. */
  async settled(): Promise<void> {
    while (this.flushing !== null) await this.flushing.catch(() => undefined);
  }

  /** Stops the timer and writes the rest: at shutdown, before the store closes. */
  async close(): Promise<void> {
    if (this.timer !== null) clearInterval(this.timer);
    await this.flush().catch(() => undefined);
  }
}

function rowsOf(hour: number, counts: Float64Array): ListCountsModel[] {
  const rows: ListCountsModel[] = [];
  if (hour < 0) return rows;
  for (let code = 0; code < LIST_CODES; code++) {
    const [impressions, clicks, purchases] = [counts[code * 3]!, counts[code * 3 + 1]!, counts[code * 3 + 2]!];
    if (impressions + clicks + purchases > 0) rows.push({ hour, kind: kindOfCode(code), variant: variantOfCode(code), impressions, clicks, purchases });
  }
  return rows;
}

/** One row per hour, kind and variant: PostgreSQL's upsert may not touch a row twice in one statement. */
export function merged(counts: readonly ListCountsModel[]): ListCountsModel[] {
  const bySlot = new Map<string, ListCountsModel>();
  for (const count of counts) {
    const slot = `${count.hour}\n${count.kind}\n${count.variant}`;
    const known = bySlot.get(slot);
    if (known === undefined) bySlot.set(slot, { ...count });
    else {
      known.impressions += count.impressions;
      known.clicks += count.clicks;
      known.purchases += count.purchases;
    }
  }
  return [...bySlot.values()];
}
