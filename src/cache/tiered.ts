import { MemoryCache } from './memory.js';
import { newStats, type CacheEntry, type CacheStats, type SharedCache } from '../ports/cache.js';

export interface TieredCacheOptions {
  /** Seconds an entry read from or written to the shared tier is also kept in process; default 5. */
  localTtlSeconds?: number;
  /** Entries kept in process at most; default 10,000. */
  localMaxEntries?: number;
}

/**
 * A short-lived in-process tier in front of the shared one (Redis). A hot entry costs no Redis
 * round trip for a few seconds, and while Redis is slow or down the entries of the last seconds
 * still answer, so a burst of requests does not become a burst of upstream calls. Entries stay
 * shared: whatever one process writes, every process reads from Redis once its local copy ages out.
 */
export class TieredCache implements SharedCache {
  private readonly local: MemoryCache;
  private readonly localTtl: number;
  /** Hits of either tier, the shared tier's misses and errors. */
  readonly stats: CacheStats = newStats();

  constructor(
    private readonly shared: SharedCache,
    options: TieredCacheOptions = {},
  ) {
    this.localTtl = options.localTtlSeconds ?? 5;
    this.local = new MemoryCache({ maxEntries: options.localMaxEntries ?? 10_000 });
  }

  /** Runs a call of the shared tier and adds what it counted to this cache's counters. */
  private async counted<T>(call: () => Promise<T>): Promise<T> {
    const { hits, misses, errors } = this.shared.stats;
    try {
      return await call();
    } finally {
      this.stats.hits += this.shared.stats.hits - hits;
      this.stats.misses += this.shared.stats.misses - misses;
      this.stats.errors += this.shared.stats.errors - errors;
    }
  }

  async getMany(keys: readonly string[]): Promise<(string | null)[]> {
    const values = await this.local.getMany(keys);
    const missing = keys.filter((_, i) => values[i] === null);
    this.stats.hits += keys.length - missing.length;
    if (missing.length === 0) return values;
    const fetched = await this.counted(() => this.shared.getMany(missing));
    const refill: CacheEntry[] = [];
    let j = 0;
    for (let i = 0; i < keys.length; i++) {
      if (values[i] !== null) continue;
      const value = fetched[j++] ?? null;
      values[i] = value;
      if (value !== null) refill.push({ key: keys[i]!, value, ttlSeconds: this.localTtl });
    }
    await this.local.setMany(refill);
    return values;
  }

  async setMany(entries: readonly CacheEntry[]): Promise<void> {
    await this.local.setMany(entries.map((e) => ({ ...e, ttlSeconds: Math.min(e.ttlSeconds, this.localTtl) })));
    await this.counted(() => this.shared.setMany(entries));
  }

  async delete(keys: readonly string[]): Promise<void> {
    await this.local.delete(keys);
    await this.shared.delete(keys);
  }

  forgetLocal(keys?: readonly string[]): void {
    this.local.forget(keys);
  }

  check(): Promise<string> {
    return this.shared.check();
  }

  async close(): Promise<void> {
    await this.local.close();
    await this.shared.close();
  }
}
