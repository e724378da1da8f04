import { createHmac, randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { LRUCache } from 'lru-cache';
import { ClockedLRU } from '../cache/lru.js';
import { connectRedis, REDIS_UNREACHABLE } from '../cache/redis.js';
import type { BucketLimit } from '../ports/limits.js';
import { promised } from '../ports/promised.js';

export interface TakeResult {
  allowed: boolean;
  /** When not allowed: how long until enough tokens are back, in ms; 0 when allowed. */
  retryAfterMs: number;
}

// Our own buckets, not rate-limiter-flexible's fixed windows: those let twice the burst through at a
// window's edge, answer no take without a promise and lease nothing from Redis (BENCHMARKS.md,
// "Rate limits on rate-limiter-flexible, weighed").

/**
 * Named token buckets. `take` removes `cost` tokens when at least `max(cost, 1)` are there; a
 * cost of 0 only asks whether one token is left (a look that spends nothing, and stores nothing:
 * a look at a bucket nobody spent from keeps no state for it); a negative cost gives tokens back
 * (up to the burst) and is always allowed: a reservation returned. Marks (mark, marked) are named
 * flags with a time to live, kept apart from the buckets.
 */
export interface TokenBuckets {
  take(bucket: string, limit: BucketLimit, cost?: number): Promise<TakeResult>;
  /**
   * take's answer when it needs no waiting (in-process buckets always; Redis-backed ones from
   * tokens leased here, or a look believed here); undefined when only take can answer. Spends
   * exactly what take would.
   */
  takeNow(bucket: string, limit: BucketLimit, cost?: number): TakeResult | undefined;
  /** Marks `name` for `ttlMs` from now (again: a mark's time starts over). */
  mark(name: string, ttlMs: number): Promise<void>;
  /** Whether `name` is marked; asking writes nothing. */
  marked(name: string): Promise<boolean>;
  /** Where the buckets live now: 'redis', or 'memory' (no Redis, or Redis failing). */
  readonly backing: 'redis' | 'memory';
  /** What /readyz reports: 'ok', or what is wrong and what stands in. */
  check(): Promise<string>;
  close(): Promise<void>;
}

interface Bucket {
  tokens: number;
  at: number;
}

/** The arithmetic both implementations share (the Lua script below is the same, line for line). */
function refill(bucket: Bucket, limit: BucketLimit, now: number): void {
  const elapsed = Math.max(0, now - bucket.at);
  bucket.tokens = Math.min(limit.burst, bucket.tokens + (elapsed * limit.ratePerSecond) / 1000);
  bucket.at = now;
}

/** What every allowed take answers: one object, not one a request. */
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

/** Buckets in this process only: the fallback, and the whole story without REDIS_URL. */
export class MemoryTokenBuckets implements TokenBuckets {
  readonly backing = 'memory' as const;
  // bounded: an attacker cycling addresses evicts old buckets instead of growing the heap
  private readonly buckets: LRUCache<string, Bucket>;
  /**
   * Failed sign-ins' buckets, apart: requests without credentials from many addresses (which make
   * a bucket each) cannot push a username's or an address's failures out and buy more guesses.
   */
  private readonly failures: LRUCache<string, Bucket>;
  /** Marks by name, each for its TTL. Only a caller's own success makes one (RateLimiter's sign-ins). */
  private readonly marks: ClockedLRU<string, true>;

  constructor(
    maxBuckets = 100_000,
    private readonly now: () => number = Date.now,
  ) {
    this.buckets = new LRUCache<string, Bucket>({ max: maxBuckets });
    this.failures = new LRUCache<string, Bucket>({ max: maxBuckets });
    this.marks = new ClockedLRU<string, true>({ max: maxBuckets, now });
  }

  take(name: string, limit: BucketLimit, cost = 1): Promise<TakeResult> {
    return promised(() => this.takeNow(name, limit, cost));
  }

  takeNow(name: string, limit: BucketLimit, cost = 1): TakeResult {
    const now = this.now();
    const buckets = name.startsWith('authfail') ? this.failures : this.buckets;
    let bucket = buckets.get(name);
    if (bucket === undefined) {
      // a full bucket: a look needs none kept (strangers' looks would push real buckets out)
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

/**
 * Refill and spend in one step inside Redis, so concurrent gateway processes never both spend
 * the last token. Time is Redis's own (TIME), so processes with skewed clocks agree. The key
 * expires once a full bucket would have refilled, so idle principals cost no memory. With
 * ARGV[4] (want) above the cost, it hands out up to that many whole tokens at once (never fewer
 * than the cost, never more than there are): a lease the caller spends locally.
 */
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

/** Tokens taken from Redis ahead of need, spent here until expiresAt. */
interface Lease {
  tokens: number;
  expiresAt: number;
}

export interface RedisTokenBucketsOptions {
  url: string;
  /** Prefix of every key; default `recs-gateway:`. Buckets live under `<prefix>ratelimit:`. */
  keyPrefix?: string;
  /** How long a take may wait on Redis before the in-memory buckets answer, in ms; default 100. */
  commandTimeoutMs?: number;
  /** After a Redis failure, how long the in-memory buckets answer without asking Redis, in ms; default 1000. */
  backoffMs?: number;
  /**
   * How long tokens taken ahead (a tenth of the burst at a time) and a look's "open" answer are
   * good for here, in ms; default 1000. 0 asks Redis on every take.
   */
  leaseMs?: number;
  /**
   * RATE_LIMIT_KEY_SECRET: the key of the HMAC that names the buckets and marks in Redis, so that
   * no client address (nor user or key id) is written there as it is; the same on every process
   * sharing the buckets. Default: a random salt kept in Redis (`<prefix>ratelimit:salt`), which
   * whoever holds a copy of Redis holds too.
   */
  secret?: string | null;
}

/** A bucket's or mark's name as written to Redis, keyed by `key`: its kind, then 22 characters of an HMAC of the whole name. */
export const nameInRedis = (key: Buffer | string, name: string): string =>
  `${name.slice(0, name.indexOf(':') + 1)}${createHmac('sha256', key).update(name).digest('base64url').slice(0, 22)}`;

/**
 * Buckets shared by every gateway process through Redis. Redis trouble never fails a request:
 * while Redis is unreachable, slow or erroring, the in-process buckets answer (each process then
 * limits on its own, which is looser by the number of processes but still a limit).
 *
 * A Redis round trip a request was 40 µs of CPU on a cached answer of 50 (BENCHMARKS.md), so
 * tokens are leased: a take that finds none here asks Redis for a tenth of the burst at once and
 * spends the rest locally for up to leaseMs. The shared limit is never exceeded (every token
 * spent was taken from the shared bucket); a process may hold a few tokens it does not use, so
 * another can be refused slightly early, and unused tokens are lost when the lease ends. Bursts
 * under 20 lease one token at a time, exactly as before. A look (cost 0) that Redis answered
 * "open" is believed for leaseMs, until this process spends from the same bucket: an address
 * this process sees failing is looked up again at once, so another process's failures buy an
 * address at most one more try here.
 */
export class RedisTokenBuckets implements TokenBuckets {
  private readonly redis: Redis;
  private readonly take_: TakeCommand;
  private readonly fallback = new MemoryTokenBuckets();
  private readonly backoffMs: number;
  private readonly leaseMs: number;
  private readonly leases: LRUCache<string, Lease>;
  /** When a look Redis answered open stops being believed here, by bucket. */
  private readonly looks: LRUCache<string, number>;
  /** Lease requests to Redis in flight, by bucket: concurrent takers wait for one instead of each leasing. */
  private readonly leasing = new Map<string, Promise<unknown>>();
  private downUntil = 0;
  /** Takes that went to the in-memory buckets because Redis was failing (for tests and metrics). */
  fallbacks = 0;
  /** Names as written to Redis, once the key is known (at once with a secret, else once the salt is read). */
  private keyOf: ((name: string) => string) | null = null;
  /** The salt's read (or its making) under way; null when none is. */
  private salting: Promise<(name: string) => string> | null = null;
  /** The salt this process names by, when it has one: put back by check() should Redis lose it. */
  private salt: string | null = null;

  constructor(options: RedisTokenBucketsOptions) {
    const { secret } = options;
    if (secret) this.keyOf = (name) => nameInRedis(secret, name);
    this.backoffMs = options.backoffMs ?? 1000;
    this.leaseMs = options.leaseMs ?? 1000;
    this.leases = new LRUCache<string, Lease>({ max: 100_000 });
    this.looks = new LRUCache<string, number>({ max: 100_000 });
    this.redis = connectRedis({
      url: options.url,
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
    // spending (a failure recorded, say) makes the next look ask Redis again
    this.looks.delete(name);
    return this.spendLeased(name, cost, now) ? ALLOWED : undefined;
  }

  async take(name: string, limit: BucketLimit, cost = 1): Promise<TakeResult> {
    const answered = this.takeNow(name, limit, cost);
    if (answered !== undefined) return answered;
    const want = cost > 0 && this.leaseMs > 0 ? Math.max(cost, Math.floor(limit.burst / 10)) : cost;
    if (want > cost) {
      // one lease request at a time per bucket: wait for the one in flight, spend from what it brought
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
          // (a give-back, cost < 0, is granted nothing: no lease, or it would hand out the token
          // it returned a second time, here, without Redis)
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

  /** Spends cost tokens leased here, when there are that many and the lease holds. */
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

  /** `name` as written to Redis: its salt read first, the first time, where no secret is set. */
  private async inRedis(name: string): Promise<string> {
    return (this.keyOf ?? (await this.salted()))(name);
  }

  /**
   * Without a secret: the salt the processes sharing Redis name by, made by the first of them
   * (SET NX) and read by the others. A failed read is tried again by the next take.
   */
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

  /** `ask` of Redis while it is usable; on its failure (backing off) or meanwhile, `fallback` of the in-process store. */
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
    try {
      await this.redis.ping();
      // a salt Redis lost (a flush, an eviction) is put back, so that a process starting later names as this one does
      if (this.salt !== null) await this.redis.set('salt', this.salt, 'NX');
      return 'ok';
    } catch {
      return `${REDIS_UNREACHABLE}; limits are kept per process meanwhile`;
    }
  }

  async close(): Promise<void> {
    this.leases.clear();
    this.looks.clear();
    this.redis.disconnect();
    await this.fallback.close();
  }
}
