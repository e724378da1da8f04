import type { Config } from '../config/env.js';
import type { Logger } from '../logger.js';
import { MemoryCache } from './memory.js';
import { RedisCache } from './redis.js';
import { TieredCache } from './tiered.js';
import type { SharedCache } from '../ports/cache.js';

/**
 * Redis (with a few seconds' in-process tier in front) when REDIS_URL is set, the in-process LRU
 * otherwise; the server starts either way.
 */
export function openCache(
  config: Pick<Config, 'redisUrl' | 'redisKeyPrefix'>,
  /** commandTimeoutMs: see RedisCacheOptions (tests on a busy machine give Redis longer). */
  options: { log?: Logger; commandTimeoutMs?: number } = {},
): SharedCache {
  if (!config.redisUrl) return new MemoryCache();
  return new TieredCache(new RedisCache({ url: config.redisUrl, keyPrefix: config.redisKeyPrefix, ...options }));
}
