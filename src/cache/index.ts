import type { Config } from '../config/env.js';
import type { Logger } from '../logger.js';
import { MemoryCache } from './memory.js';
import { RedisCache } from './redis.js';
import { TieredCache } from './tiered.js';
import type { SharedCache } from '../ports/cache.js';

/** Redis, with a short in-process tier in front, when REDIS_URL is set; else the in-process LRU. */
export function openCache(
  config: Pick<Config, 'redisUrl' | 'redisKeyPrefix'>,
  options: { log?: Logger; commandTimeoutMs?: number } = {},
): SharedCache {
  if (!config.redisUrl) return new MemoryCache();
  return new TieredCache(new RedisCache({ url: config.redisUrl, keyPrefix: config.redisKeyPrefix, ...options }));
}
