import { LRUCache } from 'lru-cache';

export interface ClockedLRUOptions<K, V> {
  /** Entries kept at most. */
  max: number;
  /** Size kept at most (bytes, as sizeCalculation counts them); unbounded but for `max` when absent. */
  maxSize?: number;
  sizeCalculation?: LRUCache.SizeCalculator<K, V>;
  /** How long an entry is served, in ms; each set may give its own. None: until evicted. */
  ttl?: number;
  /** The clock, in ms; default Date.now. */
  now?: () => number;
}

/** A TTL of `ms` on ClockedLRU's clock (see there). */
const ticks = (ms: number): number => Math.max(1, Math.round(2 * ms) - 1);

/**
 * An LRUCache whose TTLs count on the caller's clock (tests move it by hand) as every expiry in
 * the gateway counts: an entry set at t for d ms is served while now < t + d. lru-cache serves it
 * through t + d and reads a start of 0 as "never expires": its clock here counts half-ms from 1.
 */
export class ClockedLRU<K extends NonNullable<unknown>, V extends NonNullable<unknown>> extends LRUCache<K, V> {
  constructor({ max, maxSize, sizeCalculation, ttl, now = Date.now }: ClockedLRUOptions<K, V>) {
    super({
      max,
      ...(maxSize !== undefined ? { maxSize } : {}),
      ...(sizeCalculation !== undefined ? { sizeCalculation } : {}),
      ...(ttl !== undefined && ttl > 0 ? { ttl: ticks(ttl) } : {}),
      perf: { now: () => 2 * now() + 1 },
      // every read asks the clock: lru-cache's default keeps one reading for a millisecond of real time
      ttlResolution: 0,
    });
  }

  /** As LRUCache's, with `ttl` and `start` in ms on this cache's clock; a TTL of 0 or less keeps nothing. */
  override set(key: K, value: V | undefined, options: LRUCache.SetOptions<K, V, unknown> = {}): this {
    const { ttl, start } = options;
    if (ttl !== undefined && ttl <= 0) {
      this.delete(key);
      return this;
    }
    return super.set(key, value, {
      ...options,
      ...(ttl !== undefined ? { ttl: ticks(ttl) } : {}),
      ...(start !== undefined ? { start: 2 * start + 1 } : {}),
    });
  }
}
