import type { KeyValueCache, KeyValueCacheSetOptions } from '@apollo/utils.keyvaluecache';
import type { SharedCache } from '../ports/cache.js';

/**
 * A persisted query longer than this is not kept: its client sends it whole again after a miss
 * (PERSISTED_QUERY_NOT_FOUND), which is what a query that size costs anyway. Without the bound,
 * anyone could fill the cache with megabytes of comment under distinct hashes.
 */
export const MAX_PERSISTED_QUERY = 64 * 1024;

/**
 * Seconds a registered query is kept when Apollo gives no TTL: Apollo's documented default for
 * the distributed stores (the in-memory one keeps them until evicted). A query still in use is
 * registered again after a miss, one round trip; one no longer in use does not hold Redis memory
 * for a day.
 */
export const PERSISTED_QUERY_TTL_SECONDS = 300;

/** Automatic persisted queries in the shared cache: a query registered on one process is known to all. */
export class PersistedQueryCache implements KeyValueCache<string> {
  constructor(
    private readonly cache: SharedCache,
    /** Seconds a registered query is kept when Apollo gives no TTL; default PERSISTED_QUERY_TTL_SECONDS. */
    private readonly defaultTtlSeconds = PERSISTED_QUERY_TTL_SECONDS,
  ) {}

  async get(key: string): Promise<string | undefined> {
    const [value] = await this.cache.getMany([`apq:${key}`]);
    return value ?? undefined;
  }

  async set(key: string, value: string, options?: KeyValueCacheSetOptions): Promise<void> {
    if (value.length > MAX_PERSISTED_QUERY) return;
    await this.cache.setMany([{ key: `apq:${key}`, value, ttlSeconds: options?.ttl ?? this.defaultTtlSeconds }]);
  }

  async delete(key: string): Promise<void> {
    await this.cache.delete([`apq:${key}`]);
  }
}
