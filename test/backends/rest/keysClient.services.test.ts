import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ServerResponse } from 'node:http';
import { createHash } from 'node:crypto';
import { credentialId } from '../../../src/auth/authorization.js';
import { createRestBackend } from '../../../src/backends/rest/index.js';
import type { RestBackend, RestBackendOptions } from '../../../src/backends/rest/index.js';
import { MemoryCache } from '../../../src/cache/memory.js';
import { RedisCache } from '../../../src/cache/redis.js';
import { newStats, type SharedCache } from '../../../src/ports/cache.js';
import { drainPrefix, REDIS_URL, testPrefix } from '../../helpers/redis.js';
import { sendJson, sendText, failure, startServer } from '../../rest/helpers.js';
import type { RecordedRequest, TestServer } from '../../rest/helpers.js';

let answer: (req: RecordedRequest, res: ServerResponse) => void;
let upstream: TestServer;
let backend: RestBackend;
const KEY = 'AAECAwQFBgcICQoLDA0ODw';
const BOB = `Basic ${Buffer.from('bob@corp:pw:with:colons').toString('base64')}`;
const LISTING = [
  { id: '11111111-1111-4111-8111-111111111111', userId: 'user-1', name: 'b-key' },
  { id: '22222222-2222-4222-8222-222222222222', userId: 'user-1', name: 'a-key', createdAt: '2024-05-06T07:08:09.000Z' },
];

function start(options: Partial<RestBackendOptions> = {}): void {
  backend = createRestBackend({
    apiKeyServiceUrl: `${upstream.url}/concord/`, recsServiceUrl: 'http://127.0.0.1:9', recsApiKey: 'k',
    retryBaseDelayMs: 1, retryMaxDelayMs: 5, ...options,
  });
}

beforeEach(async () => {
  answer = (_req, res) => sendJson(res, 200, LISTING);
  upstream = await startServer((req, res) => answer(req, res));
  start();
});
afterEach(async () => {
  await backend.close();
  await upstream.close();
});

describe('authenticate', () => {
  it.each([
    '', '   ', 'not base64!', 'Bearer not-base64', 'Bearer ', 'AAA=B', 'Digest abc',
    `Basic ${Buffer.from('no-colon').toString('base64')}`, `Basic ${Buffer.from(':pw').toString('base64')}`, 'Basic %%%', 'Basic',
    'A'.repeat(5000),
  ])('refuses %#: a malformed header, locally, with no upstream call', async (header) => {
    expect((await failure(backend.keys.authenticate(header))).code).toBe('UNAUTHENTICATED');
    expect(upstream.requests).toHaveLength(0);
  });

  it('asks the key service with the header as given, under the base URL\'s path', async () => {
    const principal = await backend.keys.authenticate(BOB);
    expect(upstream.requests[0]).toMatchObject({ method: 'GET', url: '/concord/api/v1/apikey', headers: { authorization: BOB } });
    expect(principal).toEqual({
      user: { id: 'user-1', username: 'bob', domain: 'corp', isAdmin: false },
      authenticatedBy: 'PASSWORD',
      keyId: null,
      limits: null,
      // a password credential by a keyed hash of this process's own, never a plain digest of it
      credentialId: credentialId(BOB),
      authorization: BOB,
    });
    expect(principal.credentialId).not.toBe(createHash('sha256').update(BOB).digest('hex'));
    const byKey = await backend.keys.authenticate(`Bearer ${KEY}`);
    expect(byKey).toMatchObject({ user: { id: 'user-1', username: null, domain: null }, authenticatedBy: 'API_KEY' });
  });

  it('answers at once only for a credential it authenticated within the TTL', async () => {
    expect(backend.keys.authenticateKnown!(KEY)).toBeUndefined();
    const principal = await backend.keys.authenticate(KEY);
    expect(backend.keys.authenticateKnown!(KEY)).toEqual(principal);
    expect(upstream.requests).toHaveLength(1);
    // the same key in another form is another credential, and a malformed header is never known
    expect(backend.keys.authenticateKnown!(`Bearer ${KEY}`)).toBeUndefined();
    expect(backend.keys.authenticateKnown!('not base64!')).toBeUndefined();
    // by the connection's remembered credential id: the same answers
    const connection = {};
    expect(backend.keys.authenticateKnown!(KEY, connection)).toEqual(principal);
    expect(backend.keys.authenticateKnown!(`Bearer ${KEY}`, connection)).toBeUndefined();
    expect(backend.keys.authenticateKnown!(KEY, connection)).toEqual(principal);
    const off = createRestBackend({ apiKeyServiceUrl: `${upstream.url}/concord/`, recsServiceUrl: 'http://127.0.0.1:9', recsApiKey: 'k', authCacheTtlMs: 0 });
    try {
      await off.keys.authenticate(KEY);
      expect(off.keys.authenticateKnown!(KEY)).toBeUndefined();
    } finally {
      await off.close();
    }
  });

  it('answers at once for a remembered key beside an in-process cache, but not beside Redis (another process may have deleted it)', async () => {
    const prefix = testPrefix();
    const redis = new RedisCache({ url: REDIS_URL, keyPrefix: prefix });
    const [local, shared] = [new MemoryCache(), redis].map((sharedCache) =>
      createRestBackend({ apiKeyServiceUrl: upstream.url, recsServiceUrl: 'http://127.0.0.1:9', recsApiKey: 'k', sharedCache }));
    try {
      for (const b of [local!, shared!]) await b.keys.authenticate(KEY);
      expect(local!.keys.authenticateKnown!(KEY)?.user.id).toBe('user-1');
      expect(shared!.keys.authenticateKnown!(KEY)).toBeUndefined();
      expect((await shared!.keys.authenticate(KEY)).user.id).toBe('user-1');
      expect(upstream.requests).toHaveLength(2);
    } finally {
      for (const b of [local!, shared!]) await b.close();
      await redis.close();
      await drainPrefix(prefix);
    }
  });

  it('knows no user id before the user has a key', async () => {
    answer = (_req, res) => sendJson(res, 200, []);
    expect((await backend.keys.authenticate(KEY)).user.id).toBeNull();
  });

  it('maps 401 and 403 to UNAUTHENTICATED and 5xx to UPSTREAM_UNAVAILABLE naming the service', async () => {
    answer = (_req, res) => sendJson(res, 401, { message: 'bad' });
    expect((await failure(backend.keys.authenticate(KEY))).code).toBe('UNAUTHENTICATED');
    // other credentials each time: a refused one is remembered
    answer = (_req, res) => sendText(res, 403, 'Forbidden');
    expect((await failure(backend.keys.authenticate(`Bearer ${KEY}`))).code).toBe('UNAUTHENTICATED');
    answer = (_req, res) => sendText(res, 500, 'oops');
    const error = await failure(backend.keys.authenticate(BOB));
    expect(error.code).toBe('UPSTREAM_UNAVAILABLE');
    expect(error.message).toContain('apikeys');
  });

  it('remembers a success for the TTL, by hash only, and a refusal for a few seconds', async () => {
    await backend.keys.authenticate(KEY);
    const again = await backend.keys.authenticate(KEY);
    expect(again.authorization).toBe(KEY);
    expect(upstream.requests).toHaveLength(1);

    answer = (_req, res) => sendJson(res, 401, {});
    await failure(backend.keys.authenticate(`Bearer ${KEY}`));
    expect((await failure(backend.keys.authenticate(`Bearer ${KEY}`))).code).toBe('UNAUTHENTICATED');
    expect(upstream.requests).toHaveLength(2);
  });

  it('answers a credential it was just refused 401 without asking again; never remembers an outage or a 429 as a refusal', async () => {
    const wrong = 'Bearer ZZECAwQFBgcICQoLDA0ODw';
    answer = (_req, res) => sendJson(res, 401, {});
    for (let i = 0; i < 5; i++) expect((await failure(backend.keys.authenticate(wrong))).code).toBe('UNAUTHENTICATED');
    expect(upstream.requests).toHaveLength(1);
    // another wrong credential is asked about
    expect((await failure(backend.keys.authenticate(BOB))).code).toBe('UNAUTHENTICATED');
    expect(upstream.requests).toHaveLength(2);
    // an outage or a rate limit says nothing about the credential: the next try asks again
    for (const fail of [(res: ServerResponse) => sendText(res, 503, 'down'), (res: ServerResponse) => sendJson(res, 429, {}, { 'retry-after': '60' })]) {
      answer = (_req, res) => fail(res);
      await failure(backend.keys.authenticate(KEY));
    }
    answer = (_req, res) => sendJson(res, 200, LISTING);
    const before = upstream.requests.length;
    expect((await backend.keys.authenticate(KEY)).user.id).toBe('user-1');
    expect(upstream.requests).toHaveLength(before + 1);
  });

  it('answers an upstream 429 on a login check RATE_LIMITED to that caller only: no retry, no breaker, other callers unaffected', async () => {
    await backend.close();
    start({ breakerFailures: 2 });
    await backend.keys.authenticate(KEY); // remembered before the storm
    answer = (req, res) =>
      req.headers.authorization === BOB ? sendJson(res, 429, { message: 'Too many failed logins' }, { 'retry-after': '1' }) : sendJson(res, 200, LISTING);
    const before = upstream.requests.length;
    for (let i = 0; i < 4; i++) {
      expect(await failure(backend.keys.authenticate(BOB))).toMatchObject({ code: 'RATE_LIMITED', retryAfter: 1 });
    }
    // one call each: a Retry-After within the wait cap is still not waited on for a login check
    expect(upstream.requests).toHaveLength(before + 4);
    expect(backend.breakerState().apikeys).toBe('closed');
    expect((await backend.keys.authenticate(KEY)).user.id).toBe('user-1');
    expect(backend.keys.authenticateKnown!(KEY)?.user.id).toBe('user-1');
    expect((await backend.keys.authenticate(`Bearer ${KEY}`)).user.id).toBe('user-1');
    // the key service's other GETs still retry a 429 as before
    const principal = await backend.keys.authenticate(KEY);
    let listed = 0;
    answer = (_req, res) => (listed++ === 0 ? sendJson(res, 429, {}, { 'retry-after': '0' }) : sendJson(res, 200, LISTING));
    expect(await backend.keys.listKeys(principal)).toHaveLength(2);
    expect(listed).toBe(2);
  });

  it('sends the caller\'s address as X-Forwarded-For when it is given, and nothing otherwise', async () => {
    await backend.keys.authenticate(KEY, { clientAddress: '203.0.113.7' });
    await backend.keys.authenticate(BOB);
    await backend.keys.authenticate(`Bearer ${KEY}`, { clientAddress: '198.51.100.1\r\nx-evil: 1' });
    expect(upstream.requests.map((r) => r.headers['x-forwarded-for'])).toEqual(['203.0.113.7', undefined, undefined]);
    const principal = await backend.keys.authenticate(KEY);
    await backend.keys.listKeys(principal, null, { clientAddress: '2001:db8::1, 10.0.0.2' });
    expect(upstream.requests.at(-1)?.headers['x-forwarded-for']).toBe('2001:db8::1, 10.0.0.2');
  });

  it('asks again once the TTL has passed', async () => {
    await backend.close();
    start({ authCacheTtlMs: 50 });
    await backend.keys.authenticate(KEY);
    await new Promise((resolve) => setTimeout(resolve, 80));
    await backend.keys.authenticate(KEY);
    expect(upstream.requests).toHaveLength(2);
  });

  it('shares one upstream call among concurrent authentications of one credential', async () => {
    answer = (_req, res) => setTimeout(() => sendJson(res, 200, LISTING), 50);
    const principals = await Promise.all(Array.from({ length: 5 }, () => backend.keys.authenticate(KEY)));
    expect(new Set(principals.map((p) => p.user.id))).toEqual(new Set(['user-1']));
    expect(upstream.requests).toHaveLength(1);
  });

  it('uses an authentication that ended while the shared cache was read, instead of asking again', async () => {
    // a shared cache whose reads end when the test says: the second request's read ends only after
    // the first request's whole authentication, which no flight is left to join
    const reads: (() => void)[] = [];
    const slow: SharedCache = {
      stats: newStats(),
      getMany: (keys) => new Promise((resolve) => reads.push(() => resolve(keys.map(() => null)))),
      setMany: () => Promise.resolve(),
      delete: () => Promise.resolve(),
      check: () => Promise.resolve('ok'),
      close: () => Promise.resolve(),
    };
    await backend.close();
    start({ sharedCache: slow });
    const first = backend.keys.authenticate(KEY);
    const second = backend.keys.authenticate(KEY);
    expect(reads).toHaveLength(2);
    reads.shift()!();
    expect((await first).user.id).toBe('user-1');
    reads.shift()!();
    expect((await second).user.id).toBe('user-1');
    expect(upstream.requests).toHaveLength(1);
  });

  it('lets one waiter give up at its deadline without failing the others', async () => {
    answer = (_req, res) => setTimeout(() => sendJson(res, 200, LISTING), 150);
    const impatient = backend.keys.authenticate(KEY, { signal: AbortSignal.timeout(30) });
    const patient = backend.keys.authenticate(KEY, { signal: AbortSignal.timeout(5000) });
    expect((await failure(impatient)).code).toBe('UPSTREAM_UNAVAILABLE');
    expect((await patient).user.id).toBe('user-1');
    expect(upstream.requests).toHaveLength(1);
  });
});

describe('keys', () => {
  it('lists sorted by name, with dates passed through when the upstream sends them', async () => {
    const principal = await backend.keys.authenticate(KEY);
    const list = await backend.keys.listKeys(principal);
    expect(list).toEqual([
      // the original key service has no scopes: it restricts no key by them
      { id: LISTING[1]?.id, userId: 'user-1', name: 'a-key', createdAt: new Date('2024-05-06T07:08:09.000Z'), expiresAt: null, lastUsedAt: null, scopes: ['RECOMMENDATIONS_READ', 'EVENTS_WRITE', 'KEYS_MANAGE'], rateLimitPerSecond: null, dailyQuota: null },
      { id: LISTING[0]?.id, userId: 'user-1', name: 'b-key', createdAt: null, expiresAt: null, lastUsedAt: null, scopes: ['RECOMMENDATIONS_READ', 'EVENTS_WRITE', 'KEYS_MANAGE'], rateLimitPerSecond: null, dailyQuota: null },
    ]);
    expect(upstream.requests.at(-1)?.headers.authorization).toBe(KEY);
  });

  it('creates with the caller\'s header and describes the new key by listing with it', async () => {
    const created = { id: '33333333-3333-4333-8333-333333333333', key: 'BBECAwQFBgcICQoLDA0ODw' };
    answer = (req, res) => {
      if (req.method === 'POST') return sendJson(res, 200, { ok: true, ...created });
      if (req.headers.authorization === created.key) return sendJson(res, 200, [...LISTING, { id: created.id, userId: 'user-1', name: 'key#3' }]);
      return sendJson(res, 200, LISTING);
    };
    const principal = await backend.keys.authenticate(BOB);
    const result = await backend.keys.createKey(principal, { userDomain: 'corp', expiresInDays: null });
    expect(result).toEqual({
      ok: true, ...created,
      apiKey: { id: created.id, userId: 'user-1', name: 'key#3', createdAt: null, expiresAt: null, lastUsedAt: null, scopes: ['RECOMMENDATIONS_READ', 'EVENTS_WRITE', 'KEYS_MANAGE'], rateLimitPerSecond: null, dailyQuota: null },
    });
    const post = upstream.requests.find((r) => r.method === 'POST');
    expect(post).toMatchObject({ url: '/concord/api/v1/apikey', headers: { authorization: BOB, 'content-type': 'application/json' } });
    expect(JSON.parse(post?.body ?? '')).toEqual({ userDomain: 'corp' });
  });

  it('maps create errors: 400 [{id,message}] to BAD_USER_INPUT on that field, 403 to FORBIDDEN, 401 to UNAUTHENTICATED', async () => {
    const principal = await backend.keys.authenticate(KEY);
    answer = (_req, res) => sendJson(res, 400, [{ id: 'name', message: 'Invalid name' }]);
    expect(await failure(backend.keys.createKey(principal, { name: 'x' }))).toMatchObject({ code: 'BAD_USER_INPUT', field: 'name', message: 'Invalid name' });
    answer = (_req, res) => sendJson(res, 403, [{ id: '*', message: 'Operation is not permitted' }]);
    expect((await failure(backend.keys.createKey(principal, { username: 'alice' }))).code).toBe('FORBIDDEN');
    answer = (_req, res) => sendJson(res, 401, {});
    expect((await failure(backend.keys.createKey(principal, {}))).code).toBe('UNAUTHENTICATED');
  });

  it('passes on a refusal\'s first line without the caller\'s credentials, where a key service echoes them', async () => {
    const principal = await backend.keys.authenticate(KEY);
    answer = (req, res) => sendJson(res, 400, [{ id: 'name', message: `Invalid name from ${String(req.headers.authorization)}\n    at check (/srv/concord/Keys.java:88)` }]);
    const error = await failure(backend.keys.createKey(principal, { name: 'x' }));
    expect(error).toMatchObject({ code: 'BAD_USER_INPUT', field: 'name', message: 'Invalid name from [credentials]' });
  });

  it('does not let a client trip the breaker with 500s for unknown usernames', async () => {
    await backend.close();
    start({ breakerFailures: 2 });
    const principal = await backend.keys.authenticate(KEY);
    answer = (_req, res) => sendJson(res, 500, { message: 'User not found: ghost' });
    for (let i = 0; i < 4; i++) expect((await failure(backend.keys.createKey(principal, { username: 'ghost' }))).code).toBe('UPSTREAM_UNAVAILABLE');
    expect(backend.breakerState().apikeys).toBe('closed');
  });

  it('maps delete: unknown id and another user\'s key both NOT_FOUND; 404 and a non-UUID BAD_USER_INPUT on id', async () => {
    const principal = await backend.keys.authenticate(KEY);
    const id = '44444444-4444-4444-8444-444444444444';
    answer = (_req, res) => sendJson(res, 400, [{ id: '*', message: `API key not found: ${id}` }]);
    expect(await failure(backend.keys.deleteKey(principal, id))).toMatchObject({ code: 'NOT_FOUND', message: `API key not found: ${id}` });
    answer = (_req, res) => sendJson(res, 403, [{ id: '*', message: 'Operation is not permitted' }]);
    expect(await failure(backend.keys.deleteKey(principal, id))).toMatchObject({ code: 'NOT_FOUND', message: `API key not found: ${id}` });
    answer = (_req, res) => sendText(res, 404, 'Not Found');
    expect(await failure(backend.keys.deleteKey(principal, id))).toMatchObject({ code: 'BAD_USER_INPUT', field: 'id' });
    const before = upstream.requests.length;
    for (const bad of ['abc', '../../admin', `${id}?x=1`]) {
      expect(await failure(backend.keys.deleteKey(principal, bad))).toMatchObject({ code: 'BAD_USER_INPUT', field: 'id' });
    }
    expect(upstream.requests).toHaveLength(before);
  });

  it('deletes, and forgets the owner\'s cached credentials at once', async () => {
    const principal = await backend.keys.authenticate(KEY);
    answer = (req, res) => (req.method === 'DELETE' ? sendJson(res, 200, { result: 'DELETED', ok: true }) : sendJson(res, 401, {}));
    await backend.keys.deleteKey(principal, LISTING[0]?.id ?? '');
    expect(upstream.requests.at(-1)).toMatchObject({ method: 'DELETE', url: `/concord/api/v1/apikey/${LISTING[0]?.id}` });
    expect((await failure(backend.keys.authenticate(KEY))).code).toBe('UNAUTHENTICATED');
  });

  it('refuses to list another user\'s keys: the interface cannot', async () => {
    const principal = await backend.keys.authenticate(KEY);
    expect((await failure(backend.keys.listKeys(principal, { username: 'alice', domain: null }))).code).toBe('FORBIDDEN');
  });
});
