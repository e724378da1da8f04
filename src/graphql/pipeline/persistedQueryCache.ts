import type { KeyValueCache, KeyValueCacheSetOptions } from '@apollo/utils.keyvaluecache';
import type { SharedCache } from '../../ports/cache.js';

/** Longer persisted queries are not kept, or anyone could fill the cache with comments under distinct hashes. */
export const MAX_PERSISTED_QUERY = 64 * 1024;

/** Seconds a registered query is kept without an Apollo TTL: one unused no longer holds Redis memory for long. */
export const PERSISTED_QUERY_TTL_SECONDS = 300;

/** Automatic persisted queries in the shared cache: a query registered on one process is known to all. */
export class PersistedQueryCache implements KeyValueCache<string> {
  constructor(
    private readonly cache: SharedCache,
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
