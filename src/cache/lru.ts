import { LRUCache } from 'lru-cache';

export interface ClockedLRUOptions<K, V> {
  max: number;
  /** Size kept at most, as sizeCalculation counts; unbounded but for `max` when absent. */
  maxSize?: number;
  sizeCalculation?: LRUCache.SizeCalculator<K, V>;
  /** ms an entry is served; each set may give its own; none: until evicted. */
  ttl?: number;
  now?: () => number;
}

const ticks = (ms: number): number => Math.max(1, Math.round(2 * ms) - 1);

/** An LRUCache whose TTLs count on the caller's clock, served while now < t + d as every expiry here;
 * lru-cache serves through t + d and reads a start of 0 as "never", so its clock counts half-ms from 1. */
export class ClockedLRU<K extends NonNullable<unknown>, V extends NonNullable<unknown>> extends LRUCache<K, V> {
  constructor({ max, maxSize, sizeCalculation, ttl, now = Date.now }: ClockedLRUOptions<K, V>) {
    super({
      max,
      ...(maxSize !== undefined ? { maxSize } : {}),
      ...(sizeCalculation !== undefined ? { sizeCalculation } : {}),
      ...(ttl !== undefined && ttl > 0 ? { ttl: ticks(ttl) } : {}),
      perf: { now: () => 2 * now() + 1 },
      // every read asks the clock: lru-cache's default reuses one reading for a millisecond
      ttlResolution: 0,
    });
  }

  /** `ttl` and `start` in ms on this cache's clock; a TTL of 0 or less keeps nothing. */
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
