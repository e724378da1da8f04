import { Redis, type RedisOptions } from 'ioredis';
import type { Logger } from '../logger.js';
import { newStats, type CacheEntry, type SharedCache } from '../ports/cache.js';
import { promised } from '../ports/promised.js';

export interface RedisCacheOptions {
  url: string;
  /** Prefix of every key this gateway writes; default `recs-gateway:`. Tests use their own. */
  keyPrefix?: string;
  /** How long a command may take before it counts as a miss, in ms; default 100. */
  commandTimeoutMs?: number;
  /** After a failure, how long to treat Redis as down without asking it, in ms; default 1000. */
  backoffMs?: number;
  /** The back-off's clock, in ms; default Date.now (tests advance their own). */
  now?: () => number;
  /**
   * Told once when Redis cannot be reached (at start or later) and once when it is back; never per
   * command. Default: nothing is logged.
   */
  log?: Logger;
}

/**
 * An ioredis client for which Redis trouble is never a request's trouble: no offline queue (a
 * command while disconnected fails at once), no per-command retries, a command timeout, and
 * reconnection in the background. Shared by the cache and the rate limiter.
 */
export function connectRedis(options: Pick<RedisCacheOptions, 'url' | 'keyPrefix' | 'commandTimeoutMs' | 'log'>, overrides: RedisOptions = {}): Redis {
  const redis = new Redis(options.url, {
    keyPrefix: options.keyPrefix ?? 'recs-gateway:',
    commandTimeout: options.commandTimeoutMs ?? 100,
    connectTimeout: 1000,
    // how long a close waits for the socket's 'close' before destroying it: ioredis waits the whole
    // of it (2 s by default, its timer holding the process) for a socket that closed already, which
    // is every socket of a Redis gone away; a live one closes within a round trip
    disconnectTimeout: 100,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: (attempt) => Math.min(100 * attempt, 1000),
    // a restarted Redis is found again without the caller doing anything
    reconnectOnError: () => true,
    ...overrides,
  });
  // failures are counted where commands fail; an unhandled 'error' event would only be noise
  redis.on('error', () => undefined);
  if (options.log) logAvailability(redis, options.url, options.log);
  return redis;
}

/**
 * What /readyz, which anyone may ask, says of a Redis it cannot reach: not ioredis's state or
 * error text (an address, its options), which the warning logAvailability writes holds.
 */
export const REDIS_UNREACHABLE = 'unreachable (the log says why)';

/** redis://host:port/db: where Redis is, without the user and password a URL may carry. */
export function redisLocation(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.hostname}:${parsed.port || '6379'}${parsed.pathname.length > 1 ? parsed.pathname : ''}`;
  } catch {
    return 'REDIS_URL';
  }
}

/**
 * One warning when Redis cannot be reached (the first failed attempt at start, or the first after
 * it was up), one info line when it is ready again: ioredis retries every second and reports each
 * failed attempt, which would be a line a second for as long as Redis is away.
 */
function logAvailability(redis: Redis, url: string, log: Logger): void {
  const redisUrl = redisLocation(url);
  let state: 'connecting' | 'up' | 'down' = 'connecting';
  redis.on('ready', () => {
    if (state === 'down') log.info({ redis: redisUrl }, 'Redis is reachable again: the shared cache and shared rate limits are back');
    state = 'up';
  });
  redis.on('error', (error: Error) => {
    if (state === 'down') return;
    const what = state === 'connecting' ? 'Redis cannot be reached' : 'Redis is no longer reachable';
    log.warn({ redis: redisUrl, reason: error.message }, `${what}: serving with the in-process cache and rate limits until it is back`);
    state = 'down';
  });
}

/**
 * Redis through ioredis, set up so Redis trouble costs a request at most one command timeout:
 * no offline queue (a command while disconnected fails at once), no per-command retries, a
 * command timeout, reconnection in the background, and a short back-off after a failure during
 * which the cache answers misses without asking (so a frozen Redis does not add 100 ms to every
 * request, only to the one that probes).
 */
export class RedisCache implements SharedCache {
  readonly stats = newStats();
  private readonly redis: Redis;
  private readonly backoffMs: number;
  private downUntil = 0;
  private readonly now: () => number;

  constructor(options: RedisCacheOptions) {
    this.backoffMs = options.backoffMs ?? 1000;
    this.now = options.now ?? Date.now;
    this.redis = connectRedis(options);
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
      const values = await this.redis.mget(...keys);
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

  async setMany(entries: readonly CacheEntry[]): Promise<void> {
    if (entries.length === 0) return;
    if (!this.available()) {
      this.stats.errors += 1;
      return;
    }
    const pipeline = this.redis.pipeline();
    for (const { key, value, ttlSeconds } of entries) pipeline.set(key, value, 'PX', Math.max(1, Math.round(ttlSeconds * 1000)));
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
    await this.redis.del(...keys).catch(() => this.failed(1));
  }

  async check(): Promise<string> {
    try {
      await this.redis.ping();
      return 'ok';
    } catch {
      return REDIS_UNREACHABLE;
    }
  }

  close(): Promise<void> {
    return promised(() => this.redis.disconnect());
  }
}
