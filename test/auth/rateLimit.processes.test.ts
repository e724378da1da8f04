import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuthorization } from '../../src/auth/authorization.js';
import type { KeyService, PrincipalModel } from '../../src/ports/backend.js';
import { unauthenticated } from '../../src/errors.js';
import { loadConfig } from '../../src/config/env.js';
import { principalBucket, RateLimiter, SIGNED_IN_FROM_DAYS } from '../../src/auth/rateLimit.js';
import { MemoryTokenBuckets, nameInRedis, RedisTokenBuckets, type TokenBuckets } from '../../src/auth/tokenBucket.js';
import { codeOf, embeddedWithUsers, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { Redis } from 'ioredis';
import { OwnRedis, REDIS_URL, testPrefix } from '../helpers/redis.js';
import { storeKinds, TEST_COST } from '../helpers/stores.js';
import { EmbeddedKeyService } from '../../src/backends/embedded/keys/keyService.js';
import { addUser } from '../../src/backends/embedded/keys/users.js';
import { ManualClock } from '../helpers/clock.js';

/** Deletes the buckets under a prefix (hashes, which drainPrefix cannot read) and returns their names. */
async function dropBuckets(prefix: string): Promise<string[]> {
  const redis = new Redis(REDIS_URL);
  try {
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
    return keys;
  } finally {
    redis.disconnect();
  }
}

/**
 * Buckets, and how to let `ms` pass for them: in-process buckets run on the test's own clock; Redis
 * buckets on Redis's (TIME), so there time really passes. Redis is given 10 s a command: past the
 * served 100 ms a slow answer on a busy machine falls back to in-process buckets, and the counts
 * below would measure the machine.
 */
const kinds: { name: string; open(): { buckets: TokenBuckets; pass: (ms: number) => Promise<void>; dispose: () => Promise<void> } }[] = [
  {
    name: 'memory',
    open() {
      const clock = new ManualClock();
      return { buckets: new MemoryTokenBuckets(100_000, clock.now), pass: (ms) => Promise.resolve(clock.advance(ms)), dispose: () => Promise.resolve() };
    },
  },
  {
    name: 'redis',
    open() {
      const prefix = testPrefix();
      const buckets = new RedisTokenBuckets({ url: REDIS_URL, keyPrefix: prefix, commandTimeoutMs: 10_000 });
      return {
        buckets,
        pass: (ms) => new Promise((r) => setTimeout(r, ms)),
        async dispose() {
          await buckets.close();
          await dropBuckets(prefix);
        },
      };
    },
  },
];

const waitReady = async (buckets: TokenBuckets): Promise<void> => {
  for (let i = 0; i < 100 && buckets.backing !== 'redis'; i++) await new Promise((r) => setTimeout(r, 20));
};

describe.each(kinds)('token buckets, $name', (kind) => {
  let buckets: TokenBuckets;
  let pass: (ms: number) => Promise<void>;
  let dispose: () => Promise<void>;
  beforeAll(async () => {
    ({ buckets, pass, dispose } = kind.open());
    if (kind.name === 'redis') {
      await waitReady(buckets);
      expect(buckets.backing).toBe('redis');
    }
  });
  afterAll(() => dispose());

  it('allows the burst, then refuses with the time until the next token', async () => {
    const limit = { ratePerSecond: 0.5, burst: 3 };
    const results = [];
    for (let i = 0; i < 4; i++) results.push(await buckets.take('burst', limit));
    expect(results.slice(0, 3).every((r) => r.allowed)).toBe(true);
    expect(results[3]!.allowed).toBe(false);
    // one token at 0.5/s takes up to 2 s; a little has refilled while the test ran
    expect(results[3]!.retryAfterMs).toBeGreaterThan(1000);
    expect(results[3]!.retryAfterMs).toBeLessThanOrEqual(2000);
  });

  it('refills at its rate', async () => {
    // a token every 500 ms: on Redis's clock two takes in a row must come within that
    const limit = { ratePerSecond: 2, burst: 1 };
    expect((await buckets.take('refill', limit)).allowed).toBe(true);
    expect((await buckets.take('refill', limit)).allowed).toBe(false);
    await pass(600);
    expect((await buckets.take('refill', limit)).allowed).toBe(true);
  });

  it('gives exactly the burst to concurrent takers', async () => {
    const limit = { ratePerSecond: 0.01, burst: 10 };
    const results = await Promise.all(Array.from({ length: 30 }, () => buckets.take('concurrent', limit)));
    expect(results.filter((r) => r.allowed)).toHaveLength(10);
  });

  it('answers a take at once where it can, spending exactly what take would', async () => {
    const limit = { ratePerSecond: 0.01, burst: 20 };
    if (kind.name === 'memory') {
      expect(buckets.takeNow('now', { ratePerSecond: 0.01, burst: 2 })?.allowed).toBe(true);
      expect(buckets.takeNow('now', { ratePerSecond: 0.01, burst: 2 })?.allowed).toBe(true);
      expect(buckets.takeNow('now', { ratePerSecond: 0.01, burst: 2 })).toMatchObject({ allowed: false });
      expect((await buckets.take('now', { ratePerSecond: 0.01, burst: 2 })).allowed).toBe(false);
      return;
    }
    // Redis: nothing is known here before a round trip; then the lease (a tenth of the burst) is spent here
    expect(buckets.takeNow('now', limit)).toBeUndefined();
    expect(buckets.takeNow('now', limit, 0)).toBeUndefined();
    expect((await buckets.take('now', limit)).allowed).toBe(true);
    // the lease brought two: one went to that take, one is left here, then Redis must be asked again
    expect(buckets.takeNow('now', limit)?.allowed).toBe(true);
    expect(buckets.takeNow('now', limit)).toBeUndefined();
    expect(buckets.takeNow('now', limit, 0)).toBeUndefined();
    expect((await buckets.take('now', limit, 0)).allowed).toBe(true);
    expect(buckets.takeNow('now', limit, 0)?.allowed).toBe(true);
  });

  it('a cost of 0 looks without spending', async () => {
    const limit = { ratePerSecond: 0.01, burst: 1 };
    expect((await buckets.take('look', limit, 0)).allowed).toBe(true);
    expect((await buckets.take('look', limit, 0)).allowed).toBe(true);
    expect((await buckets.take('look', limit, 1)).allowed).toBe(true);
    expect((await buckets.take('look', limit, 0)).allowed).toBe(false);
  });
});

/** The key of the two processes' names in Redis, and a bucket's or mark's name there under it. */
const SECRET = 'the-test-deployment-secret';
const inRedis = (name: string): string => `ratelimit:${nameInRedis(SECRET, name)}`;

/** Two gateway processes' buckets on one Redis under a prefix of the test's own, ready; closed and dropped after. */
async function withTwoProcesses(run: (a: RedisTokenBuckets, b: RedisTokenBuckets, prefix: string) => Promise<void>): Promise<void> {
  const prefix = testPrefix();
  // 10 s a command, as above: a fallback to in-process buckets would change the counts
  const a = new RedisTokenBuckets({ url: REDIS_URL, keyPrefix: prefix, commandTimeoutMs: 10_000, secret: SECRET });
  const b = new RedisTokenBuckets({ url: REDIS_URL, keyPrefix: prefix, commandTimeoutMs: 10_000, secret: SECRET });
  try {
    await Promise.all([waitReady(a), waitReady(b)]);
    await run(a, b, prefix);
  } finally {
    await a.close();
    await b.close();
    await dropBuckets(prefix);
  }
}

describe('Redis token buckets across processes and failures', () => {
  it('two gateways share one bucket through Redis', () =>
    withTwoProcesses(async (a, b, prefix) => {
      const limit = { ratePerSecond: 0.01, burst: 6 };
      const results = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? a : b).take('shared', limit)));
      expect(results.filter((r) => r.allowed)).toHaveLength(6);
      expect(await dropBuckets(prefix)).toEqual([`${prefix}${inRedis('shared')}`]);
    }));

  it('leases a tenth of a large burst at a time, and two processes together never get more than the burst', () =>
    withTwoProcesses(async (a, b, prefix) => {
      const redis = new Redis(REDIS_URL);
      try {
        const limit = { ratePerSecond: 0.01, burst: 100 };
        const tokensInRedis = async (): Promise<number> => Number(await redis.hget(`${prefix}${inRedis('lease')}`, 'tokens'));
        expect((await a.take('lease', limit)).allowed).toBe(true);
        // one round trip took ten: nine are spent here without asking Redis
        expect(Math.round(await tokensInRedis())).toBe(90);
        for (let i = 0; i < 9; i++) expect((await a.take('lease', limit)).allowed).toBe(true);
        expect(Math.round(await tokensInRedis())).toBe(90);
        const byB = [];
        for (let i = 0; i < 100; i++) byB.push((await b.take('lease', limit)).allowed);
        expect(byB.filter(Boolean)).toHaveLength(90);
        expect((await a.take('lease', limit)).allowed).toBe(false);
        // many takers at once: one lease request in flight at a time, and exactly the burst between them
        const many = await Promise.all(Array.from({ length: 150 }, () => a.take('burst-at-once', limit)));
        expect(many.filter((r) => r.allowed)).toHaveLength(100);
        expect(Math.round(Number(await redis.hget(`${prefix}${inRedis('burst-at-once')}`, 'tokens')))).toBe(0);
      } finally {
        redis.disconnect();
      }
    }));

  it('keeps nothing in Redis for a look at a bucket nobody spent from, nor for asking after a mark', () =>
    withTwoProcesses(async (a, b, prefix) => {
      const failures = { ratePerSecond: 10 / 60, burst: 3 };
      for (let i = 0; i < 50; i++) {
        expect((await a.take(`authfail:stranger-${i}`, failures, 0)).allowed).toBe(true);
        expect(await a.marked(`signedin:stranger-${i}`)).toBe(false);
      }
      const redis = new Redis(REDIS_URL);
      try {
        expect(await redis.keys(`${prefix}*`)).toEqual([]);
        // a mark is kept, and asked after from another process
        await a.mark('signedin:home', 60_000);
        expect(await b.marked('signedin:home')).toBe(true);
        expect(await redis.pttl(`${prefix}ratelimit:mark:${nameInRedis(SECRET, 'signedin:home')}`)).toBeGreaterThan(50_000);
      } finally {
        redis.disconnect();
      }
    }));

  it('takes a token given back (a reservation returned) in Redis only: no lease hands it out again here', () =>
    withTwoProcesses(async (a, b) => {
      const failures = { ratePerSecond: 10 / 60, burst: 3 };
      expect((await a.take('authfail:y', failures, 1)).allowed).toBe(true);
      expect((await a.take('authfail:y', failures, -1)).allowed).toBe(true);
      // three tokens in all, whichever process spends them: the fourth is refused here too
      for (let i = 0; i < 2; i++) expect((await b.take('authfail:y', failures, 1)).allowed).toBe(true);
      expect((await a.take('authfail:y', failures, 1)).allowed).toBe(true);
      expect((await a.take('authfail:y', failures, 1)).allowed).toBe(false);
    }));

  it('believes a look for a second, until it spends: failures another process records buy at most one more try here', () =>
    withTwoProcesses(async (a, b) => {
      const failures = { ratePerSecond: 10 / 60, burst: 3 };
      expect((await a.take('authfail:x', failures, 0)).allowed).toBe(true);
      // another process records the address's failures until it is locked
      for (let i = 0; i < 3; i++) expect((await b.take('authfail:x', failures, 1)).allowed).toBe(true);
      expect((await b.take('authfail:x', failures, 0)).allowed).toBe(false);
      // here the look is still believed: one more try, whose failure is refused and ends the belief
      expect((await a.take('authfail:x', failures, 0)).allowed).toBe(true);
      expect((await a.take('authfail:x', failures, 1)).allowed).toBe(false);
      expect((await a.take('authfail:x', failures, 0)).allowed).toBe(false);
    }));

  it('falls back to in-process buckets while Redis is frozen or gone, without failing or stalling', async () => {
    const own = await OwnRedis.start();
    const buckets = new RedisTokenBuckets({ url: own.url, commandTimeoutMs: 100, backoffMs: 500 });
    try {
      await waitReady(buckets);
      const limit = { ratePerSecond: 0.01, burst: 2 };
      expect((await buckets.take('p', limit)).allowed).toBe(true);
      own.freeze();
      const started = Date.now();
      const during = [];
      for (let i = 0; i < 5; i++) during.push(await buckets.take('p', limit));
      // the first take waits for the command timeout; the rest skip Redis during the back-off
      expect(Date.now() - started).toBeLessThan(2000);
      expect(buckets.fallbacks).toBeGreaterThanOrEqual(5);
      // the fallback still limits: its own fresh bucket of 2
      expect(during.map((r) => r.allowed)).toEqual([true, true, false, false, false]);
      expect(await buckets.check()).toMatch(/unreachable/);
      own.thaw();
      await own.stop();
      expect((await buckets.take('q', limit)).allowed).toBe(true);
    } finally {
      await buckets.close();
      await own.stop();
    }
  });
});

describe('rate limiter settings', () => {
  it('reads the environment, with defaults', () => {
    const defaults = loadConfig({}).rateLimits;
    expect(defaults.perPrincipal).toEqual({ ratePerSecond: 50, burst: 100 });
    expect(defaults.authFailures).toEqual({ ratePerSecond: 10 / 60, burst: 10 });
    const id = '6f0c1d2e-3f40-4a5b-8c6d-7e8f90a1b2c3';
    const set = loadConfig({ RATE_LIMIT_RPS: '200', RATE_LIMIT_PER_KEY: `${id.toUpperCase()}=5, ${id.replace('6f', '7f')}=0`, AUTH_FAILURES_PER_MINUTE: '0' }).rateLimits;
    expect(set.perPrincipal).toEqual({ ratePerSecond: 200, burst: 400 });
    expect(set.perKey).toEqual({ [id]: 5, [id.replace('6f', '7f')]: 0 });
    expect(set.authFailures).toBeNull();
    expect(loadConfig({ RATE_LIMIT_RPS: '0' }).rateLimits.perPrincipal).toBeNull();
    expect(() => loadConfig({ RATE_LIMIT_PER_KEY: 'laptop=5' })).toThrow(/RATE_LIMIT_PER_KEY/);
  });

  it('authenticates at once only what authenticate would allow, and spends a token only then', async () => {
    const known: PrincipalModel = {
      user: { id: 'u1', username: 'alice', domain: null, isAdmin: false },
      authenticatedBy: 'API_KEY',
      keyId: '33333333-3333-4333-8333-333333333333',
      credentialId: 'c'.repeat(64),
      authorization: 'known-key',
    };
    const keys: KeyService = {
      authenticate: async (authorization) => (authorization === 'known-key' ? known : Promise.reject(unauthenticated())),
      authenticateKnown: (authorization) => (authorization === 'known-key' ? known : undefined),
      listKeys: () => Promise.resolve([]),
      createKey: () => Promise.reject(new Error('unused')),
      deleteKey: () => Promise.resolve(),
      rotateKey: () => Promise.reject(new Error('unused')),
      updateKey: () => Promise.reject(new Error('unused')),
      keyUsage: () => Promise.reject(new Error('unused')),
    };
    const buckets = new MemoryTokenBuckets();
    const limiter = new RateLimiter(buckets, {
      perPrincipal: { ratePerSecond: 0.01, burst: 2 },
      perKey: {},
      authFailures: { ratePerSecond: 0.01, burst: 1 },
    });
    expect(limiter.authenticateNow(keys, 'known-key', '10.0.0.1')).toBe(known);
    expect(limiter.authenticateNow(keys, 'unknown-key', '10.0.0.1')).toBeUndefined();
    expect(limiter.authenticateNow({ ...keys, authenticateKnown: undefined }, 'known-key', '10.0.0.1')).toBeUndefined();
    expect(limiter.authenticateNow(keys, 'known-key', '10.0.0.1')).toBe(known);
    expect(limiter.counts.allowed).toBe(2);
    // over the rate: nothing at once, nothing spent, and authenticate gives the 429
    expect(limiter.authenticateNow(keys, 'known-key', '10.0.0.1')).toBeUndefined();
    await expect(limiter.authenticate(keys, 'known-key', '10.0.0.1')).rejects.toMatchObject({ code: 'RATE_LIMITED' });
    expect(limiter.counts).toEqual({ allowed: 2, principal_limited: 1, user_limited: 0, key_limited: 0, quota_exceeded: 0, address_locked: 0, username_locked: 0, new_documents_limited: 0 });
    // an address locked out by failures: a wrong key is refused with 429 without being sent
    // anywhere (this key service checks remotely), a valid key verified before still passes
    await expect(limiter.authenticate(keys, 'wrong-key', '10.0.0.2')).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
    await expect(limiter.authenticate(keys, 'wrong-key', '10.0.0.2')).rejects.toMatchObject({ code: 'RATE_LIMITED' });
    expect(limiter.counts.address_locked).toBe(1);
    const fresh = new RateLimiter(new MemoryTokenBuckets(), { perPrincipal: null, perKey: {}, authFailures: { ratePerSecond: 0.01, burst: 1 } });
    await expect(fresh.authenticate(keys, 'wrong-key', '10.0.0.2')).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
    expect(fresh.authenticateNow(keys, 'known-key', '10.0.0.2')).toBe(known);
    await expect(fresh.authenticate(keys, 'known-key', '10.0.0.2')).resolves.toBe(known);
  });

  it('gives a key its own rate, exempts a key at 0, and keys a bucket by id, never by credential', async () => {
    const keyA = '11111111-1111-4111-8111-111111111111';
    const keyB = '22222222-2222-4222-8222-222222222222';
    const limiter = new RateLimiter(new MemoryTokenBuckets(), {
      perPrincipal: { ratePerSecond: 0.01, burst: 1 },
      perKey: { [keyA]: 2, [keyB]: 0 },
      authFailures: null,
    });
    const principal = (keyId: string | null): PrincipalModel => ({
      user: { id: 'u1', username: 'alice', domain: null, isAdmin: false },
      authenticatedBy: keyId ? 'API_KEY' : 'PASSWORD',
      keyId,
      credentialId: 'c'.repeat(64),
      authorization: 'secret-value',
    });
    const admitted = async (p: PrincipalModel, times: number): Promise<number> => {
      let ok = 0;
      for (let i = 0; i < times; i++) ok += await limiter.admit(p, '127.0.0.1').then(() => 1, () => 0);
      return ok;
    };
    expect(await admitted(principal(keyA), 10)).toBe(4); // burst twice its rate
    expect(await admitted(principal(keyB), 50)).toBe(50);
    expect(await admitted(principal(null), 3)).toBe(1); // the user's bucket, default limit
    expect(limiter.counts.principal_limited).toBe(6 + 2);
    expect([principalBucket(principal(keyA), '::1'), principalBucket(principal(null), '::1'), principalBucket(null, '::1')]).toEqual([
      `key:${keyA}`,
      'user:u1',
      'addr:0:0:0:0::/64',
    ]);
  });
});

describe.each(storeKinds.slice(0, 1))('rate limits over HTTP ($name store)', (kind) => {
  let gw: TestGateway;
  let dispose: () => Promise<void>;
  let key: string;
  beforeAll(async () => {
    const opened = await kind.open();
    dispose = opened.dispose;
    gw = await startTestGateway(await embeddedWithUsers(opened.store), {
      RATE_LIMIT_RPS: '1',
      RATE_LIMIT_BURST: '4',
      AUTH_FAILURES_PER_MINUTE: '3',
    });
    const created = await gw.gql<{ createApiKey: { key: string } }>(
      'mutation { createApiKey(input: { name: "limited" }) { key } }',
      {},
      { authorization: basicAuthorization('bob', 'bob-password', 'corp.example') },
    );
    key = created.body.data!.createApiKey.key;
  });
  afterAll(async () => {
    await gw.stop().catch(() => undefined);
    await dispose();
  });

  it('answers a principal over its rate with 429, Retry-After and RATE_LIMITED, on GraphQL and REST alike', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await gw.gql('{ viewer { username } }', {}, { authorization: key })).status);
    const limited = await gw.gql('{ viewer { username } }', {}, { authorization: key });
    expect(statuses).toEqual([200, 200, 200, 200]);
    expect(limited.status).toBe(429);
    expect(codeOf(limited)).toBe('RATE_LIMITED');
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    // the wait in the body too, as the README's Errors table has it: a GraphQL client reads extensions
    expect(limited.body.errors?.[0]?.extensions?.retryAfter).toBe(Number(limited.headers.get('retry-after')));
    expect(JSON.stringify(limited.body)).not.toContain(key);

    const rest = await fetch(`${gw.url}/api/v1/apikey`, { headers: { authorization: key } });
    expect(rest.status).toBe(429);
    expect(Number(rest.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    const recs = await fetch(`${gw.url}/v1/items?ids=1&apiKey=${encodeURIComponent(key)}`);
    expect(recs.status).toBe(429);
    // another user is not affected
    const alice = await gw.gql('{ viewer { username } }', {}, { authorization: basicAuthorization('alice', 'alice-password') });
    expect(alice.status).toBe(200);
  });

  it('locks out an address after failed authentications, before looking at the next credential', async () => {
    const wrong = basicAuthorization('alice', 'wrong-password');
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) statuses.push((await gw.gql('{ viewer { username } }', {}, { authorization: wrong })).status);
    expect(statuses).toEqual([401, 401, 401]);
    // even the right password is now refused from this address, and so is a REST call
    const right = await gw.gql('{ viewer { username } }', {}, { authorization: basicAuthorization('alice', 'alice-password') });
    expect(right.status).toBe(429);
    expect(codeOf(right)).toBe('RATE_LIMITED');
    // 3 a minute: the next attempt is some 20 s away
    expect(Number(right.headers.get('retry-after'))).toBeGreaterThan(10);
    expect(right.body.errors?.[0]?.extensions?.retryAfter).toBe(Number(right.headers.get('retry-after')));
    const rest = await fetch(`${gw.url}/api/v1/apikey`, { headers: { authorization: 'AAECAwQFBgcICQoLDA0ODw' } });
    expect(rest.status).toBe(429);
  });
});

describe.each(kinds)('a username locked out by strangers, on $name buckets', (kind) => {
  // the probe: 12 wrong passwords from one address, or one every 4 s from five, kept alice out of
  // her password sign-in from the address she had just signed in from
  const FAILURES = { ratePerSecond: 1 / 60, burst: 3 };
  const [home, attacker, elsewhere, newLaptop] = ['10.0.0.1', '10.0.0.2', '10.0.0.3', '10.0.0.4'];
  const right = basicAuthorization('alice', 'alice-password');
  const wrong = (n: number): string => basicAuthorization('alice', `wrong-${n}`);

  interface Alice {
    limiter: RateLimiter;
    /** A key service of a gateway that has verified nothing yet. */
    fresh: () => KeyService;
    /** Alice's name where a sign-in is taken, else the error's code. */
    signIn: (keys: KeyService, authorization: string, address: string) => Promise<string>;
  }

  /** Runs `body` with alice in a key store and a limiter on this kind's buckets; disposes of both. */
  async function withAlice(body: (alice: Alice) => Promise<void>): Promise<void> {
    const { buckets, dispose } = kind.open();
    const opened = await storeKinds[0]!.open();
    try {
      if (kind.name === 'redis') await waitReady(buckets);
      await addUser(opened.store, { username: 'alice', password: 'alice-password' }, TEST_COST);
      const limiter = new RateLimiter(buckets, { perPrincipal: null, perKey: {}, authFailures: FAILURES });
      const signIn = (keys: KeyService, authorization: string, address: string): Promise<string> =>
        limiter.authenticate(keys, authorization, address).then(
          (principal) => principal?.user.username ?? 'anonymous',
          (error: { code?: string }) => error.code ?? 'error',
        );
      await body({ limiter, fresh: () => new EmbeddedKeyService(opened.store), signIn });
    } finally {
      await opened.dispose();
      await dispose();
    }
  }

  it('stays open from the addresses its user signed in from, and only there', () =>
    withAlice(async ({ limiter, fresh, signIn }) => {
      expect(await signIn(fresh(), right, home)).toBe('alice');
      // strangers spend the username's failures from two addresses
      const guesses: string[] = [];
      for (let n = 0; n < 4; n++) guesses.push(await signIn(fresh(), wrong(n), n < 2 ? attacker : elsewhere));
      expect(guesses).toEqual(['UNAUTHENTICATED', 'UNAUTHENTICATED', 'UNAUTHENTICATED', 'RATE_LIMITED']);
      expect(limiter.counts.username_locked).toBe(1);
      // from home, the password is still taken: checked afresh (a gateway that has not verified
      // it) and verified before (one that has)
      const service = fresh();
      expect(await signIn(service, right, home)).toBe('alice');
      expect(await signIn(service, right, home)).toBe('alice');
      // from an address she never signed in from, it is locked like any other
      expect(await signIn(fresh(), right, newLaptop)).toBe('RATE_LIMITED');
      expect(await signIn(service, right, newLaptop)).toBe('RATE_LIMITED');
      // and a guesser at her address is held by that address's own failures
      const atHome: string[] = [];
      for (let n = 10; n < 14; n++) atHome.push(await signIn(service, wrong(n), home));
      expect(atHome).toEqual(['UNAUTHENTICATED', 'UNAUTHENTICATED', 'UNAUTHENTICATED', 'RATE_LIMITED']);
      expect(await signIn(service, right, home)).toBe('RATE_LIMITED');
    }));

  it('stays open from a network a sign-in on verified credentials came from, as from a checked one', () =>
    // the twentieth pass's probe: a sign-in answered from the verified-password cache (60 s) marked
    // no network, so a second network used only within that minute was locked out with strangers
    withAlice(async ({ limiter, fresh, signIn }) => {
      const [phone, laptop] = ['10.0.1.1', '10.0.2.1'];
      // checked at home; then the same gateway, which has verified it, takes it from her phone
      // (a request that waits) and her laptop (one answered at once)
      const service = fresh();
      expect(await signIn(service, right, home)).toBe('alice');
      expect(await signIn(service, right, phone)).toBe('alice');
      // (on Redis buckets a take may have to wait: then authenticate answers)
      expect(limiter.authenticateNow(service, right, laptop)?.user.username ?? (await signIn(service, right, laptop))).toBe('alice');
      const guesses: string[] = [];
      for (let n = 0; n < 4; n++) guesses.push(await signIn(fresh(), wrong(n), attacker));
      expect(guesses.at(-1)).toBe('RATE_LIMITED');
      for (const address of [phone, laptop]) {
        expect(await signIn(service, right, address), address).toBe('alice');
        expect(await signIn(fresh(), right, address), address).toBe('alice');
      }
      // and an address that never signed in stays locked
      expect(await signIn(service, right, newLaptop)).toBe('RATE_LIMITED');
    }));
});

describe('what strangers can make the in-process buckets keep', () => {
  it("a look at a bucket nobody spent from keeps nothing: strangers' looks push no username's failures out", () => {
    const buckets = new MemoryTokenBuckets(10);
    const failures = { ratePerSecond: 1 / 60, burst: 3 };
    for (let i = 0; i < 3; i++) expect(buckets.takeNow('authfail-user:alice', failures, 1).allowed).toBe(true);
    for (let i = 0; i < 50; i++) expect(buckets.takeNow(`authfail:10.0.${i}.1`, failures, 0).allowed).toBe(true);
    expect(buckets.takeNow('authfail-user:alice', failures, 1).allowed).toBe(false);
  });
});

describe("a sign-in's mark", () => {
  it('runs SIGNED_IN_FROM_DAYS from the last sign-in whose password was checked, not the first', async () => {
    const clock = new ManualClock();
    const buckets = new MemoryTokenBuckets(100_000, clock.now);
    const opened = await storeKinds[0]!.open();
    try {
      await addUser(opened.store, { username: 'alice', password: 'alice-password' }, TEST_COST);
      const limiter = new RateLimiter(buckets, { perPrincipal: null, perKey: {}, authFailures: { ratePerSecond: 1 / 60, burst: 3 } });
      const signIn = (password: string, address: string): Promise<string> =>
        limiter.authenticate(new EmbeddedKeyService(opened.store), basicAuthorization('alice', password), address).then(
          (principal) => principal?.user.username ?? 'anonymous',
          (error: { code?: string }) => error.code ?? 'error',
        );
      const lockOut = async (): Promise<void> => {
        const guesses: string[] = [];
        for (let n = 0; n < 4; n++) guesses.push(await signIn(`wrong-${n}`, `10.0.0.${10 + n}`));
        expect(guesses.at(-1)).toBe('RATE_LIMITED');
      };
      const DAY = 86_400_000;
      expect(await signIn('alice-password', '10.0.0.1')).toBe('alice');
      clock.advance((SIGNED_IN_FROM_DAYS - 1) * DAY);
      expect(await signIn('alice-password', '10.0.0.1')).toBe('alice');
      clock.advance(2 * DAY);
      await lockOut();
      expect(await signIn('alice-password', '10.0.0.1')).toBe('alice');
      // and no longer once that many days have passed without one
      clock.advance(SIGNED_IN_FROM_DAYS * DAY);
      await lockOut();
      expect(await signIn('alice-password', '10.0.0.1')).toBe('RATE_LIMITED');
    } finally {
      await opened.dispose();
    }
  });
});
