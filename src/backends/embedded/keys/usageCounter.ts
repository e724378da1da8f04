import { msToUtcMidnight, utcDay } from '../../../model/keyLimits.js';
import type { KeyStore, UsageCount } from './store.js';

/** How often counted requests are written to the store, in ms: what a SIGKILL loses at most. */
export const USAGE_FLUSH_MS = 2_000;

/** Requests per key per UTC day, counted in memory and added to the store's key_usage rows in
 * batches: replicas each add their own, so the rows are the sum. A failed write keeps its counts
 * for the next. */
export class UsageCounter {
  /** This day's counts by key id: one map lookup a request, the day's name made once a day. */
  private today = new Map<string, UsageCount>();
  private day = '';
  private dayEnds = 0;
  /** Counts of days gone by and of failed writes, not written yet. */
  private earlier: UsageCount[] = [];
  private readonly timer: NodeJS.Timeout;
  private flushing: Promise<void> | null = null;

  constructor(
    private readonly store: Pick<KeyStore, 'addUsage'>,
    private readonly now: () => number = Date.now,
    flushMs = USAGE_FLUSH_MS,
  ) {
    this.timer = setInterval(() => void this.flush().catch(() => undefined), flushMs);
    this.timer.unref();
  }

  count(keyId: string, refused: boolean): void {
    const now = this.now();
    if (now >= this.dayEnds || now < this.dayEnds - 86_400_000) this.newDay(now);
    let entry = this.today.get(keyId);
    if (entry === undefined) {
      entry = { keyId, day: this.day, requests: 0, refused: 0 };
      this.today.set(keyId, entry);
    }
    entry.requests += 1;
    if (refused) entry.refused += 1;
  }

  private newDay(now: number): void {
    this.earlier.push(...this.today.values());
    this.today = new Map();
    this.day = utcDay(now);
    this.dayEnds = now + msToUtcMidnight(now);
  }

  /** Counts not written yet for the key: added to what the store answers. */
  unwritten(keyId: string): UsageCount[] {
    const today = this.today.get(keyId);
    return [...this.earlier.filter((entry) => entry.keyId === keyId), ...(today ? [today] : [])];
  }

  /** Writes what was counted, one write at a time; counts a write failed to add wait for the next. */
  async flush(): Promise<void> {
    while (this.flushing !== null) await this.flushing;
    const batch = merged([...this.earlier, ...this.today.values()]);
    if (batch.length === 0) return;
    this.earlier = [];
    this.today = new Map();
    this.flushing = this.store.addUsage(batch).catch((error: unknown) => {
      this.earlier.push(...batch);
      throw error;
    }).finally(() => {
      this.flushing = null;
    });
    await this.flushing;
  }

  /** Stops the timer and writes the rest: at shutdown, before the store closes. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush().catch(() => undefined);
  }
}

/** One count per key and day: PostgreSQL's upsert may not touch a row twice in one statement. */
function merged(counts: readonly UsageCount[]): UsageCount[] {
  const byKeyDay = new Map<string, UsageCount>();
  for (const count of counts) {
    const slot = `${count.keyId}\n${count.day}`;
    const known = byKeyDay.get(slot);
    if (known === undefined) byKeyDay.set(slot, { ...count });
    else {
      known.requests += count.requests;
      known.refused += count.refused;
    }
  }
  return [...byKeyDay.values()];
}
