import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuthorization } from '../../src/auth/authorization.js';
import { hashPassword, SCRYPT_CONCURRENCY, scryptRuns, scryptWaiting, verifyPassword } from '../../src/backends/embedded/keys/passwords.js';
import { SqliteKeyStore } from '../../src/backends/embedded/keys/sqliteStore.js';
import { loadConfig } from '../../src/config/env.js';
import { createGateway, type Gateway } from '../../src/http/server.js';
import { createLogger } from '../../src/logger.js';
import { embeddedWithUsers } from '../helpers/gateway.js';
import { NO_RATE_LIMITS } from '../helpers/processes.js';
import { tempDir } from '../helpers/stores.js';

/**
 * Sign-ins whose clients leave while their password check waits for a slot (a burst of them from
 * clients that time out): over real HTTP, on GraphQL and on the REST keys interface, the checks
 * are skipped when their turn comes, and nothing is logged as a failure of the gateway's.
 */
// About 1.5 s of a core a check (p 16 against the default's 3): long enough for the requests
// below to queue behind them and leave, on a machine that runs a second test suite.
const SLOW = { N: 2 ** 15, r: 8, p: 16 };

describe('sign-ins whose clients left while they waited for a password check', () => {
  const dir = tempDir();
  const lines: string[] = [];
  let gateway: Gateway;
  let url: string;

  beforeAll(async () => {
    const store = new SqliteKeyStore(path.join(dir.dir, 'keys.db'));
    const backend = await embeddedWithUsers(store);
    const config = loadConfig({ DATA_DIR: '/nonexistent', ...NO_RATE_LIMITS });
    const log = createLogger({ level: 'info', destination: { write: (line: string) => lines.push(line) } as unknown as NodeJS.WritableStream });
    gateway = await createGateway({ config, backend, log });
    url = await gateway.listen(0, '127.0.0.1');
  }, 60_000);
  afterAll(async () => {
    await gateway?.stop();
    dir.remove();
  });

  it('are not checked when their turn comes; the gateway logs no error and answers the next sign-in', async () => {
    const slow = await hashPassword('pw', SLOW);
    const before = scryptRuns();
    // every slot taken by a slow check of this test's own
    const holders = Array.from({ length: SCRYPT_CONCURRENCY }, () => verifyPassword('pw', slow));
    const clients = [new AbortController(), new AbortController()];
    const sent = [
      fetch(`${url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: basicAuthorization('alice', 'guess-graphql') },
        body: JSON.stringify({ query: '{ viewer { username } }' }),
        signal: clients[0]!.signal,
      }),
      fetch(`${url}/api/v1/apikey`, { headers: { authorization: basicAuthorization('alice', 'guess-rest') }, signal: clients[1]!.signal }),
    ].map((request) => request.then(() => 'answered', () => 'left'));
    // both queued behind the slow checks (polled: the requests are in flight), then their clients leave
    while (scryptWaiting() < 2) await new Promise((resolve) => setTimeout(resolve, 5));
    for (const client of clients) client.abort();
    expect(await Promise.all(sent)).toEqual(['left', 'left']);
    await Promise.all(holders);
    // the slow checks ran; the two left behind did not
    expect(scryptRuns() - before).toBe(SCRYPT_CONCURRENCY);
    const next = await fetch(`${url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: basicAuthorization('alice', 'alice-password') },
      body: JSON.stringify({ query: '{ viewer { username } }' }),
    });
    expect(await next.json()).toEqual({ data: { viewer: { username: 'alice' } } });
    const errors = lines.filter((line) => (JSON.parse(line) as { level: number }).level >= 50);
    expect(errors).toEqual([]);
  }, 30_000);
});
