import { hash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { credentialId, parseAuthorization } from './authorization.js';
import { clientNetwork } from './clientAddress.js';
import { KEY_SERVICE, type CallOptions, type KeyLimits, type KeyService, type PrincipalModel } from '../ports/backend.js';
import { ErrorCode, GatewayError, isTooMany, quotaExceeded, rateLimited } from '../errors.js';
import { msToUtcMidnight, utcDay } from '../model/keyLimits.js';
import { DEFAULT_RATE_LIMITS } from '../config/defaults.js';
import type { BucketLimit, RateLimitSettings } from '../config/limits.js';
import { CallerGone, callerOf, callerWaits, SharedCall } from '../shared/callSignal.js';
import { MemoryTokenBuckets, RedisTokenBuckets, type TokenBuckets } from './tokenBucket.js';
import { redisTarget } from '../cache/redis.js';

/** The principal of a credential the key service already verified, at once or after a short wait; else undefined. */
function vouchedFor(keys: KeyService, authorization: string): PrincipalModel | undefined | Promise<PrincipalModel | undefined> {
  return keys.authenticateKnown?.(authorization) ?? keys.authenticateVerified?.(authorization);
}

export type RateLimitOutcome =
  'allowed' | 'principal_limited' | 'user_limited' | 'key_limited' | 'quota_exceeded' | 'address_locked' | 'username_locked' | 'new_documents_limited';

export class RateLimiter {
  readonly counts: Record<RateLimitOutcome, number> = {
    allowed: 0,
    principal_limited: 0,
    user_limited: 0,
    key_limited: 0,
    quota_exceeded: 0,
    address_locked: 0,
    username_locked: 0,
    new_documents_limited: 0,
  };

  /** RATE_LIMIT_PER_KEY's limits, made once so a request allocates nothing for them. */
  private readonly keyLimits: ReadonlyMap<string, BucketLimit | null>;
  private readonly principalLimit: BucketLimit | null;
  private readonly userLimit: BucketLimit | null;
  /** Password sign-ins in flight by address and credential: a queued check is skipped only once all waiters left. */
  private readonly signingIn = new Map<string, { done: Promise<PrincipalModel>; call: SharedCall }>();
  /** When this process last marked a username signed in from a network, to renew at most once a MARK_RENEW_MS. */
  private readonly marksWritten = new LRUCache<string, number>({ max: 10_000 });

  constructor(
    readonly buckets: TokenBuckets,
    private readonly settings: RateLimitSettings = DEFAULT_RATE_LIMITS,
  ) {
    const limit = (ratePerSecond: number): BucketLimit | null =>
      ratePerSecond > 0 ? { ratePerSecond, burst: Math.max(1, ratePerSecond * 2) } : null;
    this.keyLimits = new Map(Object.entries(settings.perKey).map(([id, rps]) => [id.toLowerCase(), limit(rps)]));
    const { perPrincipal } = settings;
    this.principalLimit = perPrincipal === null || perPrincipal.ratePerSecond <= 0 ? null : perPrincipal;
    const { perUser } = settings;
    this.userLimit = perUser === undefined || perUser === null || perUser.ratePerSecond <= 0 ? null : perUser;
  }

  /** Redis-backed buckets when a Redis (one or a cluster) is given, in-process ones otherwise. */
  static open(
    settings: RateLimitSettings,
    redis?: { url?: string | null; cluster?: readonly string[] | null; keyPrefix?: string; secret?: string | null; commandTimeoutMs?: number },
  ): RateLimiter {
    const target = redisTarget({ redisUrl: redis?.url ?? null, redisClusterNodes: redis?.cluster ?? null });
    const buckets = target
      ? new RedisTokenBuckets({
        ...target,
        ...(redis?.keyPrefix !== undefined ? { keyPrefix: redis.keyPrefix } : {}),
        ...(redis?.commandTimeoutMs !== undefined ? { commandTimeoutMs: redis.commandTimeoutMs } : {}),
        secret: redis?.secret ?? null,
      })
      : new MemoryTokenBuckets();
    return new RateLimiter(buckets, settings);
  }

  /** Authenticates under the limits; resolves with the principal, or null without credentials. */
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

  /** A KeyService whose authenticate goes through the limits, for the REST handlers. */
  guard(keys: KeyService, address: string): KeyService {
    return {
      authenticate: (authorization, options) => this.authenticateUnder(keys, authorization, address, options),
      listKeys: (...args) => keys.listKeys(...args),
      createKey: (...args) => keys.createKey(...args),
      deleteKey: (...args) => keys.deleteKey(...args),
      rotateKey: (...args) => keys.rotateKey(...args),
      updateKey: (...args) => keys.updateKey(...args),
      keyUsage: (...args) => keys.keyUsage(...args),
    };
  }

  private async authenticateUnder(keys: KeyService, authorization: string, address: string, given?: CallOptions): Promise<PrincipalModel> {
    const failures = this.settings.authFailures;
    // a remote key service then sees who is signing in, not only this gateway
    const options = new AddressedCall(given, address);
    let principal: PrincipalModel;
    if (failures === null) {
      principal = await keys.authenticate(authorization, options);
    } else {
      const credential = parseAuthorization(authorization);
      principal =
        credential?.kind === 'password'
          ? await this.signIn({ keys, authorization, user: usernameBucket(credential.username, credential.domain), address, failures, options }, given)
          : await this.checkKey(keys, authorization, address, failures, options);
    }
    try {
      await this.admit(principal, address);
      await this.admitKey(keys, principal);
    } catch (error) {
      if (principal.keyId && error instanceof GatewayError && isTooMany(error.code)) keys.countUse?.(principal.keyId, true);
      throw error;
    }
    return principal;
  }

  /** Without Redis the key service's store counts the quotas, for every replica that shares it. */
  private quotaInStore(keys: KeyService): boolean {
    return this.buckets.countsNow && keys.quotaLeft !== undefined && keys.settleQuota !== undefined;
  }

  /** The key's own rate (a bucket by key id) and daily quota (a counter by key id and UTC day in Redis,
   * else the key store's): nothing at all for a key without them. Counts the request admitted. */
  private async admitKey(keys: KeyService, principal: PrincipalModel): Promise<void> {
    const { limits, keyId } = principal;
    if (!keyId) return;
    if (limits) {
      const rate = ownLimit(limits);
      if (rate !== null) {
        const result = await this.buckets.take(ownKeyBucket(keyId), rate);
        if (!result.allowed) throw this.refused('key_limited', result.retryAfterMs);
      }
      if (limits.dailyQuota !== null) return this.admitQuota(keys, keyId, limits.dailyQuota);
    }
    keys.countUse?.(keyId, false);
  }

  /** Admits the request under the key's quota and counts it, in the same turn as the quota's last
   * look: requests at once on this process see each other. */
  private async admitQuota(keys: KeyService, keyId: string, dailyQuota: number): Promise<void> {
    const now = Date.now();
    if (this.quotaInStore(keys)) {
      let left = keys.quotaLeft!(keyId, dailyQuota);
      // each settling writes this process's counts and learns the total; bounded, as others may take
      // the room a settling made, and then admitted on what this process knows
      for (let tries = 0; left === undefined && tries < QUOTA_SETTLINGS; tries++) {
        await keys.settleQuota!(keyId);
        left = keys.quotaLeft!(keyId, dailyQuota);
      }
      if (left === false) throw this.quotaRefused(now);
    } else {
      const used = await this.buckets.count(quotaCounter(keyId, now), now + msToUtcMidnight(now));
      if (used > dailyQuota) throw this.quotaRefused(now);
    }
    keys.countUse?.(keyId, false);
  }

  /** admitKey without waiting: true when admitted, undefined when it must wait or refuse (the slow path says which). */
  private admitKeyNow(keys: KeyService, principal: PrincipalModel): true | undefined {
    const { limits, keyId } = principal;
    if (!limits || !keyId) return true;
    const inStore = limits.dailyQuota !== null && this.quotaInStore(keys);
    // a quota counted by a round trip waits: nothing spent here that the slow path would spend again
    if (limits.dailyQuota !== null && (inStore ? keys.quotaLeft!(keyId, limits.dailyQuota) !== true : !this.buckets.countsNow)) return undefined;
    const rate = ownLimit(limits);
    if (rate !== null && this.buckets.takeNow(ownKeyBucket(keyId), rate)?.allowed !== true) return undefined;
    if (limits.dailyQuota !== null && !inStore) {
      const now = Date.now();
      const used = this.buckets.countNow(quotaCounter(keyId, now), now + msToUtcMidnight(now));
      if (used === undefined || used > limits.dailyQuota) return undefined;
    }
    return true;
  }

  private quotaRefused(now: number): GatewayError {
    this.counts.quota_exceeded += 1;
    return quotaExceeded(Math.max(1, Math.ceil(msToUtcMidnight(now) / 1000)));
  }

  /** A key is checked even from an address locked out by failures (a 128-bit key is not guessed):
   * only a wrong one gets 429. A remote check costs a key-check token, given back for a valid key. */
  private async checkKey(keys: KeyService, authorization: string, address: string, failures: BucketLimit, options: AddressedCall): Promise<PrincipalModel> {
    const look = await this.buckets.take(addressBucket(address), failures, 0);
    if (!look.allowed) {
      const known = (await vouchedFor(keys, authorization));
      if (known !== undefined) return known;
    }
    const checks = keys.checksKeysLocally === true ? null : (this.settings.keyChecks ?? null);
    let reserved = false;
    if (checks !== null) {
      options.beforeCheck = async () => {
        const taken = await this.buckets.take(keyCheckBucket(address), checks, 1);
        if (!taken.allowed) throw this.refused('address_locked', taken.retryAfterMs);
        reserved = true;
      };
    }
    try {
      const principal = await keys.authenticate(authorization, options);
      if (reserved) await this.buckets.take(keyCheckBucket(address), checks!, -1);
      return principal;
    } catch (error) {
      if (error instanceof GatewayError && error.code === ErrorCode.UNAUTHENTICATED) {
        if (!look.allowed) throw this.refused('address_locked', look.retryAfterMs);
        await this.buckets.take(addressBucket(address), failures, 1);
      }
      // a key past its quota is a valid key, checked on each request at a front: its check is free
      if (reserved && error instanceof GatewayError && error.code === ErrorCode.QUOTA_EXCEEDED) await this.buckets.take(keyCheckBucket(address), checks!, -1);
      throw error;
    }
  }

  /** A password sign-in. Failure tokens of address and username are reserved before the check and given
   * back when right, so concurrent guesses are refused at once; a previously verified credential costs none. */
  private signIn(attempt: SignInAttempt, given: CallOptions | undefined, afresh = false): Promise<PrincipalModel> {
    // The same credential from the same address while it is checked joins that check: no new
    // guess, so it reserves nothing. The check is skipped only when all its requests have gone.
    const flightKey = `${attempt.address}\n${credentialId(attempt.authorization)}`;
    let flight = this.signingIn.get(flightKey);
    // a check begun before this request may predate a password change: its success counts only
    // if the key service still vouches for the credential now
    const joined = flight !== undefined && !afresh;
    if (flight === undefined) {
      const call = new SharedCall(KEY_SERVICE, attempt.address);
      flight = {
        done: this.signInOnce({ ...attempt, options: call }).finally(() => {
          this.signingIn.delete(flightKey);
          call.settled();
        }),
        call,
      };
      this.signingIn.set(flightKey, flight);
    }
    const { call } = flight;
    const caller = callerOf(given);
    const done = joined && attempt.keys.authenticateVerified !== undefined ? flight.done.then((principal) => this.stillVouched(attempt, given, principal)) : flight.done;
    // one that joined after the call was stopped for those before it signs in afresh
    return call.join(caller, done).catch((error: unknown) => {
      if (error instanceof CallerGone ? callerWaits(caller) : (stoppedCall(error) && call.stoppedWithout(caller))) return this.signIn(attempt, given);
      throw error;
    });
  }

  /** A joined sign-in's success: the principal if still vouched for, else a sign-in of the request's own. */
  private async stillVouched(attempt: SignInAttempt, given: CallOptions | undefined, principal: PrincipalModel): Promise<PrincipalModel> {
    const { keys, authorization } = attempt;
    const known = (await vouchedFor(keys, authorization));
    if (known !== undefined && known.user.id === principal.user.id) return known;
    return this.signIn(attempt, given, true);
  }

  /** A password sign-in under the limits. A locked-out username stays open from addresses it signed in
   * from recently, so strangers elsewhere cannot lock a user out of the places she signs in from. */
  private async signInOnce({ keys, authorization, user, address, failures, options }: SignInAttempt): Promise<PrincipalModel> {
    const known = (await vouchedFor(keys, authorization));
    if (known !== undefined) {
      const byAddress = await this.buckets.take(addressBucket(address), failures, 0);
      if (!byAddress.allowed) throw this.refused('address_locked', byAddress.retryAfterMs);
      const byUser = await this.buckets.take(user, failures, 0);
      if (!byUser.allowed && !(await this.signedInFrom(user, address))) throw this.refused('username_locked', byUser.retryAfterMs);
      await this.markSignedIn(user, address, false);
      return known;
    }
    const byAddress = await this.buckets.take(addressBucket(address), failures, 1);
    if (!byAddress.allowed) throw this.refused('address_locked', byAddress.retryAfterMs);
    const byUser = await this.buckets.take(user, failures, 1);
    const reserved = byUser.allowed;
    if (!reserved && !(await this.signedInFrom(user, address))) {
      await this.buckets.take(addressBucket(address), failures, -1);
      throw this.refused('username_locked', byUser.retryAfterMs);
    }
    let failed = false;
    try {
      const principal = await keys.authenticate(authorization, options);
      await this.markSignedIn(user, address, true);
      return principal;
    } catch (error) {
      // A check skipped because every waiter left keeps its tokens as a wrong password does:
      // leaving before its turn must not make a guess cheaper.
      failed = (error instanceof GatewayError && error.code === ErrorCode.UNAUTHENTICATED) || error instanceof CallerGone;
      throw error;
    } finally {
      if (!failed) await Promise.all([this.buckets.take(addressBucket(address), failures, -1), reserved ? this.buckets.take(user, failures, -1) : undefined]);
    }
  }

  /** Whether the username signed in from this address lately; only a checked password makes a mark, asking writes none. */
  private signedInFrom(user: string, address: string): Promise<boolean> {
    return this.buckets.marked(signedInMark(user, address));
  }

  /** Marks the username signed in from the address's network; on verified credentials at most once a MARK_RENEW_MS. */
  private markSignedIn(user: string, address: string, checked: boolean): Promise<void> | undefined {
    const network = clientNetwork(address);
    const memo = `${user}\n${network}`;
    const now = Date.now();
    if (!checked && now - (this.marksWritten.get(memo) ?? -Infinity) < MARK_RENEW_MS) return undefined;
    this.marksWritten.set(memo, now);
    return this.buckets.mark(signedInMark(user, address), SIGNED_IN_FROM_MS);
  }

  private refused(outcome: RateLimitOutcome, retryAfterMs: number): GatewayError {
    this.counts[outcome] += 1;
    return rateLimited(Math.max(1, retryAfterMs / 1000));
  }

  /** authenticate's answer when it needs no waiting; undefined when any step would wait or refuse. */
  authenticateNow(keys: KeyService, authorization: string, address: string, connection?: object): PrincipalModel | undefined {
    if (keys.authenticateKnown === undefined) return undefined;
    const principal = keys.authenticateKnown(authorization, connection);
    if (principal === undefined) return undefined;
    const failures = this.settings.authFailures;
    if (failures !== null && principal.authenticatedBy === 'PASSWORD') {
      // a password is refused while its address or username is locked out, verified or not
      if (this.buckets.takeNow(addressBucket(address), failures, 0)?.allowed !== true) return undefined;
      const user = usernameBucket(principal.user.username ?? '', principal.user.domain);
      if (this.buckets.takeNow(user, failures, 0)?.allowed !== true) return undefined;
      // the answer does not wait for the mark
      this.markSignedIn(user, address, false)?.catch(() => undefined);
    }
    const limit = this.limitOf(principal);
    const userLimit = this.userLimitOf(principal);
    if (limit !== null && this.buckets.takeNow(principalBucket(principal, address), limit)?.allowed !== true) return undefined;
    if (userLimit !== null && this.buckets.takeNow(userBucket(principal.user.id), userLimit)?.allowed !== true) return undefined;
    if (principal.limits && this.admitKeyNow(keys, principal) === undefined) return undefined;
    if (limit !== null || userLimit !== null) this.counts.allowed += 1;
    if (principal.keyId) keys.countUse?.(principal.keyId, false);
    return principal;
  }

  private limitOf(principal: PrincipalModel | null): BucketLimit | null {
    if (this.keyLimits.size === 0 || !principal?.keyId) return this.principalLimit;
    const own = this.keyLimits.get(principal.keyId.toLowerCase());
    return own === undefined ? this.principalLimit : own;
  }

  /** The user's rate over all their keys; null when off, without a user, or for a key with its own rate. */
  private userLimitOf(principal: PrincipalModel | null): BucketLimit | null {
    if (this.userLimit === null || !principal?.user.id) return null;
    if (principal.keyId && this.keyLimits.has(principal.keyId.toLowerCase())) return null;
    return this.userLimit;
  }

  /** Spends one token of the principal's bucket (else the address's) and of its user's; RATE_LIMITED when empty. */
  async admit(principal: PrincipalModel | null, address: string): Promise<void> {
    const limit = this.limitOf(principal);
    if (limit !== null) {
      const result = await this.buckets.take(principalBucket(principal, address), limit);
      if (!result.allowed) throw this.refused('principal_limited', result.retryAfterMs);
    }
    const userLimit = this.userLimitOf(principal);
    if (userLimit !== null) {
      const result = await this.buckets.take(userBucket(principal!.user.id), userLimit);
      if (!result.allowed) throw this.refused('user_limited', result.retryAfterMs);
    }
    if (limit !== null || userLimit !== null) this.counts.allowed += 1;
  }

  /** Whether the caller may send an unknown query text; only looks: `validated` spends once parsing was needed. */
  async mayValidate(principal: PrincipalModel | null, address: string): Promise<void> {
    const limit = this.settings.newDocuments;
    if (limit === null || limit === undefined) return;
    const look = await this.buckets.take(newDocumentsBucket(principal, address), limit, 0);
    if (!look.allowed) throw this.refused('new_documents_limited', look.retryAfterMs);
  }

  async validated(principal: PrincipalModel | null, address: string): Promise<void> {
    const limit = this.settings.newDocuments;
    if (limit !== null && limit !== undefined) await this.buckets.take(newDocumentsBucket(principal, address), limit, 1);
  }

  check(): Promise<string> {
    return this.buckets.check();
  }

  close(): Promise<void> {
    return this.buckets.close();
  }
}

interface SignInAttempt {
  keys: KeyService;
  authorization: string;
  user: string;
  address: string;
  failures: BucketLimit;
  options: CallOptions;
}

/** A call's options with the client's address; the signal is still made only when read. */
class AddressedCall implements CallOptions {
  beforeCheck?: () => Promise<void>;

  constructor(
    private readonly given: CallOptions | undefined,
    readonly clientAddress: string,
  ) {}

  get signal(): AbortSignal | undefined {
    return this.given?.signal;
  }
}

/** Round trips a request waits at most for its key's quota to be settled with the store. */
const QUOTA_SETTLINGS = 8;

const stoppedCall = (error: unknown): boolean => error instanceof GatewayError && error.code === ErrorCode.UPSTREAM_UNAVAILABLE;

const newDocumentsBucket = (principal: PrincipalModel | null, address: string): string =>
  principal?.user.id ? `newdocs:user:${principal.user.id}` : `newdocs:${principalBucket(principal, address)}`;

const userBucket = (userId: string | null): string => `alluser:${userId}`;

/** A key's own rate, apart from the gateway's bucket for the key (`key:`), which RATE_LIMIT_RPS sizes. */
const ownKeyBucket = (keyId: string): string => `keyown:${keyId}`;

/** A key's requests on a UTC day: by id, never by the key's value. */
const quotaCounter = (keyId: string, now: number): string => `quota:${keyId}:${utcDay(now)}`;

/** A key's own rate as a bucket: a second's worth of burst, at least one request. */
const ownLimit = (limits: KeyLimits): BucketLimit | null =>
  limits.rateLimitPerSecond === null ? null : { ratePerSecond: limits.rateLimitPerSecond, burst: Math.max(1, limits.rateLimitPerSecond) };

const addressBucket = (address: string): string => `authfail:${clientNetwork(address)}`;

const keyCheckBucket = (address: string): string => `authfail-check:${clientNetwork(address)}`;

/** A username's failures by a hash of the name: no name a reader of Redis could list. */
const usernameBucket = (username: string, domain: string | null): string =>
  `authfail-user:${hash('sha256', `${username}@${domain ?? ''}`, 'base64url').slice(0, 22)}`;

/** How long a checked sign-in keeps the username open from its address while others' failures lock it elsewhere. */
export const SIGNED_IN_FROM_DAYS = 30;

const SIGNED_IN_FROM_MS = SIGNED_IN_FROM_DAYS * 86_400_000;
const MARK_RENEW_MS = 86_400_000;

/** Hashed, so no name or address a reader of Redis could list. */
const signedInMark = (user: string, address: string): string => `signedin:${hash('sha256', `${user}\n${clientNetwork(address)}`, 'base64url').slice(0, 22)}`;

/** The bucket a principal spends from, never named by the credential itself. */
export function principalBucket(principal: PrincipalModel | null, address: string): string {
  if (principal === null) return `addr:${clientNetwork(address)}`;
  if (principal.keyId) return `key:${principal.keyId}`;
  if (principal.user.id) return `user:${principal.user.id}`;
  return `cred:${principal.credentialId}`;
}
