import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuthorization } from '../../src/auth/authorization.js';
import { RateLimiter } from '../../src/auth/rateLimit.js';
import { RedisCache } from '../../src/cache/redis.js';
import { loadConfig } from '../../src/config/env.js';
import { createGateway, type Gateway } from '../../src/http/server.js';
import { embeddedWithUsers } from '../helpers/gateway.js';
import { gql } from '../helpers/processes.js';
import { drainPrefix, REDIS_URL, testPrefix } from '../helpers/redis.js';
import { storeKinds } from '../helpers/stores.js';

// Issue 41, finding 8: the rate limits' keys in Redis held raw client addresses
// (`ratelimit:authfail:<ip>`), for anyone who can list Redis's keys or holds a copy of it. Two
// gateways (replicas) on one store and one Redis, under a prefix of this test's own.

const wrongKey = 'AAAAAAAAAAAAAAAAAAAAAA';
const alice = basicAuthorization('alice', 'alice-password');
const ADDRESSES = ['10.77.0.5', '10.77.0.6', '10.77.0.7', '10.77.0.8'];

describe.each([
  { name: 'named under a salt kept in Redis (no RATE_LIMIT_KEY_SECRET)', secret: undefined },
  { name: 'named under RATE_LIMIT_KEY_SECRET', secret: 'a-deployment-secret-of-some-length' },
])('rate limits in Redis, $name', ({ secret }) => {
  const prefix = testPrefix();
  const replicas: Gateway[] = [];
  const urls: string[] = [];
  let dispose: () => Promise<void>;

  beforeAll(async () => {
    const opened = await storeKinds[0]!.open();
    dispose = opened.dispose;
    const env = {
      DATA_DIR: '/nonexistent', REDIS_URL, REDIS_KEY_PREFIX: prefix, TRUST_PROXY: '127.0.0.1',
      AUTH_FAILURES_PER_MINUTE: '3', RATE_LIMIT_RPS: '20', ...(secret ? { RATE_LIMIT_KEY_SECRET: secret } : {}),
    };
    const config = loadConfig(env);
    const backend = await embeddedWithUsers(opened.store);
    for (let i = 0; i < 2; i++) {
      const gateway = await createGateway({
        config,
        // one store: the second replica's backend shares the first's (it is closed once, by the first)
        backend: i === 0 ? backend : { ...backend, close: () => Promise.resolve() },
        cache: new RedisCache({ url: REDIS_URL, keyPrefix: prefix }),
        limiter: RateLimiter.open(config.rateLimits, { url: REDIS_URL, keyPrefix: prefix, secret: config.rateLimitKeySecret }),
      });
      replicas.push(gateway);
      urls.push(await gateway.listen(0, '127.0.0.1'));
    }
  }, 60_000);
  afterAll(async () => {
    for (const gateway of replicas.reverse()) await gateway.stop().catch(() => undefined);
    await dispose?.();
    await drainPrefix(prefix);
  });

  const ask = (replica: number, authorization: string | undefined, from: string) =>
    gql(urls[replica]!, '{ viewer { username } }', {}, { ...(authorization ? { authorization } : {}), 'x-forwarded-for': from });

  it('hold no client address, and still lock an address out on every replica', async () => {
    // both replicas on Redis first (a take before its connection is up goes to the process's own buckets)
    for (const url of urls) {
      await expect.poll(async () => ((await (await fetch(`${url}/readyz`)).json()) as { status: string }).status, { timeout: 10_000 }).toBe('ready');
    }
    // anonymous requests (the address's bucket), wrong keys until locked out, sign-ins (a mark)
    expect((await ask(0, undefined, ADDRESSES[0]!)).status).toBe(200);
    for (let i = 0; i < 3; i++) expect((await ask(0, wrongKey, ADDRESSES[1]!)).status).toBe(401);
    expect((await ask(0, alice, ADDRESSES[2]!)).status).toBe(200);
    expect((await ask(1, basicAuthorization('alice', 'wrong'), ADDRESSES[3]!)).status).toBe(401);
    // the other replica finds the address locked out (through Redis), and lets alice in elsewhere
    expect((await ask(1, wrongKey, ADDRESSES[1]!)).status).toBe(429);
    const signedIn = await ask(1, alice, ADDRESSES[2]!);
    expect([signedIn.status, signedIn.body.data?.viewer?.username]).toEqual([200, 'alice']);

    const written = new Map(Object.entries(await drainPrefix(prefix)));
    const limits = [...written.keys()].filter((key) => key.startsWith(`${prefix}ratelimit:`));
    // an address's failures, a username's, an anonymous address's bucket, a sign-in's mark
    for (const kind of ['authfail:', 'authfail-user:', 'addr:', 'mark:signedin:']) {
      expect(limits.some((key) => key.startsWith(`${prefix}ratelimit:${kind}`))).toBe(true);
    }
    for (const [key, value] of written) {
      for (const address of ADDRESSES) {
        expect(key).not.toContain(address);
        expect(value).not.toContain(address);
      }
      expect(key).not.toContain('alice');
    }
    // each named by its kind and 22 characters of an HMAC, whoever wrote it
    for (const key of limits.filter((k) => !k.endsWith(':salt'))) {
      expect(key.slice(`${prefix}ratelimit:`.length)).toMatch(/^(mark:)?[a-z-]+:[A-Za-z0-9_-]{22}$/);
    }
    expect(written.has(`${prefix}ratelimit:salt`)).toBe(secret === undefined);
  }, 30_000);
});
