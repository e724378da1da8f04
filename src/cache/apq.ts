import type { KeyValueCache, KeyValueCacheSetOptions } from '@apollo/utils.keyvaluecache';
import type { SharedCache } from './types.js';

/** Automatic persisted queries in the shared cache: a query registered on one process is known to all. */
export class PersistedQueryCache implements KeyValueCache<string> {
  constructor(
    private readonly cache: SharedCache,
    /** Seconds a registered query is kept when Apollo gives no TTL; default one day. */
    private readonly defaultTtlSeconds = 86_400,
  ) {}

  async get(key: string): Promise<string | undefined> {
    const [value] = await this.cache.getMany([`apq:${key}`]);
    return value ?? undefined;
  }

  async set(key: string, value: string, options?: KeyValueCacheSetOptions): Promise<void> {
    await this.cache.setMany([{ key: `apq:${key}`, value, ttlSeconds: options?.ttl ?? this.defaultTtlSeconds }]);
  }

  async delete(key: string): Promise<void> {
    await this.cache.delete([`apq:${key}`]);
  }
}
