import type { ServerResponse } from 'node:http';
import path from 'node:path';
import { basicAuthorization } from '../../src/auth/authorization.js';
import { openBackend } from '../../src/main.js';
import type { Backend as OpenedBackend } from '../../src/ports/backend.js';
import { openEmbeddedRecs } from '../../src/backends/embedded/openRecs.js';
import { SqliteKeyStore } from '../../src/backends/embedded/keys/sqliteStore.js';
import { addUser } from '../../src/backends/embedded/keys/users.js';
import { openCache } from '../../src/cache/index.js';
import type { SharedCache } from '../../src/ports/cache.js';
import { loadConfig } from '../../src/config/env.js';
import { createGateway, type Gateway } from '../../src/http/server.js';
import { NO_RATE_LIMITS, startServe, type ServeProcess } from './processes.js';
import { TEST_COST, tempDir } from './stores.js';
import { REDIS_URL } from './redis.js';
import { startServer, type RecordedRequest, type TestServer } from '../rest/helpers.js';

/** A smartphone of the demo shop, with recommendations of both kinds. */
export const PHONE = 31000005;
/** Demo item ids start here, with gaps: most ids above it are unknown. */
export const FIRST_ITEM = 31000001;

/** The first `n` item ids of the demo shop (the same in every process: the demo is deterministic). */
export async function demoItemIds(n: number): Promise<number[]> {
  const recs = await openEmbeddedRecs({ dataDir: null });
  const ids = [...recs.catalog.values()].map((item) => item.itemId).sort((a, b) => a - b);
  await recs.close();
  return ids.slice(0, n);
}

export interface UpstreamUser {
  username: string;
  password: string;
  basic: string;
  /** A key created for the user on the upstream. */
  key: string;
  /** The user's id on the upstream (from the key listing). */
  id: string;
}

/** An "upstream": a gateway process serving both REST interfaces from its embedded backend. */
export interface Upstream {
  url: string;
  process: ServeProcess;
  /** The key the gateway under test uses for the recommendation service (RECS_API_KEY). */
  gatewayKey: string;
  alice: UpstreamUser;
  bob: UpstreamUser;
  /** Basic credentials of the administrator `root` (no key). */
  adminBasic: string;
  /** Its DATA_DIR, for the command line's `user` commands. */
  dataDir: string;
  stop(): Promise<void>;
}

async function createKey(url: string, authorization: string, name?: string): Promise<{ id: string; key: string }> {
  const response = await fetch(`${url}/api/v1/apikey`, {
    method: 'POST',
    headers: { authorization, 'content-type': 'application/json' },
    body: JSON.stringify(name ? { name } : {}),
  });
  if (response.status !== 200) throw new Error(`create key: HTTP ${response.status} ${await response.text()}`);
  return (await response.json()) as { id: string; key: string };
}

/**
 * Starts `recs-gateway serve` on a temp DATA_DIR with users alice, bob and gateway (made in the
 * SQLite file before the start, with cheap hashes), and a key for each; and the administrator root.
 */
export async function startUpstream(): Promise<Upstream> {
  const { dir, remove } = tempDir('recs-reliability-upstream-');
  const store = new SqliteKeyStore(path.join(dir, 'keys.db'));
  const passwords = { alice: 'alice-password', bob: 'bob-password', gateway: 'gateway-password' };
  for (const [username, password] of Object.entries(passwords)) await addUser(store, { username, password }, TEST_COST);
  await addUser(store, { username: 'root', password: 'root-password', isAdmin: true }, TEST_COST);
  await store.close();
  const serve = await startServe({ DATA_DIR: dir, REDIS_URL: '' }).catch((error: unknown) => {
    remove();
    throw error;
  });
  const user = async (username: 'alice' | 'bob'): Promise<UpstreamUser> => {
    const basic = basicAuthorization(username, passwords[username]);
    const { key } = await createKey(serve.url, basic);
    const listed = (await (await fetch(`${serve.url}/api/v1/apikey`, { headers: { authorization: basic } })).json()) as { userId: string }[];
    return { username, password: passwords[username], basic, key, id: listed[0]!.userId };
  };
  const gatewayKey = (await createKey(serve.url, basicAuthorization('gateway', passwords.gateway))).key;
  return {
    url: serve.url,
    process: serve,
    gatewayKey,
    alice: await user('alice'),
    bob: await user('bob'),
    adminBasic: basicAuthorization('root', 'root-password'),
    dataDir: dir,
    async stop() {
      await serve.stop();
      remove();
    },
  };
}

/** The environment of `recs-gateway serve` in REST mode in front of `upstream`, on the machine's Redis under `prefix`. */
export function restServeEnv(upstream: Upstream, prefix: string): Record<string, string> {
  return {
    BACKEND: 'rest',
    APIKEY_SERVICE_URL: upstream.url,
    RECS_SERVICE_URL: upstream.url,
    RECS_API_KEY: upstream.gatewayKey,
    REDIS_URL,
    REDIS_KEY_PREFIX: prefix,
  };
}

/** What a FaultProxy does with the requests it receives. */
export type Fault =
  | { kind: 'pass' }
  /** Holds the request forever: no status, no body. */
  | { kind: 'blackhole' }
  /** Answers this status itself, with the upstream's error body shape; the upstream sees nothing. */
  | { kind: 'status'; status: number; headers?: Record<string, string> }
  /** Closes the connection on receipt: no status at all (ECONNRESET or "other side closed"). */
  | { kind: 'reset' }
  /** Forwards after a delay. */
  | { kind: 'delay'; ms: number }
  /** Sends the status and headers at once, then the body one byte every `everyMs`. */
  | { kind: 'trickle'; everyMs: number }
  /** Another fault for the requests `match` picks; the others pass. */
  | { kind: 'some'; match: (req: RecordedRequest) => boolean; fault: Fault };

/**
 * An HTTP proxy of the test's own on loopback in front of the upstream: it counts what reaches it
 * (by method and path) and injects faults, so the count of calls the upstream would see is exact.
 */
export interface FaultProxy {
  url: string;
  fault: Fault;
  /** Every request received, in arrival order. */
  requests: RecordedRequest[];
  /** Requests received so far whose method is `method` (any when omitted). */
  count(method?: string, pathPrefix?: string): number;
  close(): Promise<void>;
}

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'host', 'content-length', 'upgrade']);

async function forward(target: string, req: RecordedRequest, res: ServerResponse): Promise<void> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined && !HOP_BY_HOP.has(name)) headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  const response = await fetch(`${target}${req.url}`, {
    method: req.method,
    headers,
    body: req.method === 'GET' || req.method === 'HEAD' ? null : req.body,
  });
  const body = Buffer.from(await response.arrayBuffer());
  const out: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    if (!HOP_BY_HOP.has(name) && name !== 'content-encoding') out[name] = value;
  });
  res.writeHead(response.status, { ...out, 'content-length': String(body.length) });
  res.end(body);
}

export async function startFaultProxy(target: string, fault: Fault = { kind: 'pass' }): Promise<FaultProxy> {
  const proxy: { fault: Fault } = { fault };
  const server: TestServer = await startServer(async (req, res) => {
    let now = proxy.fault;
    while (now.kind === 'some') now = now.match(req) ? now.fault : { kind: 'pass' };
    switch (now.kind) {
      case 'pass':
        return forward(target, req, res);
      case 'blackhole':
        return; // close() destroys the socket
      case 'reset':
        res.socket?.destroy();
        return;
      case 'status': {
        const body = JSON.stringify({ errors: [{ code: now.status, message: 'Service Unavailable' }] });
        res.writeHead(now.status, { 'content-type': 'application/json', 'content-length': String(body.length), ...now.headers });
        res.end(body);
        return;
      }
      case 'delay':
        await new Promise((resolve) => setTimeout(resolve, now.ms));
        if (res.destroyed) return;
        return forward(target, req, res);
      case 'trickle': {
        res.writeHead(200, { 'content-type': 'application/json' });
        const timer = setInterval(() => (res.destroyed ? clearInterval(timer) : res.write(' ')), now.everyMs);
        res.on('close', () => clearInterval(timer));
        return;
      }
    }
  });
  return {
    url: server.url,
    get fault() {
      return proxy.fault;
    },
    set fault(value: Fault) {
      proxy.fault = value;
    },
    requests: server.requests,
    count: (method, pathPrefix) =>
      server.requests.filter((r) => (method === undefined || r.method === method) && (pathPrefix === undefined || r.url.startsWith(pathPrefix))).length,
    close: () => server.close(),
  };
}

/** The gateway under test in REST mode, in-process, so its cache and breakers can be read. */
export interface RestGateway {
  url: string;
  gateway: Gateway;
  backend: OpenedBackend;
  cache: SharedCache;
  /** POSTs a GraphQL operation and times it. */
  gql(query: string, variables?: Record<string, unknown>, authorization?: string): Promise<TimedResponse>;
  stop(): Promise<void>;
}

export interface TimedResponse {
  status: number;
  headers: Headers;
  ms: number;
  body: { data?: Record<string, unknown> | null; errors?: { message: string; extensions?: { code?: string } }[] };
}

export interface RestGatewayOptions {
  keysUrl: string;
  recsUrl: string;
  recsApiKey: string;
  /** Further environment (REDIS_URL, REQUEST_DEADLINE_MS, BREAKER_*, ...). */
  env?: Record<string, string>;
  /** Wraps the cache the gateway is given (to time it, say). */
  wrapCache?: (cache: SharedCache) => SharedCache;
  /** The breakers' clock (a ManualClock's `now`); default Date.now. */
  now?: () => number;
  /**
   * How long a Redis command may take before it counts as a miss; default 100 ms, as served. A
   * test that counts upstream calls gives it longer: on a busy machine the event loop alone can lag
   * 100 ms, and a miss then backs the cache off for a second, which would put the machine's load
   * into the count.
   */
  redisCommandTimeoutMs?: number;
}

/**
 * A SharedCache that times every call of the one it wraps: what the cache costs a request,
 * measured where it is spent, free of the noise of the rest of the request on a busy machine.
 */
export class TimedCache implements SharedCache {
  /** Milliseconds of each getMany and setMany call, in order. */
  readonly times: number[] = [];
  constructor(private readonly inner: SharedCache) {}
  get stats() {
    return this.inner.stats;
  }
  private async timed<T>(call: () => Promise<T>): Promise<T> {
    const started = performance.now();
    try {
      return await call();
    } finally {
      this.times.push(performance.now() - started);
    }
  }
  getMany(keys: readonly string[]) {
    return this.timed(() => this.inner.getMany(keys));
  }
  setMany(entries: Parameters<SharedCache['setMany']>[0]) {
    return this.timed(() => this.inner.setMany(entries));
  }
  delete(keys: readonly string[]) {
    return this.inner.delete(keys);
  }
  check() {
    return this.inner.check();
  }
  close() {
    return this.inner.close();
  }
}

export async function startRestGateway(options: RestGatewayOptions): Promise<RestGateway> {
  const config = loadConfig({
    BACKEND: 'rest',
    APIKEY_SERVICE_URL: options.keysUrl,
    RECS_SERVICE_URL: options.recsUrl,
    RECS_API_KEY: options.recsApiKey,
    DATA_DIR: '/nonexistent',
    ...NO_RATE_LIMITS,
    ...options.env,
  });
  const cache = (options.wrapCache ?? ((c: SharedCache) => c))(
    openCache(config, options.redisCommandTimeoutMs === undefined ? {} : { commandTimeoutMs: options.redisCommandTimeoutMs }),
  );
  const backend = await openBackend(config, { cache, ...(options.now ? { now: options.now } : {}) });
  const gateway = await createGateway({ config, backend, cache });
  const url = await gateway.listen(0, '127.0.0.1');
  return {
    url,
    gateway,
    backend,
    cache,
    gql: (query, variables, authorization) => timedGql(url, query, variables, authorization),
    stop: () => gateway.stop(),
  };
}

/**
 * Waits until the cache answers. Right after a start ioredis is still connecting, and what is
 * fetched meanwhile is not stored: a second identical request would rightly go upstream again.
 */
export async function cacheReady(cache: SharedCache, timeoutMs = 5000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while ((await cache.check()) !== 'ok') {
    if (Date.now() > until) throw new Error('the cache did not become ready');
    await sleep(20);
  }
}

export async function timedGql(
  url: string,
  query: string,
  variables: Record<string, unknown> = {},
  authorization?: string,
): Promise<TimedResponse> {
  const started = performance.now();
  const response = await fetch(`${url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) },
    body: JSON.stringify({ query, variables }),
  });
  const body = (await response.json()) as TimedResponse['body'];
  return { status: response.status, headers: response.headers, ms: performance.now() - started, body };
}

/** The q-quantile (0..1) of a sample, nearest rank. */
export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}

/** One figure the suite measured, printed so a CI log carries it (grep "[reliability]"). */
export function report(what: string, figures: Record<string, number | string>): void {
  const text = Object.entries(figures)
    .map(([name, value]) => `${name}=${typeof value === 'number' ? Number(value.toFixed(2)) : value}`)
    .join(' ');
  console.info(`[reliability] ${what}: ${text}`);
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
