import { Cluster, Redis, type RedisOptions } from 'ioredis';
import type { Config } from '../config/env.js';
import type { Logger } from '../logger.js';
import { newStats, type CacheEntry, type SharedCache } from '../ports/cache.js';
import { promised } from '../shared/promised.js';
import { clusterLocation, clusterReachable, connectCluster, watchNodes } from './redisCluster.js';

/** Where Redis is: one server's URL (REDIS_URL) or a Redis Cluster's seed nodes (REDIS_CLUSTER_NODES). */
export type RedisTarget = { url: string; cluster?: undefined } | { cluster: readonly string[]; url?: undefined };

export type RedisConnectOptions = RedisTarget & {
  /** Default `recs-gateway:`. */
  keyPrefix?: string;
  /** ms a command may take before it counts as a miss; default 100. */
  commandTimeoutMs?: number;
  /** Told once when Redis becomes unreachable and once when back, never per command; default none. */
  log?: Logger;
};

export type RedisCacheOptions = RedisConnectOptions & {
  /** ms Redis is treated as down after a failure; default 1000. */
  backoffMs?: number;
  now?: () => number;
};

/** One Redis or a cluster: both take the same single-key commands and scripts. */
export type RedisClient = Redis | Cluster;

/** The configured Redis, or null when the gateway keeps everything in process. */
export function redisTarget(config: { redisUrl: Config['redisUrl']; redisClusterNodes: readonly string[] | null }): RedisTarget | null {
  if (config.redisClusterNodes !== null) return { cluster: config.redisClusterNodes };
  return config.redisUrl ? { url: config.redisUrl } : null;
}

/** An ioredis client for which Redis trouble is never a request's: no offline queue, no retries, a timeout. */
export function connectRedis(options: RedisConnectOptions, overrides: RedisOptions = {}): RedisClient {
  const keyPrefix = options.keyPrefix ?? 'recs-gateway:';
  const settings: RedisOptions = {
    commandTimeout: options.commandTimeoutMs ?? 100,
    connectTimeout: 1000,
    // ioredis waits the whole timeout for a socket already closed, holding the process on shutdown
    disconnectTimeout: 100,
    maxRetriesPerRequest: 0,
    reconnectOnError: () => true,
    ...overrides,
  };
  const redis: RedisClient =
    options.cluster !== undefined
      ? connectCluster(options.cluster, { keyPrefix, redisOptions: settings })
      : new Redis(options.url, { keyPrefix, enableOfflineQueue: false, retryStrategy: (attempt) => Math.min(100 * attempt, 1000), ...settings });
  // failures are counted where commands fail; the 'error' event would only be noise
  redis.on('error', () => undefined);
  if (options.log) logAvailability(redis, options.cluster !== undefined ? clusterLocation(options.cluster) : redisLocation(options.url), options.log);
  return redis;
}

/** Whether Redis answers: for a cluster, every slot's master. */
export async function redisReachable(redis: RedisClient): Promise<boolean> {
  if (redis instanceof Cluster) return clusterReachable(redis);
  try {
    await redis.ping();
    return true;
  } catch {
    return false;
  }
}

/** What the public /readyz says of an unreachable Redis: never ioredis's error text, which holds addresses. */
export const REDIS_UNREACHABLE = 'unreachable (the log says why)';

/** Where Redis is, without the user and password a URL may carry. */
export function redisLocation(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.hostname}:${parsed.port || '6379'}${parsed.pathname.length > 1 ? parsed.pathname : ''}`;
  } catch {
    return 'REDIS_URL';
  }
}

/** One warning when Redis goes and one line when back, since ioredis reports every failed retry. */
function logAvailability(redis: RedisClient, redisUrl: string, log: Logger): void {
  let state: 'connecting' | 'up' | 'down' = 'connecting';
  const up = (): void => {
    if (state === 'down') log.info({ redis: redisUrl }, 'Redis is reachable again: the shared cache and shared rate limits are back');
    state = 'up';
  };
  const down = (error: Error): void => {
    if (state === 'down') return;
    const what = state === 'connecting' ? 'Redis cannot be reached' : 'Redis is no longer reachable';
    log.warn({ redis: redisUrl, reason: error.message }, `${what}: serving with the in-process cache and rate limits until it is back`);
    state = 'down';
  };
  redis.on('ready', up);
  redis.on('error', down);
  if (redis instanceof Cluster) watchNodes(redis, (error) => state === 'up' && down(error), up);
}

/** Redis trouble costs a request at most one command timeout: after a failure a short back-off answers
 * misses without asking, so a frozen Redis delays only the probe. */
export class RedisCache implements SharedCache {
  readonly stats = newStats();
  private readonly redis: RedisClient;
  /** A cluster takes no MGET or pipeline across slots: one command a key, batched per node by ioredis. */
  private readonly cluster: boolean;
  private readonly backoffMs: number;
  private downUntil = 0;
  private readonly now: () => number;

  constructor(options: RedisCacheOptions) {
    this.backoffMs = options.backoffMs ?? 1000;
    this.now = options.now ?? Date.now;
    this.redis = connectRedis(options);
    this.cluster = this.redis instanceof Cluster;
  }

  private available(): boolean {
    return this.now() >= this.downUntil && this.redis.status === 'ready';
  }

  private failed(count: number): void {
    this.stats.errors += count;
    this.downUntil = this.now() + this.backoffMs;
  }

  async getMany(keys: readonly string[]): Promise<(string | null)[]> {
    if (keys.length === 0) return [];
    if (!this.available()) {
      this.stats.errors += 1;
      this.stats.misses += keys.length;
      return keys.map(() => null);
    }
    try {
      const values = this.cluster ? await this.getEach(keys) : await this.redis.mget(...keys);
      for (const value of values) {
        if (value === null) this.stats.misses += 1;
        else this.stats.hits += 1;
      }
      return values;
    } catch {
      this.failed(1);
      this.stats.misses += keys.length;
      return keys.map(() => null);
    }
  }

  /** A node gone costs only its keys: the others' answers are kept, the gone ones' are misses. */
  private async getEach(keys: readonly string[]): Promise<(string | null)[]> {
    const settled = await Promise.allSettled(keys.map((key) => this.redis.get(key)));
    if (settled.some((result) => result.status === 'rejected')) this.failed(1);
    return settled.map((result) => (result.status === 'fulfilled' ? result.value : null));
  }

  async setMany(entries: readonly CacheEntry[]): Promise<void> {
    if (entries.length === 0) return;
    if (!this.available()) {
      this.stats.errors += 1;
      return;
    }
    const px = (ttlSeconds: number): number => Math.max(1, Math.round(ttlSeconds * 1000));
    if (this.cluster) {
      const results = await Promise.allSettled(entries.map(({ key, value, ttlSeconds }) => this.redis.set(key, value, 'PX', px(ttlSeconds))));
      const errors = results.filter((result) => result.status === 'rejected').length;
      if (errors > 0) this.failed(errors);
      return;
    }
    const pipeline = this.redis.pipeline();
    for (const { key, value, ttlSeconds } of entries) pipeline.set(key, value, 'PX', px(ttlSeconds));
    try {
      const results = (await pipeline.exec()) ?? [];
      const errors = results.filter(([error]) => error !== null).length;
      if (errors > 0) this.failed(errors);
    } catch {
      this.failed(1);
    }
  }

  async delete(keys: readonly string[]): Promise<void> {
    if (keys.length === 0 || !this.available()) return;
    const deleted = this.cluster ? Promise.all(keys.map((key) => this.redis.del(key))) : this.redis.del(...keys);
    await deleted.catch(() => this.failed(1));
  }

  async check(): Promise<string> {
    return (await redisReachable(this.redis)) ? 'ok' : REDIS_UNREACHABLE;
  }

  close(): Promise<void> {
    return promised(() => this.redis.disconnect());
  }
}
