import { LRUCache } from 'lru-cache';
import { newStats, type CacheEntry, type SharedCache } from '../ports/cache.js';
import { promised } from '../shared/promised.js';

export interface MemoryCacheOptions {
  /** Entries kept at most; default 50,000. */
  maxEntries?: number;
  /** Characters of keys and values kept at most; default 64 Mi. */
  maxChars?: number;
}

/** The cache of a gateway without REDIS_URL: the same interface, one process only. */
export class MemoryCache implements SharedCache {
  readonly stats = newStats();
  private readonly lru: LRUCache<string, string>;

  constructor(options: MemoryCacheOptions = {}) {
    // bounded by size too: values are of any length
    this.lru = new LRUCache<string, string>({
      max: options.maxEntries ?? 50_000,
      maxSize: options.maxChars ?? 64 * 1024 * 1024,
      sizeCalculation: (value, key) => 1 + key.length + value.length,
      ttlAutopurge: false,
    });
  }

  getMany(keys: readonly string[]): Promise<(string | null)[]> {
    return promised(() => keys.map((key) => {
      const value = this.lru.get(key);
      if (value === undefined) {
        this.stats.misses += 1;
        return null;
      }
      this.stats.hits += 1;
      return value;
    }));
  }

  setMany(entries: readonly CacheEntry[]): Promise<void> {
    return promised(() => {
      for (const { key, value, ttlSeconds } of entries) this.lru.set(key, value, { ttl: ttlSeconds * 1000 });
    });
  }

  delete(keys: readonly string[]): Promise<void> {
    return promised(() => {
      for (const key of keys) this.lru.delete(key);
    });
  }

  forget(keys?: readonly string[]): void {
    if (keys === undefined) this.lru.clear();
    else for (const key of keys) this.lru.delete(key);
  }

  check(): Promise<'ok'> {
    return Promise.resolve('ok');
  }

  close(): Promise<void> {
    return promised(() => this.lru.clear());
  }
}
