import type { Config } from '../config/env.js';
import type { Logger } from '../logger.js';
import { MemoryCache } from './memory.js';
import { RedisCache, redisTarget } from './redis.js';
import { TieredCache } from './tiered.js';
import type { SharedCache } from '../ports/cache.js';

/** Redis, with a short in-process tier in front, when REDIS_URL or REDIS_CLUSTER_NODES is set; else the in-process LRU. */
export function openCache(
  config: Pick<Config, 'redisUrl' | 'redisClusterNodes' | 'redisKeyPrefix'>,
  options: { log?: Logger; commandTimeoutMs?: number } = {},
): SharedCache {
  const target = redisTarget(config);
  if (target === null) return new MemoryCache();
  return new TieredCache(new RedisCache({ ...target, keyPrefix: config.redisKeyPrefix, ...options }));
}
