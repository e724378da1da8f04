import { MemoryCache } from './memory.js';
import { newStats, type CacheEntry, type CacheStats, type SharedCache } from '../ports/cache.js';

export interface TieredCacheOptions {
  /** Seconds an entry read from or written to the shared tier is also kept in process; default 5. */
  localTtlSeconds?: number;
  localMaxEntries?: number;
}

/** A short in-process tier in front of Redis: hot entries skip a round trip, and while Redis is down
 * recent entries still answer, so a burst of requests is no burst of upstream calls. */
export class TieredCache implements SharedCache {
  private readonly local: MemoryCache;
  private readonly localTtl: number;
  readonly stats: CacheStats = newStats();

  constructor(
    private readonly shared: SharedCache,
    options: TieredCacheOptions = {},
  ) {
    this.localTtl = options.localTtlSeconds ?? 5;
    this.local = new MemoryCache({ maxEntries: options.localMaxEntries ?? 10_000 });
  }

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
