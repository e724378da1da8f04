import { once } from 'node:events';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { RedisCache } from '../../src/cache/redis.js';
import { drainPrefix, REDIS_URL, testPrefix } from '../helpers/redis.js';
import { loadConfig } from '../../src/config/env.js';
import { createGateway, type Gateway } from '../../src/http/server.js';
import { createLogger } from '../../src/logger.js';
import { openBackend } from '../../src/main.js';
import { startHeldKeyService } from '../helpers/heldKeyService.js';
import { createRestBackend } from '../../src/backends/rest/index.js';
import { CLIENT_GONE } from '../../src/shared/callSignal.js';

/**
 * REST mode, a key's first use: clients that close their connections at once (a probe's curl
 * --max-time 0.002) while others with the same key wait. A client gone before its check reached
 * the key service's shared lookup left that lookup stopped and its rejection unheard, which ended
 * the gateway's process (an unhandled rejection); a client that came after the stop was answered
 * with it (UPSTREAM_UNAVAILABLE, 502) instead of a check of its own.
 */
const KEY = 'AAECAwQFBgcICQoLDA0ODw';

/** alice's key, as the key service lists it */
const LISTING = JSON.stringify([{ id: '6f1c2b9e-3f4a-4c5d-8e7f-0a1b2c3d4e5f', userId: '0b6f8a2e-1c3d-4e5f-9a8b-7c6d5e4f3a2b', name: 'k' }]);

/** A request sent whole, its connection closed at once, before any answer. */
async function sendAndLeave(url: string): Promise<void> {
  const { hostname, port } = new URL(url);
  const socket = net.connect(Number(port), hostname);
  await once(socket, 'connect');
  const body = JSON.stringify({ query: '{ viewer { authenticatedBy } }' });
  // closed once the request is handed to the kernel: the gateway reads it, and then the close
  await new Promise<void>((resolve) => {
    socket.write(`POST /graphql HTTP/1.1\r\nHost: ${hostname}\r\nContent-Type: application/json\r\nAuthorization: ${KEY}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`, () => {
      socket.destroy();
      resolve();
    });
  });
}

const stays = async (url: string): Promise<unknown> =>
  (await fetch(`${url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: KEY }, body: JSON.stringify({ query: '{ viewer { authenticatedBy } }' }) })).json();

describe.each([
  ['under the login limits', { RATE_LIMIT_RPS: '0' }],
  ['without login limits', { RATE_LIMIT_RPS: '0', AUTH_FAILURES_PER_MINUTE: '0' }],
])('REST mode: clients leaving as a key is first used, %s', (_name, limits) => {
  let gateway: Gateway | undefined;
  let close: (() => void) | undefined;
  const prefix = testPrefix();
  afterEach(async () => {
    await gateway?.stop().catch(() => undefined);
    close?.();
    await drainPrefix(prefix);
  });

  it('keeps the process up, and answers the clients that stay with a check of their own', async () => {
    const keyService = await startHeldKeyService({ body: LISTING });
    close = () => keyService.close();
    const config = loadConfig({
      DATA_DIR: '/nonexistent', ...limits, BACKEND: 'rest',
      APIKEY_SERVICE_URL: keyService.url, RECS_SERVICE_URL: keyService.url, RECS_API_KEY: KEY,
      UPSTREAM_RETRIES: '0',
    });
    // the shared cache on Redis, as the probe ran it: its read of the key's check is the wait in
    // which a client's close is heard before the key service's lookup is joined
    const cache = new RedisCache({ url: REDIS_URL, keyPrefix: prefix, commandTimeoutMs: 10_000 });
    const log = createLogger({ level: 'fatal', destination: { write: () => true } as unknown as NodeJS.WritableStream });
    gateway = await createGateway({ config, backend: await openBackend(config, { cache }), cache, log });
    const url = await gateway.listen(0, '127.0.0.1');

    // rounds of three leaving at once; then, while the last round's check may still be stopping, two that stay
    for (let round = 0; round < 5; round++) await Promise.all([sendAndLeave(url), sendAndLeave(url), sendAndLeave(url)]);
    await sleep(20);
    const staying = [stays(url), stays(url)];
    // both staying clients wait at the held key service (a check of their own, or one they share)
    while (keyService.held() < 1) await sleep(5);
    await sleep(50);
    keyService.release();
    expect(await Promise.all(staying)).toEqual([0, 1].map(() => ({ data: { viewer: { authenticatedBy: 'API_KEY' } } })));
    // and the process is still there to answer
    expect(await stays(url)).toEqual({ data: { viewer: { authenticatedBy: 'API_KEY' } } });
  }, 30_000);
});

describe("REST mode's key check shared by concurrent requests (RestKeyService)", () => {
  it('is stopped for a caller already gone when it came, heard, and a caller after that gets a check of its own', async () => {
    const keyService = await startHeldKeyService({ body: LISTING });
    try {
      const backend = createRestBackend({ apiKeyServiceUrl: keyService.url, recsServiceUrl: keyService.url, recsApiKey: KEY, retries: 0 });
      // gone before its check began (its connection closed while the shared cache was read): the
      // lookup was made and stopped for it alone, its rejection heard by no one (the process ended)
      const gone = backend.keys.authenticate(KEY, { signal: AbortSignal.abort(CLIENT_GONE) });
      await expect(gone).rejects.toMatchObject({ code: 'UPSTREAM_UNAVAILABLE' });
      // one still there, right after: it was answered with that stop, not a check of its own
      const stays = backend.keys.authenticate(KEY, { signal: new AbortController().signal });
      while (keyService.held() < 1) await sleep(5);
      keyService.release();
      expect((await stays).authenticatedBy).toBe('API_KEY');
      await backend.close?.();
    } finally {
      keyService.close();
    }
  });
});
