import { describe, expect, it } from 'vitest';
import { basicAuthorization } from '../../src/auth/authorization.js';
import { RateLimiter } from '../../src/auth/rateLimit.js';
import { MemoryTokenBuckets, type TakeResult, type TokenBuckets } from '../../src/auth/tokenBucket.js';
import { DEFAULT_RATE_LIMITS } from '../../src/config/defaults.js';
import type { CallOptions, KeyService, PrincipalModel } from '../../src/ports/backend.js';
import { CallerGone, callerOf, callerWaits, CLIENT_GONE } from '../../src/ports/callSignal.js';
import type { BucketLimit } from '../../src/ports/limits.js';

/** A promise and the function that settles it. */
function gate<T = void>(): { promise: Promise<T>; open: (value: T) => void } {
  let open!: (value: T) => void;
  const promise = new Promise<T>((resolve) => (open = resolve));
  return { promise, open };
}

/**
 * A sign-in the limiter makes for several requests (the same credential from one address) is
 * skipped by the key service when every request that joined it has gone. A request joining it
 * after that, while the reserved tokens are still being given back (with Redis, a round trip), is
 * still there: it must get an answer, not the skip.
 */
describe('a request that joins a sign-in skipped for the callers before it', () => {
  it('signs in afresh and gets its principal', async () => {
    const principal = { user: { id: 'u1', username: 'alice', domain: null, isAdmin: false } } as unknown as PrincipalModel;
    const checked = gate();
    const firstCheck = gate();
    let checks = 0;
    const keys = {
      // the key service's rule: a check whose every caller has gone is skipped
      async authenticate(_authorization: string, options?: CallOptions): Promise<PrincipalModel> {
        checks += 1;
        if (checks === 1) await firstCheck.promise;
        if (!callerWaits(callerOf(options))) {
          checked.open();
          throw new CallerGone('a password check');
        }
        return principal;
      },
    } as unknown as KeyService;
    // in-process buckets whose giving back waits until the test lets it go on (a slow Redis)
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
      check: () => memory.check(),
      close: () => memory.close(),
    };
    const limiter = new RateLimiter(buckets, { ...DEFAULT_RATE_LIMITS, perPrincipal: null });
    const authorization = basicAuthorization('alice', 'alice-password');

    const first = new AbortController();
    const gone = limiter.authenticate(keys, authorization, '10.0.0.1', { signal: first.signal }).then(
      () => 'answered',
      (error: unknown) => (error instanceof CallerGone ? 'skipped' : String(error)),
    );
    first.abort(CLIENT_GONE);
    firstCheck.open();
    await checked.promise;
    await refunding.promise;
    // the skipped sign-in is giving its tokens back: this one joins it
    const second = limiter.authenticate(keys, authorization, '10.0.0.1', { signal: new AbortController().signal });
    refund.open();
    expect(await gone).toBe('skipped');
    expect(await second).toBe(principal);
    expect(checks).toBe(2);
  });
});
