import type { Config } from '../config.js';
import { MemoryCache } from './memory.js';
import { RedisCache } from './redis.js';
import type { SharedCache } from './types.js';

/** Redis when REDIS_URL is set, the in-process LRU otherwise; the server starts either way. */
export function openCache(config: Pick<Config, 'redisUrl' | 'redisKeyPrefix'>): SharedCache {
  return config.redisUrl ? new RedisCache({ url: config.redisUrl, keyPrefix: config.redisKeyPrefix }) : new MemoryCache();
}
