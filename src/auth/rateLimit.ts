import { hash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { credentialId, parseAuthorization } from './authorization.js';
import { clientNetwork } from './clientAddress.js';
import { KEY_SERVICE, type CallOptions, type KeyService, type PrincipalModel } from '../ports/backend.js';
import { ErrorCode, GatewayError, rateLimited } from '../errors.js';
import { DEFAULT_RATE_LIMITS } from '../config/defaults.js';
import type { BucketLimit, RateLimitSettings } from '../ports/limits.js';
import { CallerGone, callerOf, callerWaits, SharedCall } from '../ports/callSignal.js';
import { MemoryTokenBuckets, RedisTokenBuckets, type TokenBuckets } from './tokenBucket.js';

/**
 * The principal of a credential the key service vouches for as verified before: at once where it
 * can (authenticateKnown), else after its short wait (authenticateVerified); undefined otherwise.
 */
function vouchedFor(keys: KeyService, authorization: string): PrincipalModel | undefined | Promise<PrincipalModel | undefined> {
  return keys.authenticateKnown?.(authorization) ?? keys.authenticateVerified?.(authorization);
}

/** What a limiter decided, for metrics. */
export type RateLimitOutcome = 'allowed' | 'principal_limited' | 'user_limited' | 'address_locked' | 'username_locked' | 'new_documents_limited';

export class RateLimiter {
  /** Decisions since start, by outcome, for /metrics. */
  readonly counts: Record<RateLimitOutcome, number> = {
    allowed: 0,
    principal_limited: 0,
    user_limited: 0,
    address_locked: 0,
    username_locked: 0,
    new_documents_limited: 0,
  };

  /** RATE_LIMIT_PER_KEY's limits, made once (null exempts a key): a request spends no allocation on them. */
  private readonly keyLimits: ReadonlyMap<string, BucketLimit | null>;
  /** The default limit per principal; null when it is off. */
  private readonly principalLimit: BucketLimit | null;
  /** The limit per user; null when it is off. */
  private readonly userLimit: BucketLimit | null;
  /**
   * Password sign-ins being checked, by address and credentialId, with the requests waiting for
   * each: the key service skips a check still queued only when all of them have gone.
   */
  private readonly signingIn = new Map<string, { done: Promise<PrincipalModel>; call: SharedCall }>();
  /**
   * When this process last marked a username as signed in from a network (by the username's
   * bucket and the network): a sign-in on verified credentials renews its mark at most once a
   * MARK_RENEW_MS, where one whose password was checked always does.
   */
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

  /** Redis-backed buckets when a URL is given (named in Redis by an HMAC under `secret`, see RedisTokenBuckets), in-process ones otherwise. */
  static open(settings: RateLimitSettings, redis?: { url: string | null; keyPrefix?: string; secret?: string | null }): RateLimiter {
    const buckets = redis?.url
      ? new RedisTokenBuckets({ url: redis.url, ...(redis.keyPrefix !== undefined ? { keyPrefix: redis.keyPrefix } : {}), secret: redis.secret ?? null })
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

  private async authenticateUnder(keys: KeyService, authorization: string, address: string, given?: CallOptions): Promise<PrincipalModel> {
    const failures = this.settings.authFailures;
    // a remote key service sees who is signing in (X-Forwarded-For), not only this gateway
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
    await this.admit(principal, address);
    return principal;
  }

  /**
   * A key (or a value that is no credential at all), checked even from an address locked out by
   * failures (a 128-bit key is not guessed by trying): only a wrong one gets 429 there. A call to a
   * remote key service costs the address a key-check token (beforeCheck), given back for a valid key.
   */
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
      throw error;
    }
  }

  /**
   * A password sign-in. A credential verified before costs no password work: it is only refused
   * while its address or username is locked out. Otherwise a failure token of the address and of
   * the username is reserved before the password is checked, and given back when it is right (or
   * when the key service could not be asked at all): concurrent guesses are refused at once, not
   * after. A check skipped because every request for it had gone is not given back (signInOnce).
   */
  private signIn(attempt: SignInAttempt, given: CallOptions | undefined, afresh = false): Promise<PrincipalModel> {
    // The same credential from the same address, sent again while it is being checked, waits for
    // that check: it is no new guess, so it reserves nothing and costs no password work. The
    // check is made for every request waiting, not only the first: it is skipped (CallerGone),
    // or its call to a key service over HTTP aborted, only when all of them have gone.
    const flightKey = `${attempt.address}\n${credentialId(attempt.authorization)}`;
    let flight = this.signingIn.get(flightKey);
    // a check started before this request came may have read the user before a change made since
    // (a password changed, the user removed by another replica or an operator): a success only
    // answers for it when the key service still vouches for the credential as the store is now
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
    // one that joined after the call was stopped for those before it, while their tokens were
    // being given back (a Redis round trip), is still here: it signs in afresh (as would one that
    // came after a skip, though no request can: a skip gives nothing back, so nothing waits there)
    return call.join(caller, done).catch((error: unknown) => {
      if (error instanceof CallerGone ? callerWaits(caller) : (stoppedCall(error) && call.stoppedWithout(caller))) return this.signIn(attempt, given);
      throw error;
    });
  }

  /**
   * A sign-in a request joined, once it succeeded: the principal if the key service still vouches
   * for the credential (it kept what the check verified, and nothing changed since), else a
   * sign-in of the request's own. Any check then under way started after the request came (the
   * one it joined has ended), so it answers for it.
   */
  private async stillVouched(attempt: SignInAttempt, given: CallOptions | undefined, principal: PrincipalModel): Promise<PrincipalModel> {
    const { keys, authorization } = attempt;
    const known = (await vouchedFor(keys, authorization));
    if (known !== undefined && known.user.id === principal.user.id) return known;
    return this.signIn(attempt, given, true);
  }

  /**
   * A password sign-in under the limits. A username locked out by failures stays open from the
   * addresses that signed in as it within SIGNED_IN_FROM_DAYS (signedInFrom): only that address's
   * own failures can close it there, so strangers elsewhere cannot lock a user out of the places
   * she signs in from. From any other address the username's bucket is reserved as well.
   */
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
    // a username reserved (a token taken, given back when the password is right), or open here
    const reserved = byUser.allowed;
    if (!reserved && !(await this.signedInFrom(user, address))) {
      await this.buckets.take(addressBucket(address), failures, -1);
      throw this.refused('username_locked', byUser.retryAfterMs);
    }
    let failed = false;
    try {
      const principal = await keys.authenticate(authorization, options);
      // signed in with the password checked: the username stays open from here, for 30 days from now
      await this.markSignedIn(user, address, true);
      return principal;
    } catch (error) {
      // A check skipped because every request waiting for it had gone (CallerGone) keeps its
      // tokens as a wrong password does: the limits count guesses sent, not checks run, and
      // whether a guess was right must not come cheaper by leaving before its turn.
      failed = (error instanceof GatewayError && error.code === ErrorCode.UNAUTHENTICATED) || error instanceof CallerGone;
      throw error;
    } finally {
      if (!failed) await Promise.all([this.buckets.take(addressBucket(address), failures, -1), reserved ? this.buckets.take(user, failures, -1) : undefined]);
    }
  }

  /**
   * Whether the username (its failure bucket's name) signed in from this address, its password
   * checked, within SIGNED_IN_FROM_DAYS of the last time: a mark, which only such a sign-in makes
   * (asking writes nothing, so strangers' refused guesses store nothing).
   */
  private signedInFrom(user: string, address: string): Promise<boolean> {
    return this.buckets.marked(signedInMark(user, address));
  }

  /**
   * Marks the username (its failure bucket's name) as signed in from the address's network, for
   * SIGNED_IN_FROM_DAYS from now: after a sign-in whose password was checked (`checked`), and
   * after one on credentials verified before (as right a password), there at most once a
   * MARK_RENEW_MS a network in this process, so that a request on them costs a map lookup.
   * Undefined when there was nothing to write.
   */
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

  /**
   * authenticate's answer when it can be given without waiting: a credential the key service
   * vouches for at once (one verified before), under limits that answer at once. Undefined when
   * any step would wait or refuse; then authenticate gives the answer, or the error. `connection`
   * is the socket the value came on (KeyService.authenticateKnown).
   */
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
      // the answer does not wait for the mark (in Redis, a SET that falls back to this process's own)
      this.markSignedIn(user, address, false)?.catch(() => undefined);
    }
    const limit = this.limitOf(principal);
    const userLimit = this.userLimitOf(principal);
    if (limit === null && userLimit === null) return principal;
    if (limit !== null && this.buckets.takeNow(principalBucket(principal, address), limit)?.allowed !== true) return undefined;
    if (userLimit !== null && this.buckets.takeNow(userBucket(principal.user.id), userLimit)?.allowed !== true) return undefined;
    this.counts.allowed += 1;
    return principal;
  }

  /** The principal's rate (a key's own, else the default); null when it is not limited. */
  private limitOf(principal: PrincipalModel | null): BucketLimit | null {
    if (this.keyLimits.size === 0 || !principal?.keyId) return this.principalLimit;
    const own = this.keyLimits.get(principal.keyId.toLowerCase());
    return own === undefined ? this.principalLimit : own;
  }

  /** The user's rate over all their keys; null when off, for no user, and for a key with a rate of its own. */
  private userLimitOf(principal: PrincipalModel | null): BucketLimit | null {
    if (this.userLimit === null || !principal?.user.id) return null;
    if (principal.keyId && this.keyLimits.has(principal.keyId.toLowerCase())) return null;
    return this.userLimit;
  }

  /**
   * Spends one token of the principal's bucket (the address's for no principal) and of its
   * user's; RATE_LIMITED when either is empty.
   */
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

  /**
   * Whether the caller (its user, else its address) may send a query text the gateway does not
   * know: RATE_LIMITED when its new-document bucket is empty. A look, spending nothing: the
   * token is spent by `validated`, once the text turned out to need parsing and validating.
   */
  async mayValidate(principal: PrincipalModel | null, address: string): Promise<void> {
    const limit = this.settings.newDocuments;
    if (limit === null || limit === undefined) return;
    const look = await this.buckets.take(newDocumentsBucket(principal, address), limit, 0);
    if (!look.allowed) throw this.refused('new_documents_limited', look.retryAfterMs);
  }

  /** Spends a token of the caller's new-document bucket: its request's text was parsed and validated afresh. */
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

/** A password sign-in as the limiter sees it: `user` is the username's failure bucket. */
interface SignInAttempt {
  keys: KeyService;
  authorization: string;
  user: string;
  address: string;
  failures: BucketLimit;
  options: CallOptions;
}

/** A call's options with the client's address; the signal is still only made when read (RequestDeadline). */
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

/** What a key service answers a call its signal stopped (CallOptions.signal). */
const stoppedCall = (error: unknown): boolean => error instanceof GatewayError && error.code === ErrorCode.UPSTREAM_UNAVAILABLE;

/** New documents' bucket: a user's over all their keys and sign-ins, else the principal's (an address without one). */
const newDocumentsBucket = (principal: PrincipalModel | null, address: string): string =>
  principal?.user.id ? `newdocs:user:${principal.user.id}` : `newdocs:${principalBucket(principal, address)}`;

/** What all of a user's requests spend from, whichever key or password they come with. */
const userBucket = (userId: string | null): string => `alluser:${userId}`;

/** An address's failed sign-ins: its network's, an IPv6 address's /64 (clientNetwork). */
const addressBucket = (address: string): string => `authfail:${clientNetwork(address)}`;

/** An address's calls to a remote key service that found no valid key (RateLimitSettings.keyChecks). */
const keyCheckBucket = (address: string): string => `authfail-check:${clientNetwork(address)}`;

/**
 * A username's failed password sign-ins, by a hash of the name as the key service matches it
 * (case as given): bucket names are kept short and hold no name a reader of Redis could list.
 */
const usernameBucket = (username: string, domain: string | null): string =>
  `authfail-user:${hash('sha256', `${username}@${domain ?? ''}`, 'base64url').slice(0, 22)}`;

/**
 * How long a sign-in, its password checked, keeps the username open from its address while
 * others' failures lock it out elsewhere (RateLimiter.signedInFrom).
 */
export const SIGNED_IN_FROM_DAYS = 30;

const SIGNED_IN_FROM_MS = SIGNED_IN_FROM_DAYS * 86_400_000;
/** How often a sign-in on verified credentials renews its network's mark, at most (a process's). */
const MARK_RENEW_MS = 86_400_000;

/** A username's sign-in from an address, by a hash of both: no name or address a reader of Redis could list. */
const signedInMark = (user: string, address: string): string => `signedin:${hash('sha256', `${user}\n${clientNetwork(address)}`, 'base64url').slice(0, 22)}`;

/**
 * The bucket a principal spends from: never the credential itself. A key by its id, a user by
 * id, a credential the backend could not name by its SHA-256, no credential by the address (its /64 for IPv6).
 */
export function principalBucket(principal: PrincipalModel | null, address: string): string {
  if (principal === null) return `addr:${clientNetwork(address)}`;
  if (principal.keyId) return `key:${principal.keyId}`;
  if (principal.user.id) return `user:${principal.user.id}`;
  return `cred:${principal.credentialId}`;
}
