import { msToUtcMidnight, utcDay } from '../../../model/keyLimits.js';
import type { KeyStore, UsageCount } from './store.js';

/** How often counted requests are written to the store, in ms: what a SIGKILL loses at most. */
export const USAGE_FLUSH_MS = 2_000;

/** Requests of a quota key a process admits past what the store last told it, before it writes and
 * asks again: a hundredth of the quota, at least one. Each replica may overshoot by about this much. */
export const quotaSlack = (dailyQuota: number): number => Math.max(1, Math.floor(dailyQuota / 100));

/** Requests per key per UTC day, counted in memory and added to the store's key_usage rows in
 * batches: replicas each add their own, so the rows are the sum. A failed write keeps its counts
 * for the next. The rows' totals come back with each write: they decide the daily quotas. */
export class UsageCounter {
  /** This day's counts by key id: one map lookup a request, the day's name made once a day. */
  private today = new Map<string, UsageCount>();
  private day = '';
  private dayEnds = 0;
  /** Counts of days gone by and of failed writes, not written yet. */
  private earlier: UsageCount[] = [];
  /** The batch being written. */
  private writing: UsageCount[] = [];
  /** Admitted requests of each key this day, every replica's, as the store answered the last write. */
  private stored = new Map<string, number>();
  /** Whether the last write failed: quotas are then decided on what this process knows. */
  private failing = false;
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
    const entry = this.entry(keyId);
    entry.requests += 1;
    if (refused) entry.refused += 1;
  }

  private entry(keyId: string): UsageCount {
    const now = this.now();
    if (now >= this.dayEnds || now < this.dayEnds - 86_400_000) this.newDay(now);
    let entry = this.today.get(keyId);
    if (entry === undefined) {
      entry = { keyId, day: this.day, requests: 0, refused: 0 };
      this.today.set(keyId, entry);
    }
    return entry;
  }

  private newDay(now: number): void {
    this.earlier.push(...this.today.values());
    this.today = new Map();
    this.stored = new Map();
    this.day = utcDay(now);
    this.dayEnds = now + msToUtcMidnight(now);
  }

  /** Whether the key's admitted requests this day, every replica's, are under the quota: false is sure
   * (the store's totals only grow); undefined when settleQuota must ask the store first. */
  quotaLeft(keyId: string, dailyQuota: number): boolean | undefined {
    const pending = this.entry(keyId);
    let admitted = pending.requests - pending.refused;
    for (const count of [...this.earlier, ...this.writing]) {
      if (count.keyId === keyId && count.day === this.day) admitted += count.requests - count.refused;
    }
    const stored = this.stored.get(keyId);
    if ((stored ?? 0) + admitted >= dailyQuota) return false;
    if (this.failing) return true;
    return stored === undefined || admitted >= quotaSlack(dailyQuota) ? undefined : true;
  }

  /** Writes what was counted and learns the key's total back in the same round trip; never rejects. */
  async settleQuota(keyId: string): Promise<void> {
    // a key with nothing counted yet is written as nothing, so that the store answers its total
    this.entry(keyId);
    await this.flush().catch(() => undefined);
  }

  /** Counts not written yet for the key: added to what the store answers. */
  unwritten(keyId: string): UsageCount[] {
    const today = this.today.get(keyId);
    return [...this.earlier.filter((entry) => entry.keyId === keyId), ...(today ? [today] : [])].filter((entry) => entry.requests > 0);
  }

  /** Writes what was counted, one write at a time; counts a write failed to add wait for the next. */
  async flush(): Promise<void> {
    while (this.flushing !== null) await this.flushing;
    const batch = merged([...this.earlier, ...this.today.values()]);
    if (batch.length === 0) return;
    this.earlier = [];
    this.today = new Map();
    this.writing = batch;
    this.flushing = this.store.addUsage(batch).then((totals) => {
      this.writing = [];
      this.failing = false;
      // a key deleted meanwhile has no row: nothing more to learn of it
      for (const count of batch) if (count.day === this.day) this.stored.set(count.keyId, this.stored.get(count.keyId) ?? 0);
      for (const total of totals) if (total.day === this.day) this.stored.set(total.keyId, total.requests - total.refused);
    }, (error: unknown) => {
      this.writing = [];
      this.failing = true;
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
