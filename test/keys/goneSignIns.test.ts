import { once } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
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

/** For a describe block: an in-process gateway over `env` with the three users, and its log lines. */
function useGatewayWithLog(env: Record<string, string>): { gateway: Gateway; url: string; lines: string[] } {
  const dir = tempDir();
  const started = { gateway: undefined as unknown as Gateway, url: '', lines: [] as string[] };
  beforeAll(async () => {
    const store = new SqliteKeyStore(path.join(dir.dir, 'keys.db'));
    const backend = await embeddedWithUsers(store);
    const config = loadConfig({ DATA_DIR: '/nonexistent', ...env });
    const destination = { write: (line: string) => started.lines.push(line) } as unknown as NodeJS.WritableStream;
    started.gateway = await createGateway({ config, backend, log: createLogger({ level: 'info', destination }) });
    started.url = await started.gateway.listen(0, '127.0.0.1');
  }, 60_000);
  afterAll(async () => {
    await started.gateway?.stop();
    dir.remove();
  });
  return started;
}

describe('sign-ins whose clients left while they waited for a password check', () => {
  const started = useGatewayWithLog({ ...NO_RATE_LIMITS });

  it('are not checked when their turn comes; the gateway logs no error and answers the next sign-in', async () => {
    const slow = await hashPassword('pw', SLOW);
    const before = scryptRuns();
    // every slot taken by a slow check of this test's own
    const holders = Array.from({ length: SCRYPT_CONCURRENCY }, () => verifyPassword('pw', slow));
    const clients = [new AbortController(), new AbortController(), new AbortController()];
    const sent = [
      fetch(`${started.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: basicAuthorization('alice', 'guess-graphql') },
        body: JSON.stringify({ query: '{ viewer { username } }' }),
        signal: clients[0]!.signal,
      }),
      fetch(`${started.url}/api/v1/apikey`, { headers: { authorization: basicAuthorization('alice', 'guess-rest') }, signal: clients[1]!.signal }),
      // a creation: authenticated before its body is read
      fetch(`${started.url}/api/v1/apikey`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: basicAuthorization('alice', 'guess-post') },
        body: JSON.stringify({ name: 'k' }),
        signal: clients[2]!.signal,
      }),
    ].map((request) => request.then(() => 'answered', () => 'left'));
    // all queued behind the slow checks (polled: the requests are in flight), then their clients leave
    while (scryptWaiting() < 3) await new Promise((resolve) => setTimeout(resolve, 5));
    for (const client of clients) client.abort();
    expect(await Promise.all(sent)).toEqual(['left', 'left', 'left']);
    await Promise.all(holders);
    // the slow checks ran; the three left behind did not
    expect(scryptRuns() - before).toBe(SCRYPT_CONCURRENCY);
    const next = await fetch(`${started.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: basicAuthorization('alice', 'alice-password') },
      body: JSON.stringify({ query: '{ viewer { username } }' }),
    });
    expect(await next.json()).toEqual({ data: { viewer: { username: 'alice' } } });
    const errors = started.lines.filter((line) => (JSON.parse(line) as { level: number }).level >= 50);
    expect(errors).toEqual([]);
  }, 30_000);
});

/**
 * Under the login limits (their default), the same credential sent twice from one address waits
 * for one sign-in of the limiter's: the second request's client is waiting for that check as much
 * as the first's, so the first's leaving must not skip it.
 */
describe('a sign-in sent twice from one address, under the login limits, whose first client leaves', () => {
  // the login limits at their default
  const started = useGatewayWithLog({ RATE_LIMIT_RPS: '0' });

  it('is checked for the second, which is answered; nothing is logged as an error', async () => {
    const slow = await hashPassword('pw', SLOW);
    const responses: ServerResponse[] = [];
    started.gateway.httpServer.on('request', (_req: IncomingMessage, res: ServerResponse) => responses.push(res));
    const holders = Array.from({ length: SCRYPT_CONCURRENCY }, () => verifyPassword('pw', slow));
    const signIn = (signal?: AbortSignal): Promise<Response> =>
      fetch(`${started.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: basicAuthorization('alice', 'alice-password') },
        body: JSON.stringify({ query: '{ viewer { username } }' }),
        ...(signal ? { signal } : {}),
      });
    const first = new AbortController();
    const left = signIn(first.signal).then(() => 'answered', () => 'left');
    while (scryptWaiting() < 1) await new Promise((resolve) => setTimeout(resolve, 5));
    const second = signIn();
    // the second has joined the first's sign-in once its request is seen (no await on the way)
    while (responses.length < 2) await new Promise((resolve) => setTimeout(resolve, 5));
    const closed = once(responses[0]!, 'close');
    first.abort();
    expect(await left).toBe('left');
    await closed;
    await Promise.all(holders);
    const answer = await second;
    expect(answer.status).toBe(200);
    expect(await answer.json()).toEqual({ data: { viewer: { username: 'alice' } } });
    const errors = started.lines.filter((line) => (JSON.parse(line) as { level: number }).level >= 50);
    expect(errors).toEqual([]);
  }, 30_000);
});
