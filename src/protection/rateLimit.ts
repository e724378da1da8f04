import type { CallOptions, KeyService, PrincipalModel } from '../backends/types.js';
import { ErrorCode, GatewayError, rateLimited } from '../errors.js';
import { MemoryTokenBuckets, RedisTokenBuckets, type BucketLimit, type TokenBuckets } from './tokenBucket.js';

/**
 * Request rate limits. Every request spends a token of its principal's bucket; a failed
 * authentication also spends one of its client address's failure bucket, and an address whose
 * failure bucket is empty is answered 429 before its credentials are even looked at, so keys and
 * passwords cannot be guessed at speed.
 */
export interface RateLimitSettings {
  /**
   * RATE_LIMIT_RPS / RATE_LIMIT_BURST: requests a second per principal, and the burst allowed
   * above that. A principal is the API key (by id), else the user (password sign-in), else the
   * client address for requests without credentials. Default 50/s, burst 100 (twice the rate
   * when RATE_LIMIT_RPS is set above 50); RATE_LIMIT_RPS=0 (null here) turns it off.
   */
  perPrincipal: BucketLimit | null;
  /**
   * RATE_LIMIT_PER_KEY: requests a second for particular API keys, by key id (`<uuid>=<rps>,…`);
   * each key's burst is twice its rate, and a rate of 0 exempts the key. A key id is no secret:
   * it is what apiKeys lists. Default: none.
   */
  perKey: Readonly<Record<string, number>>;
  /**
   * AUTH_FAILURES_PER_MINUTE: failed authentications allowed per client address a minute (the
   * burst is the same number). Default 10; AUTH_FAILURES_PER_MINUTE=0 (null here) turns it off.
   */
  authFailures: BucketLimit | null;
}

export const DEFAULT_RATE_LIMITS: RateLimitSettings = {
  perPrincipal: { ratePerSecond: 50, burst: 100 },
  perKey: {},
  authFailures: { ratePerSecond: 10 / 60, burst: 10 },
};

/** What a limiter decided, for metrics. */
export type RateLimitOutcome = 'allowed' | 'principal_limited' | 'address_locked';

export class RateLimiter {
  /** Decisions since start, by outcome, for /metrics. */
  readonly counts: Record<RateLimitOutcome, number> = { allowed: 0, principal_limited: 0, address_locked: 0 };

  /** RATE_LIMIT_PER_KEY's limits, made once (null exempts a key): a request spends no allocation on them. */
  private readonly keyLimits: ReadonlyMap<string, BucketLimit | null>;
  /** The default limit per principal; null when it is off. */
  private readonly principalLimit: BucketLimit | null;

  constructor(
    readonly buckets: TokenBuckets,
    private readonly settings: RateLimitSettings = DEFAULT_RATE_LIMITS,
  ) {
    const limit = (ratePerSecond: number): BucketLimit | null =>
      ratePerSecond > 0 ? { ratePerSecond, burst: Math.max(1, ratePerSecond * 2) } : null;
    this.keyLimits = new Map(Object.entries(settings.perKey).map(([id, rps]) => [id.toLowerCase(), limit(rps)]));
    const { perPrincipal } = settings;
    this.principalLimit = perPrincipal === null || perPrincipal.ratePerSecond <= 0 ? null : perPrincipal;
  }

  /** Redis-backed buckets when a URL is given, in-process ones otherwise. */
  static open(settings: RateLimitSettings, redis?: { url: string | null; keyPrefix?: string }): RateLimiter {
    const buckets = redis?.url
      ? new RedisTokenBuckets({ url: redis.url, ...(redis.keyPrefix !== undefined ? { keyPrefix: redis.keyPrefix } : {}) })
      : new MemoryTokenBuckets();
    return new RateLimiter(buckets, settings);
  }

  /**
   * Authenticates `authorization` (when given) under the limits: RATE_LIMITED when the address
   * is locked out or the principal is over its rate; UNAUTHENTICATED as the key service says.
   * Resolves with the principal, or null for a request without credentials.
   */
  async authenticate(
    keys: KeyService,
    authorization: string | undefined,
    address: string,
    options?: CallOptions,
  ): Promise<PrincipalModel | null> {
    if (authorization === undefined) {
      await this.admit(null, address);
      return null;
    }
    return this.authenticateUnder(keys, authorization, address, options);
  }

  /**
   * A KeyService whose authenticate goes through the limits, for the REST handlers (they
   * authenticate inside, and already answer RATE_LIMITED with 429 and Retry-After).
   */
  guard(keys: KeyService, address: string): KeyService {
    return {
      authenticate: (authorization, options) => this.authenticateUnder(keys, authorization, address, options),
      listKeys: (...args) => keys.listKeys(...args),
      createKey: (...args) => keys.createKey(...args),
      deleteKey: (...args) => keys.deleteKey(...args),
    };
  }

  private async authenticateUnder(keys: KeyService, authorization: string, address: string, options?: CallOptions): Promise<PrincipalModel> {
    if (this.settings.authFailures !== null) await this.checkAddress(address, this.settings.authFailures);
    let principal: PrincipalModel;
    try {
      principal = await keys.authenticate(authorization, options);
    } catch (error) {
      if (error instanceof GatewayError && error.code === ErrorCode.UNAUTHENTICATED) await this.recordFailure(address);
      throw error;
    }
    await this.admit(principal, address);
    return principal;
  }

  /**
   * authenticate's answer when it can be given without waiting: a credential the key service
   * vouches for at once (one verified before), under limits that answer at once. Undefined when
   * any step would wait or refuse; then authenticate gives the answer, or the error, and spends
   * nothing this spent (a token is spent here only when the principal is returned). `connection`
   * is the socket the value came on (KeyService.authenticateKnown).
   */
  authenticateNow(keys: KeyService, authorization: string, address: string, connection?: object): PrincipalModel | undefined {
    if (keys.authenticateKnown === undefined) return undefined;
    const failures = this.settings.authFailures;
    if (failures !== null && this.buckets.takeNow(`authfail:${address}`, failures, 0)?.allowed !== true) return undefined;
    const principal = keys.authenticateKnown(authorization, connection);
    if (principal === undefined) return undefined;
    const limit = this.limitOf(principal);
    if (limit !== null) {
      if (this.buckets.takeNow(principalBucket(principal, address), limit)?.allowed !== true) return undefined;
      this.counts.allowed += 1;
    }
    return principal;
  }

  /** The principal's rate (a key's own, else the default); null when it is not limited. */
  private limitOf(principal: PrincipalModel | null): BucketLimit | null {
    if (this.keyLimits.size === 0 || !principal?.keyId) return this.principalLimit;
    const own = this.keyLimits.get(principal.keyId.toLowerCase());
    return own === undefined ? this.principalLimit : own;
  }

  /** Spends one token of the principal's bucket (the address's for no principal); RATE_LIMITED when empty. */
  async admit(principal: PrincipalModel | null, address: string): Promise<void> {
    const limit = this.limitOf(principal);
    if (limit === null) return;
    const result = await this.buckets.take(principalBucket(principal, address), limit);
    if (!result.allowed) {
      this.counts.principal_limited += 1;
      throw rateLimited(Math.max(1, result.retryAfterMs / 1000));
    }
    this.counts.allowed += 1;
  }

  private async checkAddress(address: string, limit: BucketLimit): Promise<void> {
    const result = await this.buckets.take(`authfail:${address}`, limit, 0);
    if (!result.allowed) {
      this.counts.address_locked += 1;
      throw rateLimited(Math.max(1, result.retryAfterMs / 1000));
    }
  }

  private async recordFailure(address: string): Promise<void> {
    if (this.settings.authFailures !== null) await this.buckets.take(`authfail:${address}`, this.settings.authFailures, 1);
  }

  check(): Promise<'ok' | string> {
    return this.buckets.check();
  }

  close(): Promise<void> {
    return this.buckets.close();
  }
}

/**
 * The bucket a principal spends from: never the credential itself. A key by its id, a user by
 * id, a credential the backend could not name by its SHA-256, no credential by the address.
 */
export function principalBucket(principal: PrincipalModel | null, address: string): string {
  if (principal === null) return `addr:${address}`;
  if (principal.keyId) return `key:${principal.keyId}`;
  if (principal.user.id) return `user:${principal.user.id}`;
  return `cred:${principal.credentialId}`;
}
