import { createHmac, randomBytes } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { ClockedLRU } from '../cache/lru.js';
import { connectRedis, REDIS_UNREACHABLE, redisReachable, type RedisClient, type RedisTarget } from '../cache/redis.js';
import type { BucketLimit } from '../config/limits.js';
import { promised } from '../shared/promised.js';

export interface TakeResult {
  allowed: boolean;
  /** When not allowed: ms until enough tokens are back; 0 when allowed. */
  retryAfterMs: number;
}

// Own buckets rather than fixed windows, which let twice the burst through at a window's
// edge and cannot answer without a promise or lease tokens from Redis.

/** Named token buckets. A cost of 0 only looks and stores nothing; a negative cost gives a reservation
 * back. Marks are named flags with a TTL, apart from the buckets. */
export interface TokenBuckets {
  take(bucket: string, limit: BucketLimit, cost?: number): Promise<TakeResult>;
  /** take's answer when it needs no waiting (leased or believed tokens); undefined otherwise. */
  takeNow(bucket: string, limit: BucketLimit, cost?: number): TakeResult | undefined;
  /** Marks `name` for `ttlMs` from now; marking again restarts the time. */
  mark(name: string, ttlMs: number): Promise<void>;
  marked(name: string): Promise<boolean>;
  /** Adds one to the counter `name`, which ends at `endsAt` (epoch ms); resolves with its new value. */
  count(name: string, endsAt: number): Promise<number>;
  /** count's answer when it needs no waiting (in-process counters); undefined otherwise. */
  countNow(name: string, endsAt: number): number | undefined;
  /** Whether countNow answers: false where a count is a round trip (Redis). */
  readonly countsNow: boolean;
  readonly backing: 'redis' | 'memory';
  check(): Promise<string>;
  close(): Promise<void>;
}

interface Bucket {
  tokens: number;
  at: number;
}

/** Shared arithmetic: the Lua script below is the same, line for line. */
function refill(bucket: Bucket, limit: BucketLimit, now: number): void {
  const elapsed = Math.max(0, now - bucket.at);
  bucket.tokens = Math.min(limit.burst, bucket.tokens + (elapsed * limit.ratePerSecond) / 1000);
  bucket.at = now;
}

const ALLOWED: TakeResult = Object.freeze({ allowed: true, retryAfterMs: 0 });

function spend(bucket: Bucket, limit: BucketLimit, cost: number): TakeResult {
  if (cost < 0) {
    bucket.tokens = Math.min(limit.burst, bucket.tokens - cost);
    return ALLOWED;
  }
  const required = Math.max(cost, 1);
  if (bucket.tokens >= required) {
    bucket.tokens -= cost;
    return ALLOWED;
  }
  return { allowed: false, retryAfterMs: Math.ceil(((required - bucket.tokens) * 1000) / limit.ratePerSecond) };
}

/** In-process buckets: the fallback, and all there is without REDIS_URL. */
export class MemoryTokenBuckets implements TokenBuckets {
  readonly backing = 'memory' as const;
  readonly countsNow = true;
  // bounded: an attacker cycling addresses evicts old buckets instead of growing the heap
  private readonly buckets: LRUCache<string, Bucket>;
  /** Failures kept apart, so anonymous requests from many addresses cannot evict them and buy more guesses. */
  private readonly failures: LRUCache<string, Bucket>;
  private readonly marks: ClockedLRU<string, true>;
  private readonly counters: ClockedLRU<string, number>;

  constructor(
    maxBuckets = 100_000,
    private readonly now: () => number = Date.now,
  ) {
    this.buckets = new LRUCache<string, Bucket>({ max: maxBuckets });
    this.failures = new LRUCache<string, Bucket>({ max: maxBuckets });
    this.marks = new ClockedLRU<string, true>({ max: maxBuckets, now });
    this.counters = new ClockedLRU<string, number>({ max: maxBuckets, now });
  }

  count(name: string, endsAt: number): Promise<number> {
    return promised(() => this.countNow(name, endsAt));
  }

  countNow(name: string, endsAt: number): number {
    const value = (this.counters.get(name) ?? 0) + 1;
    this.counters.set(name, value, { ttl: Math.max(1, endsAt - this.now()) });
    return value;
  }

  take(name: string, limit: BucketLimit, cost = 1): Promise<TakeResult> {
    return promised(() => this.takeNow(name, limit, cost));
  }

  takeNow(name: string, limit: BucketLimit, cost = 1): TakeResult {
    const now = this.now();
    const buckets = name.startsWith('authfail') ? this.failures : this.buckets;
    let bucket = buckets.get(name);
    if (bucket === undefined) {
      // a full bucket: keep none for a look, or strangers' looks would push real buckets out
      if (cost === 0) return ALLOWED;
      bucket = { tokens: limit.burst, at: now };
      buckets.set(name, bucket);
    } else {
      refill(bucket, limit, now);
    }
    return spend(bucket, limit, cost);
  }

  mark(name: string, ttlMs: number): Promise<void> {
    return promised(() => {
      this.marks.set(name, true, { ttl: ttlMs });
    });
  }

  marked(name: string): Promise<boolean> {
    return promised(() => this.marks.has(name));
  }

  check(): Promise<'ok'> {
    return Promise.resolve('ok');
  }

  close(): Promise<void> {
    return promised(() => {
      this.buckets.clear();
      this.failures.clear();
      this.marks.clear();
    });
  }
}

/** Refill and spend in one step inside Redis, on Redis's clock, so processes never both spend the last
 * token. Keys expire once full; with ARGV[4] above the cost it leases up to that many tokens. */
const TAKE_SCRIPT = `
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local want = tonumber(ARGV[4]) or cost
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(state[1])
local at = tonumber(state[2])
if tokens == nil or at == nil then
  -- a look at a bucket nobody spent from: full, and nothing kept for it
  if cost == 0 then return {1, 0, 0} end
  tokens = burst
  at = now
end
tokens = math.min(burst, tokens + math.max(0, now - at) * rate / 1000)
if cost < 0 then
  tokens = math.min(burst, tokens - cost)
  redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
  redis.call('PEXPIRE', KEYS[1], math.ceil(burst * 1000 / rate) + 1000)
  return {1, 0, 0}
end
local required = math.max(cost, 1)
local allowed = 0
local retry = 0
local granted = 0
if tokens >= required then
  granted = cost
  if want > cost then granted = math.max(cost, math.min(want, math.floor(tokens))) end
  tokens = tokens - granted
  allowed = 1
else
  retry = math.ceil((required - tokens) * 1000 / rate)
end
-- a look spends nothing, and so writes nothing
if cost == 0 then return {allowed, retry, 0} end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil(burst * 1000 / rate) + 1000)
return {allowed, retry, granted}
`;

type TakeCommand = (key: string, rate: number, burst: number, cost: number, want: number) => Promise<[number, number, number]>;

interface Lease {
  tokens: number;
  expiresAt: number;
}

export type RedisTokenBucketsOptions = RedisTarget & {
  /** Default `recs-gateway:`; buckets live under `<prefix>ratelimit:`. */
  keyPrefix?: string;
  /** Most wait on Redis before the in-memory buckets answer, ms; default 100. */
  commandTimeoutMs?: number;
  /** After a Redis failure, ms the in-memory buckets answer alone; default 1000. */
  backoffMs?: number;
  /** How long leased tokens and a look's "open" answer hold here, ms; default 1000; 0 asks Redis every take. */
  leaseMs?: number;
  /** RATE_LIMIT_KEY_SECRET: HMAC key so no address or id is written to Redis plain; default a salt kept in Redis. */
  secret?: string | null;
};

export const nameInRedis = (key: Buffer | string, name: string): string =>
  `${name.slice(0, name.indexOf(':') + 1)}${createHmac('sha256', key).update(name).digest('base64url').slice(0, 22)}`;

/** Buckets shared through Redis; while Redis fails, the in-process buckets answer. Tokens are leased a
 * tenth of the burst at a time to save round trips: the shared limit is never exceeded, though a
 * process may be refused slightly early while another holds a lease. */
export class RedisTokenBuckets implements TokenBuckets {
  private readonly redis: RedisClient;
  private readonly take_: TakeCommand;
  private readonly fallback = new MemoryTokenBuckets();
  private readonly backoffMs: number;
  private readonly leaseMs: number;
  private readonly leases: LRUCache<string, Lease>;
  private readonly looks: LRUCache<string, number>;
  /** Lease requests in flight by bucket: concurrent takers wait for one instead of each leasing. */
  private readonly leasing = new Map<string, Promise<unknown>>();
  private downUntil = 0;
  fallbacks = 0;
  readonly countsNow = false;
  private keyOf: ((name: string) => string) | null = null;
  private salting: Promise<(name: string) => string> | null = null;
  /** The salt this process names by, put back by check() should Redis lose it. */
  private salt: string | null = null;

  constructor(options: RedisTokenBucketsOptions) {
    const { secret } = options;
    if (secret) this.keyOf = (name) => nameInRedis(secret, name);
    this.backoffMs = options.backoffMs ?? 1000;
    this.leaseMs = options.leaseMs ?? 1000;
    this.leases = new LRUCache<string, Lease>({ max: 100_000 });
    this.looks = new LRUCache<string, number>({ max: 100_000 });
    this.redis = connectRedis({
      ...(options.cluster !== undefined ? { cluster: options.cluster } : { url: options.url }),
      keyPrefix: `${options.keyPrefix ?? 'recs-gateway:'}ratelimit:`,
      commandTimeoutMs: options.commandTimeoutMs ?? 100,
    });
    this.redis.defineCommand('takeToken', { numberOfKeys: 1, lua: TAKE_SCRIPT });
    const command = (this.redis as unknown as { takeToken: TakeCommand }).takeToken;
    this.take_ = command.bind(this.redis);
  }

  get backing(): 'redis' | 'memory' {
    return this.usable() ? 'redis' : 'memory';
  }

  private usable(): boolean {
    return Date.now() >= this.downUntil && this.redis.status === 'ready';
  }

  takeNow(name: string, _limit: BucketLimit, cost = 1): TakeResult | undefined {
    const now = Date.now();
    if (cost === 0) return (this.looks.get(name) ?? 0) > now ? ALLOWED : undefined;
    // spending makes the next look ask Redis again
    this.looks.delete(name);
    return this.spendLeased(name, cost, now) ? ALLOWED : undefined;
  }

  async take(name: string, limit: BucketLimit, cost = 1): Promise<TakeResult> {
    const answered = this.takeNow(name, limit, cost);
    if (answered !== undefined) return answered;
    const want = cost > 0 && this.leaseMs > 0 ? Math.max(cost, Math.floor(limit.burst / 10)) : cost;
    if (want > cost) {
      for (let inFlight = this.leasing.get(name); inFlight !== undefined; inFlight = this.leasing.get(name)) {
        await inFlight;
        if (this.spendLeased(name, cost, Date.now())) return ALLOWED;
      }
    }
    if (this.usable()) {
      try {
        const asked = this.take_(await this.inRedis(name), limit.ratePerSecond, limit.burst, cost, want);
        if (want > cost) {
          const settled = asked.then(
            () => undefined,
            () => undefined,
          );
          this.leasing.set(name, settled);
          void settled.then(() => {
            if (this.leasing.get(name) === settled) this.leasing.delete(name);
          });
        }
        const [allowed, retryAfterMs, granted] = await asked;
        if (allowed !== 1) {
          this.looks.delete(name);
          if (cost > 0 && this.spendLeased(name, cost, Date.now())) return ALLOWED;
          return { allowed: false, retryAfterMs: Number(retryAfterMs) };
        }
        if (this.leaseMs > 0) {
          const at = Date.now();
          if (cost === 0) this.looks.set(name, at + this.leaseMs);
          // a give-back is granted no lease, or the returned token would be handed out twice
          else if (cost > 0 && granted > cost) this.addLease(name, granted - cost, at);
        }
        return ALLOWED;
      } catch {
        this.downUntil = Date.now() + this.backoffMs;
      }
    }
    this.fallbacks += 1;
    return this.fallback.take(name, limit, cost);
  }

  private spendLeased(name: string, cost: number, now: number): boolean {
    const lease = this.leases.get(name);
    if (lease === undefined || lease.expiresAt <= now || lease.tokens < cost) return false;
    lease.tokens -= cost;
    return true;
  }

  private addLease(name: string, tokens: number, now: number): void {
    const lease = this.leases.get(name);
    if (lease !== undefined && lease.expiresAt > now) lease.tokens += tokens;
    else this.leases.set(name, { tokens, expiresAt: now + this.leaseMs });
  }

  async mark(name: string, ttlMs: number): Promise<void> {
    await this.inRedisOr(
      async () => void (await this.redis.set(`mark:${await this.inRedis(name)}`, '1', 'PX', Math.max(1, Math.ceil(ttlMs)))),
      () => this.fallback.mark(name, ttlMs),
    );
  }

  marked(name: string): Promise<boolean> {
    return this.inRedisOr(
      async () => (await this.redis.exists(`mark:${await this.inRedis(name)}`)) === 1,
      () => this.fallback.marked(name),
    );
  }

  count(name: string, endsAt: number): Promise<number> {
    return this.inRedisOr(
      async () => {
        const key = `count:${await this.inRedis(name)}`;
        const answers = await this.redis.multi().incr(key).pexpireat(key, endsAt).exec();
        const [error, value] = answers?.[0] ?? [new Error('no answer'), null];
        if (error) throw error;
        return Number(value);
      },
      () => this.fallback.count(name, endsAt),
    );
  }

  countNow(): undefined {
    return undefined;
  }

  private async inRedis(name: string): Promise<string> {
    return (this.keyOf ?? (await this.salted()))(name);
  }

  /** Without a secret: the salt made by the first process (SET NX) and read by the others. */
  private salted(): Promise<(name: string) => string> {
    this.salting ??= (async () => {
      await this.redis.set('salt', randomBytes(32).toString('base64'), 'NX');
      const salt = await this.redis.get('salt');
      if (salt === null) throw new Error('the rate limits\' salt is missing from Redis');
      const key = Buffer.from(salt, 'base64');
      this.salt = salt;
      this.keyOf = (named) => nameInRedis(key, named);
      return this.keyOf;
    })().finally(() => {
      this.salting = null;
    });
    return this.salting;
  }

  private async inRedisOr<T>(ask: () => Promise<T>, fallback: () => Promise<T>): Promise<T> {
    if (this.usable()) {
      try {
        return await ask();
      } catch {
        this.downUntil = Date.now() + this.backoffMs;
      }
    }
    this.fallbacks += 1;
    return fallback();
  }

  async check(): Promise<string> {
    const unreachable = `${REDIS_UNREACHABLE}; limits are kept per process meanwhile`;
    if (!(await redisReachable(this.redis))) return unreachable;
    try {
      // put back a lost salt, so a process starting later names as this one does
      if (this.salt !== null) await this.redis.set('salt', this.salt, 'NX');
      return 'ok';
    } catch {
      return unreachable;
    }
  }

  async close(): Promise<void> {
    this.leases.clear();
    this.looks.clear();
    this.redis.disconnect();
    await this.fallback.close();
  }
}
