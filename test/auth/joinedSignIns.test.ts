import { describe, expect, it } from 'vitest';
import { basicAuthorization } from '../../src/auth/authorization.js';
import { RateLimiter } from '../../src/auth/rateLimit.js';
import { MemoryTokenBuckets, type TakeResult, type TokenBuckets } from '../../src/auth/tokenBucket.js';
import { DEFAULT_RATE_LIMITS } from '../../src/config/defaults.js';
import { ErrorCode, GatewayError, upstreamUnavailable } from '../../src/errors.js';
import type { CallOptions, KeyService, PrincipalModel } from '../../src/ports/backend.js';
import { CallerGone, callerOf, callerWaits, CLIENT_GONE } from '../../src/shared/callSignal.js';
import type { BucketLimit } from '../../src/config/limits.js';

/** A promise and the function that settles it. */
function gate<T = void>(): { promise: Promise<T>; open: (value: T) => void } {
  let open!: (value: T) => void;
  const promise = new Promise<T>((resolve) => (open = resolve));
  return { promise, open };
}

/**
 * In-process buckets whose giving back waits until the test lets it go on (a slow Redis):
 * `refunding` opens when a refund starts, `refund` lets it go on.
 */
function slowRefunds(): { buckets: TokenBuckets; refunding: ReturnType<typeof gate<void>>; refund: ReturnType<typeof gate<void>> } {
  const memory = new MemoryTokenBuckets();
  const refunding = gate();
  const refund = gate();
  const buckets: TokenBuckets = {
    backing: 'memory',
    takeNow: (bucket, limit, cost) => memory.takeNow(bucket, limit, cost),
    async take(bucket: string, limit: BucketLimit, cost?: number): Promise<TakeResult> {
      if (cost !== undefined && cost < 0) {
        refunding.open();
        await refund.promise;
      }
      return memory.take(bucket, limit, cost);
    },
    mark: (name, ttlMs) => memory.mark(name, ttlMs),
    count: (name, endsAt) => memory.count(name, endsAt),
    countNow: (name, endsAt) => memory.countNow(name, endsAt),
    countsNow: true,
    marked: (name) => memory.marked(name),
    check: () => memory.check(),
    close: () => memory.close(),
  };
  return { buckets, refunding, refund };
}

/**
 * A sign-in the limiter makes is skipped by the key service when every request that joined it has
 * gone (CallerGone). Its reserved failure tokens are kept, as for a wrong password: leaving before
 * the check's turn must not make a guess free.
 */
describe('a sign-in skipped because every request for it had gone', () => {
  const principal = { user: { id: 'u1', username: 'alice', domain: null, isAdmin: false } } as unknown as PrincipalModel;
  // one failure an address, refilled once a minute: the test is over long before
  const limits = { ...DEFAULT_RATE_LIMITS, perPrincipal: null, authFailures: { ratePerSecond: 1 / 60, burst: 1 } };

  /** A key service with the embedded one's rule: a check whose every caller has gone is skipped. */
  function skippingKeys(): { keys: KeyService; checks: () => number } {
    let checks = 0;
    const keys = {
      authenticate(_authorization: string, options?: CallOptions): Promise<PrincipalModel> {
        checks += 1;
        return callerWaits(callerOf(options)) ? Promise.resolve(principal) : Promise.reject(new CallerGone('a password check'));
      },
    } as unknown as KeyService;
    return { keys, checks: () => checks };
  }

  const outcome = (answer: Promise<unknown>): Promise<string> =>
    answer.then(
      (got) => (got === principal ? 'principal' : 'another'),
      (error: unknown) => (error instanceof CallerGone ? 'skipped' : error instanceof GatewayError ? error.code : String(error)),
    );

  it('keeps its tokens: the next sign-in from that address is refused before any check', async () => {
    const limiter = new RateLimiter(new MemoryTokenBuckets(), limits);
    const { keys, checks } = skippingKeys();
    const gone = new AbortController();
    gone.abort(CLIENT_GONE);
    expect(await outcome(limiter.authenticate(keys, basicAuthorization('alice', 'guess'), '10.0.0.1', { signal: gone.signal }))).toBe('skipped');
    expect(checks()).toBe(1);
    const next = limiter.authenticate(keys, basicAuthorization('alice', 'alice-password'), '10.0.0.1', { signal: new AbortController().signal });
    expect(await outcome(next)).toBe(ErrorCode.RATE_LIMITED);
    expect(checks()).toBe(1);
    expect(limiter.counts.address_locked).toBe(1);
  });

  it('where a caller still waits, is checked, and a right password gives its tokens back', async () => {
    const limiter = new RateLimiter(new MemoryTokenBuckets(), limits);
    const { keys, checks } = skippingKeys();
    const authorization = basicAuthorization('alice', 'alice-password');
    for (let i = 0; i < 2; i++) {
      expect(await outcome(limiter.authenticate(keys, authorization, '10.0.0.1', { signal: new AbortController().signal }))).toBe('principal');
    }
    expect(checks()).toBe(2);
  });
});

/**
 * The signal of a sign-in the limiter makes for several requests, as a key service over HTTP reads
 * it (it aborts its call with it): aborted only when every request has gone or is past its
 * deadline, and then with a reason that tells the two apart.
 */
describe('the signal of a sign-in several requests wait for', () => {
  const principal = { user: { id: 'u1', username: 'alice', domain: null, isAdmin: false } } as unknown as PrincipalModel;
  const authorization = basicAuthorization('alice', 'alice-password');
  const deadlinePassed = (): DOMException => new DOMException('The request deadline passed', 'TimeoutError');

  /** A key service that answers when the test says, or fails as the REST one does when its signal aborts. */
  function heldKeys(): { keys: KeyService; signals: AbortSignal[]; answer: () => void } {
    const signals: AbortSignal[] = [];
    const answered = gate();
    const keys = {
      async authenticate(_authorization: string, options?: CallOptions): Promise<PrincipalModel> {
        const signal = options!.signal!;
        signals.push(signal);
        await new Promise<void>((resolve, reject) => {
          signal.addEventListener('abort', () => reject(upstreamUnavailable('apikeys', 'no answer before the request deadline')), { once: true });
          void answered.promise.then(resolve);
        });
        return principal;
      },
    } as unknown as KeyService;
    return { keys, signals, answer: () => answered.open() };
  }

  const signIn = (limiter: RateLimiter, keys: KeyService, signal: AbortSignal): Promise<string> =>
    limiter.authenticate(keys, authorization, '10.0.0.1', { signal }).then(
      (got) => (got === principal ? 'principal' : 'another'),
      (error: unknown) => String(error),
    );
  const turns = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 0));

  it('is not aborted while one caller still waits; the first leaving, the second gets its principal', async () => {
    for (const reason of [CLIENT_GONE, deadlinePassed()]) {
      const limiter = new RateLimiter(new MemoryTokenBuckets(), { ...DEFAULT_RATE_LIMITS, perPrincipal: null });
      const { keys, signals, answer } = heldKeys();
      const first = new AbortController();
      const second = new AbortController();
      const firstAnswer = signIn(limiter, keys, first.signal);
      const secondAnswer = signIn(limiter, keys, second.signal);
      while (signals.length < 1) await turns();
      first.abort(reason);
      expect(signals[0]!.aborted).toBe(false);
      // the first is answered at its own signal's abort, not when the call the second keeps ends
      expect(await firstAnswer).toMatch(/no answer before the request deadline/);
      answer();
      expect(await secondAnswer).toBe('principal');
      expect(signals).toHaveLength(1);
    }
  });

  it('is aborted as a client gone when every caller has gone, and as a deadline when one still there passed it', async () => {
    for (const [firstReason, reason] of [[CLIENT_GONE, CLIENT_GONE], [deadlinePassed(), 'TimeoutError']] as const) {
      const limiter = new RateLimiter(new MemoryTokenBuckets(), { ...DEFAULT_RATE_LIMITS, perPrincipal: null });
      const { keys, signals } = heldKeys();
      const first = new AbortController();
      const second = new AbortController();
      const answers = [signIn(limiter, keys, first.signal), signIn(limiter, keys, second.signal)];
      while (signals.length < 1) await turns();
      first.abort(firstReason);
      second.abort(CLIENT_GONE);
      expect(signals[0]!.aborted).toBe(true);
      const got: unknown = signals[0]!.reason;
      expect(got === CLIENT_GONE ? CLIENT_GONE : (got as Error).name).toBe(reason);
      for (const answer of await Promise.all(answers)) expect(answer).toMatch(/no answer before the request deadline/);
    }
  });

  it('once aborted for every caller, one that joins before the tokens are given back signs in afresh', async () => {
    const { buckets, refunding, refund } = slowRefunds();
    const limiter = new RateLimiter(buckets, { ...DEFAULT_RATE_LIMITS, perPrincipal: null });
    const { keys, signals, answer } = heldKeys();
    const first = new AbortController();
    const gone = signIn(limiter, keys, first.signal);
    while (signals.length < 1) await turns();
    first.abort(CLIENT_GONE);
    await refunding.promise;
    const late = signIn(limiter, keys, new AbortController().signal);
    answer();
    refund.open();
    expect(await gone).toMatch(/no answer before the request deadline/);
    expect(await late).toBe('principal');
    expect(signals).toHaveLength(2);
  });

  it('is made only when the key service reads it: the callers\' signals are not read otherwise', async () => {
    const limiter = new RateLimiter(new MemoryTokenBuckets(), { ...DEFAULT_RATE_LIMITS, perPrincipal: null });
    let reads = 0;
    class Deadline implements CallOptions {
      get signal(): AbortSignal {
        reads += 1;
        return new AbortController().signal;
      }
    }
    const keys = { authenticate: () => Promise.resolve(principal) } as unknown as KeyService;
    const answers = [new Deadline(), new Deadline()].map((options) => limiter.authenticate(keys, authorization, '10.0.0.1', options));
    expect(await Promise.all(answers)).toEqual([principal, principal]);
    expect(reads).toBe(0);
  });
});
