import { once } from 'node:events';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuthorization } from '../../src/auth/authorization.js';
import { hashPassword, SCRYPT_CONCURRENCY, scryptRuns, scryptWaiting, verifyPassword } from '../../src/backends/embedded/keys/passwords.js';
import { SqliteKeyStore } from '../../src/backends/embedded/keys/sqliteStore.js';
import { MemoryCache } from '../../src/cache/memory.js';
import { loadConfig } from '../../src/config/env.js';
import { createGateway, type Gateway } from '../../src/http/server.js';
import { createLogger } from '../../src/logger.js';
import { openBackend } from '../../src/main.js';
import { embeddedWithUsers } from '../helpers/gateway.js';
import { NO_RATE_LIMITS } from '../helpers/processes.js';
import { startRestUpstream, type RestUpstream } from '../helpers/restUpstream.js';
import { tempDir } from '../helpers/stores.js';

/**
 * Sign-ins whose clients leave while their password check waits for a slot (a burst of them from
 * clients that time out): over real HTTP, on GraphQL and on the REST keys interface, the checks
 * are skipped when their turn comes, and nothing is logged as a failure of the gateway's.
 */
// About 1.5 s of a core a check (p 16 against the default's 3): long enough for the requests
// below to queue behind them and leave, on a machine that runs a second test suite.
const SLOW = { N: 2 ** 15, r: 8, p: 16 };
let slowHashed: Promise<string> | undefined;
/** A hash at the SLOW cost, made once for the file: only checking it need be slow. */
const slowHash = (): Promise<string> => (slowHashed ??= hashPassword('pw', SLOW));

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

/**
 * Two sign-ins with alice's password from one address: the second is sent once the first's check
 * is under way (`checking`) and joins it; then the first's client leaves. `left` runs once the
 * first's connection has closed on the server; the second's response is then awaited.
 */
async function secondAfterFirstLeaves(
  gateway: Gateway, url: string, steps: { checking: () => Promise<void>; left: () => Promise<void> },
): Promise<Response> {
  const responses: ServerResponse[] = [];
  const seen = (_req: IncomingMessage, res: ServerResponse): void => void responses.push(res);
  gateway.httpServer.on('request', seen);
  const signIn = (signal?: AbortSignal): Promise<Response> =>
    fetch(`${url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: basicAuthorization('alice', 'alice-password') },
      body: JSON.stringify({ query: '{ viewer { username } }' }),
      ...(signal ? { signal } : {}),
    });
  try {
    const first = new AbortController();
    const left = signIn(first.signal).then(() => 'answered', () => 'left');
    await steps.checking();
    const second = signIn();
    // the second has joined the first's sign-in once its request is seen (no await on the way)
    while (responses.length < 2) await new Promise((resolve) => setTimeout(resolve, 5));
    const closed = once(responses[0]!, 'close');
    first.abort();
    expect(await left).toBe('left');
    await closed;
    await steps.left();
    return await second;
  } finally {
    gateway.httpServer.off('request', seen);
  }
}

interface HoldingProxy {
  url: string;
  /** Calls held so far. */
  held(): number;
  /** Held calls closed by their sender (the gateway) before they were answered. */
  cut(): number;
  /** Forwards the held calls, and from now on every call at once. */
  release(): void;
  close(): void;
}

/**
 * A proxy in front of the key service that holds the calls made with `authorization` until
 * `release` (a slow sign-in upstream), and forwards everything else at once.
 */
async function startHoldingProxy(target: string, authorization: string): Promise<HoldingProxy> {
  const holding: (() => void)[] = [];
  let held = 0;
  let cut = 0;
  let released = false;
  const forward = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    if (req.headers.authorization === authorization && !released) {
      held += 1;
      res.once('close', () => {
        if (!res.writableFinished) cut += 1;
      });
      await new Promise<void>((resolve) => holding.push(resolve));
      if (res.destroyed) return;
    }
    const headers = Object.fromEntries(
      Object.entries(req.headers).filter(([name]) => !['host', 'connection', 'content-length', 'keep-alive'].includes(name)),
    ) as Record<string, string>;
    const response = await fetch(`${target}${req.url}`, { method: req.method, headers, body: chunks.length > 0 ? Buffer.concat(chunks) : null });
    const body = Buffer.from(await response.arrayBuffer());
    if (!res.destroyed) res.writeHead(response.status, { 'content-type': response.headers.get('content-type') ?? 'application/json' }).end(body);
  };
  const server = http.createServer((req, res) => void forward(req, res).catch(() => res.destroy()));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    held: () => held,
    cut: () => cut,
    release: () => {
      released = true;
      for (const go of holding.splice(0)) go();
    },
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

describe('sign-ins whose clients left while they waited for a password check', () => {
  const started = useGatewayWithLog({ ...NO_RATE_LIMITS });

  it('are not checked when their turn comes; the gateway logs no error and answers the next sign-in', async () => {
    const slow = await slowHash();
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
 * Under the login limits, guesses whose clients left while their checks were queued are skipped
 * as above, and still count against the limits as wrong passwords do: leaving before the turn
 * comes must not make a guess free.
 */
describe('sign-ins under the login limits whose clients left while they waited for a password check', () => {
  // two failures an address a minute: the two guesses below use them up for longer than the test takes
  const started = useGatewayWithLog({ RATE_LIMIT_RPS: '0', AUTH_FAILURES_PER_MINUTE: '2' });

  it('are not checked, yet count: the next sign-in from that address is refused before its check', async () => {
    const slow = await slowHash();
    const before = scryptRuns();
    const holders = Array.from({ length: SCRYPT_CONCURRENCY }, () => verifyPassword('pw', slow));
    const clients = [new AbortController(), new AbortController()];
    const sent = clients.map((client, i) =>
      fetch(`${started.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: basicAuthorization('alice', `guess-${i}`) },
        body: JSON.stringify({ query: '{ viewer { username } }' }),
        signal: client.signal,
      }).then(() => 'answered', () => 'left'),
    );
    while (scryptWaiting() < 2) await new Promise((resolve) => setTimeout(resolve, 5));
    for (const client of clients) client.abort();
    expect(await Promise.all(sent)).toEqual(['left', 'left']);
    await Promise.all(holders);
    // the skips are made as the holders' slots come free
    while (scryptWaiting() > 0) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(scryptRuns() - before).toBe(SCRYPT_CONCURRENCY);
    const next = await fetch(`${started.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: basicAuthorization('alice', 'alice-password') },
      body: JSON.stringify({ query: '{ viewer { username } }' }),
    });
    expect(next.status).toBe(429);
    expect(((await next.json()) as { errors: { extensions: { code: string } }[] }).errors[0]!.extensions.code).toBe('RATE_LIMITED');
    expect(scryptRuns() - before).toBe(SCRYPT_CONCURRENCY);
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
    const slow = await slowHash();
    const holders = Array.from({ length: SCRYPT_CONCURRENCY }, () => verifyPassword('pw', slow));
    const answer = await secondAfterFirstLeaves(started.gateway, started.url, {
      async checking() {
        while (scryptWaiting() < 1) await new Promise((resolve) => setTimeout(resolve, 5));
      },
      async left() {
        await Promise.all(holders);
      },
    });
    expect(answer.status).toBe(200);
    expect(await answer.json()).toEqual({ data: { viewer: { username: 'alice' } } });
    const errors = started.lines.filter((line) => (JSON.parse(line) as { level: number }).level >= 50);
    expect(errors).toEqual([]);
  }, 30_000);
});

/**
 * The same in REST mode, where the limiter's sign-in is an HTTP call to the key service: the first
 * client's leaving must not abort that call while the second still waits for it. Two processes over
 * real HTTP: an embedded gateway serving the key interface, and a REST-mode gateway (this one, for
 * its log and its server) in front of it, through a proxy that holds the sign-in's call until both
 * requests wait for it and the first has left.
 */
describe('a REST-mode sign-in sent twice from one address, under the login limits, whose first client leaves', () => {
  let upstream: RestUpstream;
  let proxy: HoldingProxy;
  let gateway: Gateway;
  let url: string;
  const lines: string[] = [];

  beforeAll(async () => {
    upstream = await startRestUpstream([{ username: 'alice', password: 'alice-password' }]);
    proxy = await startHoldingProxy(upstream.url, basicAuthorization('alice', 'alice-password'));
    // the login limits at their default
    const config = loadConfig({
      DATA_DIR: '/nonexistent',
      RATE_LIMIT_RPS: '0',
      BACKEND: 'rest',
      APIKEY_SERVICE_URL: proxy.url,
      RECS_SERVICE_URL: upstream.url,
      RECS_API_KEY: upstream.recsApiKey,
    });
    const cache = new MemoryCache();
    const destination = { write: (line: string) => lines.push(line) } as unknown as NodeJS.WritableStream;
    gateway = await createGateway({ config, backend: await openBackend(config, { cache }), cache, log: createLogger({ level: 'info', destination }) });
    url = await gateway.listen(0, '127.0.0.1');
  }, 120_000);
  afterAll(async () => {
    proxy?.release();
    await gateway?.stop().catch(() => undefined);
    proxy?.close();
    await upstream?.stop();
  });

  it('keeps the key service call for the second, which is answered; nothing is logged as an error', async () => {
    const answer = await secondAfterFirstLeaves(gateway, url, {
      async checking() {
        while (proxy.held() < 1) await new Promise((resolve) => setTimeout(resolve, 5));
      },
      // the first's signal is aborted as its connection closes: an abort of the call is made by now
      left: () => Promise.resolve(proxy.release()),
    });
    expect(answer.status).toBe(200);
    expect(await answer.json()).toEqual({ data: { viewer: { username: 'alice' } } });
    expect(proxy.cut()).toBe(0);
    const errors = lines.filter((line) => (JSON.parse(line) as { level: number }).level >= 50);
    expect(errors).toEqual([]);
  }, 30_000);
});
