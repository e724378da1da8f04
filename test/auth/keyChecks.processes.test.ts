import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuthorization } from '../../src/auth/authorization.js';
import { MemoryCache } from '../../src/cache/memory.js';
import { loadConfig } from '../../src/config/env.js';
import { createGateway, type Gateway } from '../../src/http/server.js';
import { openBackend } from '../../src/main.js';
import { startCountingProxy, type CountingProxy } from '../helpers/countingProxy.js';
import { createKey, gql } from '../helpers/processes.js';
import { startRestUpstream, type RestUpstream } from '../helpers/restUpstream.js';

// Issue 41, finding 5: through a REST-mode gateway, 15 strangers' wrong keys from one address
// locked that address out, and a valid key never seen before from it got 429 for seconds, where an
// embedded gateway checks it and lets it through. Two processes: an embedded gateway serving the
// key interface, and a REST-mode gateway in front of it (AUTH_FAILURES_PER_MINUTE 10, and
// AUTH_KEY_CHECKS_PER_MINUTE at its default, 60), its calls to the key service counted by a proxy.

const strangerKey = (): string => `${randomBytes(16).toString('base64').slice(0, 21)}A`;
const VIEWER = '{ viewer { id } }';
const CHECKS = 'GET /api/v1/apikey';

describe('wrong keys from one address through a REST-mode gateway', () => {
  let upstream: RestUpstream;
  let proxy: CountingProxy;
  let gateway: Gateway;
  let url: string;
  const alice = basicAuthorization('alice', 'alice-password');

  beforeAll(async () => {
    upstream = await startRestUpstream([{ username: 'alice', password: 'alice-password' }]);
    proxy = await startCountingProxy(upstream.url);
    const config = loadConfig({
      DATA_DIR: '/nonexistent', BACKEND: 'rest', APIKEY_SERVICE_URL: proxy.url, RECS_SERVICE_URL: upstream.url, RECS_API_KEY: upstream.recsApiKey,
      TRUST_PROXY: '127.0.0.1', AUTH_FAILURES_PER_MINUTE: '10', RATE_LIMIT_RPS: '1000',
      // patient with the upstream (a loaded machine's tsx process): the subject is who is let in
      REQUEST_DEADLINE_MS: '60000', UPSTREAM_HEADERS_TIMEOUT_MS: '60000',
    });
    const cache = new MemoryCache();
    gateway = await createGateway({ config, backend: await openBackend(config, { cache }), cache });
    url = await gateway.listen(0, '127.0.0.1');
  }, 120_000);
  afterAll(async () => {
    await gateway?.stop().catch(() => undefined);
    await proxy?.close();
    await upstream?.stop();
  });

  const viewer = (authorization: string, from: string) => gql(url, VIEWER, {}, { authorization, 'x-forwarded-for': from });

  it('fifteen strangers lock the address out for wrong keys, and a valid key never seen before from it still gets in', async () => {
    const fresh = await createKey(upstream.url, alice, 'fifteen');
    proxy.reset();
    const statuses: number[] = [];
    for (let i = 0; i < 15; i++) statuses.push((await viewer(strangerKey(), '10.60.0.1')).status);
    // ten failures allowed a minute, then the address is locked out: a wrong key from it gets 429
    expect(statuses).toEqual([...Array<number>(10).fill(401), ...Array<number>(5).fill(429)]);
    const valid = await viewer(fresh, '10.60.0.1');
    expect(valid.status).toBe(200);
    expect(valid.body.data?.viewer?.id).toEqual(expect.any(String));
    // each key was checked once: the key service decided, the gateway refused no valid key
    expect(proxy.count(CHECKS)).toBe(16);
  }, 30_000);

  it("a flood of wrong keys from one address costs the key service a bounded number of checks; valid keys are still answered", async () => {
    const known = await createKey(upstream.url, alice, 'known');
    const fresh = await createKey(upstream.url, alice, 'after-flood');
    const elsewhere = await createKey(upstream.url, alice, 'elsewhere');
    expect((await viewer(known, '10.60.0.2')).status).toBe(200);
    proxy.reset();
    const started = Date.now();
    const statuses: number[] = [];
    // 200 distinct wrong keys, 10 at a time, and one of them sent again 20 times
    const replayed = strangerKey();
    for (let round = 0; round < 20; round++) {
      const sent = Array.from({ length: 10 }, () => viewer(strangerKey(), '10.60.0.2').then((answer) => answer.status));
      sent.push(viewer(replayed, '10.60.0.2').then((answer) => answer.status));
      statuses.push(...(await Promise.all(sent)));
    }
    const seconds = (Date.now() - started) / 1000;
    // the key-check budget (60, one more a second) and nothing past it; every stranger refused
    expect(proxy.count(CHECKS)).toBeLessThanOrEqual(60 + Math.ceil(seconds) + 1);
    expect(proxy.count(CHECKS)).toBeGreaterThanOrEqual(50);
    expect(statuses.filter((status) => status !== 401 && status !== 429)).toEqual([]);
    expect(statuses.filter((status) => status === 429).length).toBeGreaterThan(100);
    // a key verified before still passes from there at once, and a new one from elsewhere
    expect((await viewer(known, '10.60.0.2')).status).toBe(200);
    expect((await viewer(elsewhere, '10.60.0.3')).status).toBe(200);
    // and a new one from the flooded address, once the budget has a token again (one a second)
    await expect.poll(async () => (await viewer(fresh, '10.60.0.2')).status, { timeout: 10_000, interval: 250 }).toBe(200);
  }, 60_000);
});
