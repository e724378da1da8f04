import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuthorization } from '../../src/auth/authorization.js';
import { MemoryCache } from '../../src/cache/memory.js';
import { loadConfig } from '../../src/config/env.js';
import { createGateway, type Gateway } from '../../src/http/server.js';
import { createLogger } from '../../src/logger.js';
import { openBackend } from '../../src/main.js';
import { startHeldKeyService, type HeldKeyService } from '../helpers/heldKeyService.js';

/**
 * Two requests with the same Basic credentials share one sign-in at the key service (REST mode):
 * each is answered by that sign-in or by its own deadline, whichever comes first. The key service
 * here holds the sign-in until the test lets it go, which it does only once the first request has
 * its answer: a first request kept waiting for the second's deadline would see the second fail too.
 */
const DEADLINE_MS = 4000;
/** When the second request is sent, after the first: its deadline is this much later than the first's. */
const SECOND_AFTER_MS = DEADLINE_MS / 2;
const ALICE = basicAuthorization('alice', 'alice-password');

interface Answer {
  status: number;
  body: { data?: unknown; errors?: { extensions?: { code?: string } }[] };
  /** ms from the request's sending to its answer */
  tookMs: number;
}

async function signIn(url: string): Promise<Answer> {
  const sent = Date.now();
  const response = await fetch(`${url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: ALICE },
    body: JSON.stringify({ query: '{ viewer { username } }' }),
  });
  const body = (await response.json()) as Answer['body'];
  return { status: response.status, body, tookMs: Date.now() - sent };
}

describe.each([
  ['under the login limits (the limiter shares the sign-in)', { RATE_LIMIT_RPS: '0' }],
  ['without login limits (the key service client shares it)', { RATE_LIMIT_RPS: '0', AUTH_FAILURES_PER_MINUTE: '0' }],
])('REST mode: a sign-in joined by a later request, %s', (_name, limits) => {
  let keyService: HeldKeyService;
  let gateway: Gateway;
  let url: string;

  beforeAll(async () => {
    keyService = await startHeldKeyService({ holds: (authorization) => authorization === ALICE });
    const config = loadConfig({
      DATA_DIR: '/nonexistent',
      ...limits,
      BACKEND: 'rest',
      APIKEY_SERVICE_URL: keyService.url,
      RECS_SERVICE_URL: keyService.url,
      RECS_API_KEY: 'AAECAwQFBgcICQoLDA0ODw',
      REQUEST_DEADLINE_MS: String(DEADLINE_MS),
      // the sign-in is held for longer than undici's default wait for headers
      UPSTREAM_HEADERS_TIMEOUT_MS: '60000',
      UPSTREAM_RETRIES: '0',
    });
    const cache = new MemoryCache();
    const log = createLogger({ level: 'fatal', destination: { write: () => true } as unknown as NodeJS.WritableStream });
    gateway = await createGateway({ config, backend: await openBackend(config, { cache }), cache, log });
    url = await gateway.listen(0, '127.0.0.1');
  }, 60_000);
  afterAll(async () => {
    keyService?.release();
    await gateway?.stop().catch(() => undefined);
    keyService?.close();
  });

  it('answers the first at its own deadline, and the second with the sign-in', async () => {
    const first = signIn(url);
    while (keyService.held() < 1) await sleep(5);
    // the first's sign-in is held at the key service; the second joins it well before the first's deadline
    await sleep(SECOND_AFTER_MS);
    const second = signIn(url);
    const firstAnswer = await first;
    keyService.release();
    const secondAnswer = await second;

    expect(firstAnswer.body.errors?.[0]?.extensions?.code).toBe('UPSTREAM_UNAVAILABLE');
    // at its own deadline: well before the second's (SECOND_AFTER_MS later), on a loaded machine too
    expect(firstAnswer.tookMs).toBeGreaterThanOrEqual(DEADLINE_MS - 50);
    expect(firstAnswer.tookMs).toBeLessThan(DEADLINE_MS + SECOND_AFTER_MS / 2);
    expect(secondAnswer.status).toBe(200);
    expect(secondAnswer.body).toEqual({ data: { viewer: { username: 'alice' } } });
    // the second joined the first's call rather than making its own
    expect(keyService.held()).toBe(1);
  }, 30_000);
});
