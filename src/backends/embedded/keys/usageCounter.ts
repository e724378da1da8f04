import { utcDay } from '../../../model/keyLimits.js';
import type { KeyStore, UsageCount } from './store.js';

/** How often counted requests are written to the store, in ms: what a SIGKILL loses at most. */
export const USAGE_FLUSH_MS = 2_000;

/**
 * Requests per key per UTC day, counted in memory and added to the store's key_usage rows in
 * batches: replicas each add their own, so the rows are the sum. A failed write keeps its counts
 * for the next.
 */
export class UsageCounter {
  private pending = new Map<string, UsageCount>();
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
    const day = utcDay(this.now());
    const slot = `${keyId}\n${day}`;
    let entry = this.pending.get(slot);
    if (entry === undefined) {
      entry = { keyId, day, requests: 0, refused: 0 };
      this.pending.set(slot, entry);
    }
    entry.requests += 1;
    if (refused) entry.refused += 1;
  }

  /** Counts not written yet for the key, by day: added to what the store answers. */
  unwritten(keyId: string): UsageCount[] {
    return [...this.pending.values()].filter((entry) => entry.keyId === keyId);
  }

  /** Writes what was counted; one write at a time, and counts it failed to write wait for the next. */
  async flush(): Promise<void> {
    while (this.flushing !== null) await this.flushing;
    if (this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    this.flushing = this.store.addUsage([...batch.values()]).catch((error: unknown) => {
      for (const [slot, entry] of batch) {
        const later = this.pending.get(slot);
        if (later === undefined) this.pending.set(slot, entry);
        else {
          later.requests += entry.requests;
          later.refused += entry.refused;
        }
      }
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
