import { once } from 'node:events';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Backend } from '../../src/ports/backend.js';
import { DEFAULT_SERVER_LIMITS } from '../../src/config/defaults.js';
import { ConfigError, loadConfig } from '../../src/config/env.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { raw, statusOf } from '../helpers/rawHttp.js';

/** The HTTP layer is the subject: a backend that is never asked anything. */
const idleBackend = (): Backend => ({
  keys: {} as Backend['keys'],
  recs: {} as Backend['recs'],
  ingest: {} as Backend['ingest'],
  check: () => Promise.resolve({ store: 'ok' }),
  close: () => Promise.resolve(),
});

/** A raw connection to the gateway: what it was sent back, and whether (and when) the server closed it. */
class RawClient {
  readonly socket: net.Socket;
  received = '';
  closedAt: number | null = null;
  readonly closed: Promise<void>;
  readonly openedAt = Date.now();

  /** `from`: the local address to connect from (127.0.0.2 and on are loopback too: another client address). */
  constructor(url: string, from?: string) {
    const { hostname, port } = new URL(url);
    this.socket = net.connect({ port: Number(port), host: hostname, ...(from ? { localAddress: from } : {}) });
    this.socket.setEncoding('utf8');
    this.socket.on('data', (chunk: string) => (this.received += chunk));
    this.socket.on('error', () => undefined);
    // not events.once: a reset ('error' first) would reject it
    this.closed = new Promise((resolve) =>
      this.socket.once('close', () => {
        this.closedAt = Date.now();
        resolve();
      }),
    );
  }

  /** Once connected, or closed (a connection the server resets may be gone before this is asked). */
  async connected(): Promise<this> {
    if (this.socket.connecting) await Promise.race([once(this.socket, 'connect'), this.closed]);
    return this;
  }

  /** Writes `text` a byte at a time, every `everyMs`, until it is all sent or the server closes. */
  async trickle(text: string, everyMs: number): Promise<void> {
    for (const byte of text) {
      if (this.closedAt !== null || this.socket.destroyed) return;
      this.socket.write(byte);
      await new Promise((resolve) => setTimeout(resolve, everyMs));
    }
  }

  /** Resolves once the server closed the connection, rejects after `ms`. */
  async closedWithin(ms: number): Promise<number> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`still open after ${ms} ms`)), ms);
    });
    try {
      await Promise.race([this.closed, timeout]);
    } finally {
      clearTimeout(timer);
    }
    return this.closedAt! - this.openedAt;
  }
}

/** One request on its own connection, answered: the gateway still serves while others hold sockets. */
async function served(url: string): Promise<void> {
  const health = await fetch(`${url}/healthz`, { headers: { connection: 'close' } });
  expect(health.status).toBe(200);
  expect(await health.json()).toEqual({ status: 'ok' });
  const graphql = await fetch(`${url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', connection: 'close' },
    body: JSON.stringify({ query: '{ __typename }' }),
  });
  expect(graphql.status).toBe(200);
  expect(await graphql.json()).toEqual({ data: { __typename: 'Query' } });
}

/**
 * What a timed-out client is told before the close: node's 408, which the server's clientError
 * handler currently answers as its generic 400.
 */
const TIMED_OUT = /^HTTP\/1\.1 (408|400) /;

describe('slow clients', () => {
  let gw: TestGateway;
  const HEADERS_TIMEOUT_MS = 400;
  const REQUEST_TIMEOUT_MS = 800;
  beforeAll(async () => {
    gw = await startTestGateway(idleBackend(), {
      HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS),
      REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS),
      KEEP_ALIVE_TIMEOUT_MS: '300',
    });
  });
  afterAll(() => gw.stop());

  // Node's defaults would keep each of these sockets 60 s (headers) or 300 s (a body); the bound
  // below is generous for a loaded machine and far below either.
  const BOUND_MS = 5_000;

  it('cuts off headers sent a byte at a time at HEADERS_TIMEOUT_MS, and serves others meanwhile', async () => {
    const slow = await Promise.all(Array.from({ length: 5 }, () => new RawClient(gw.url).connected()));
    const headers = 'GET /healthz HTTP/1.1\r\nhost: gateway\r\nx-padding: ' + 'a'.repeat(200) + '\r\n\r\n';
    for (const client of slow) void client.trickle(headers, 50);
    await served(gw.url);
    for (const client of slow) {
      const ms = await client.closedWithin(BOUND_MS);
      expect(ms).toBeGreaterThanOrEqual(HEADERS_TIMEOUT_MS - 50);
      expect(client.received).toMatch(TIMED_OUT);
    }
  });

  it("tells a client whose head is past node's 16 KB that it is too large (431), as node would", async () => {
    const head = await raw(gw.url, `GET /healthz HTTP/1.1\r\nhost: gateway\r\nauthorization: ${'a'.repeat(20_000)}\r\n\r\n`);
    expect(statusOf(head)).toBe(431);
    // with the code every error carries
    expect(JSON.parse(head.slice(head.indexOf('\r\n\r\n') + 4))).toEqual({ errors: [{ message: 'The request head is larger than 16 KB', extensions: { code: 'BAD_REQUEST' } }] });
    const malformed = await raw(gw.url, 'GET /healthz HTTP/1.1\r\nhost gateway\r\n\r\n');
    expect(statusOf(malformed)).toBe(400);
    expect(malformed).toContain('"code":"BAD_REQUEST"');
    await served(gw.url);
  });

  it('cuts off a body that never finishes at REQUEST_TIMEOUT_MS, and serves others meanwhile', async () => {
    const client = await new RawClient(gw.url).connected();
    client.socket.write(
      'POST /graphql HTTP/1.1\r\nhost: gateway\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{"query":',
    );
    // a byte now and then: never idle, never done
    void client.trickle(' '.repeat(200), 50);
    await served(gw.url);
    const ms = await client.closedWithin(BOUND_MS);
    expect(ms).toBeGreaterThanOrEqual(REQUEST_TIMEOUT_MS - 50);
    expect(client.received).toMatch(TIMED_OUT);
  });

  it('closes an idle keep-alive connection after KEEP_ALIVE_TIMEOUT_MS', async () => {
    const client = await new RawClient(gw.url).connected();
    client.socket.write('GET /healthz HTTP/1.1\r\nhost: gateway\r\n\r\n');
    // below node's default of 5 s
    await client.closedWithin(4_000);
    expect(client.received).toMatch(/^HTTP\/1\.1 200 /);
  });
});

describe('MAX_CONNECTIONS', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway(idleBackend(), { MAX_CONNECTIONS: '3' });
  });
  afterAll(() => gw.stop());

  /** A keep-alive connection the server has accepted: one request answered on it. */
  async function holding(): Promise<RawClient> {
    const client = await new RawClient(gw.url).connected();
    client.socket.write('GET /healthz HTTP/1.1\r\nhost: gateway\r\n\r\n');
    for (let i = 0; i < 200 && !client.received.includes('{"status":"ok"}'); i++) await new Promise((r) => setTimeout(r, 10));
    expect(client.received).toContain('{"status":"ok"}');
    return client;
  }

  it('closes connections past the cap unanswered, and takes them again once one is gone', async () => {
    const held = [await holding(), await holding(), await holding()];
    const extra = await new RawClient(gw.url).connected();
    extra.socket.write('GET /healthz HTTP/1.1\r\nhost: gateway\r\n\r\n');
    await extra.closedWithin(5_000);
    expect(extra.received).toBe('');

    held[0]!.socket.destroy();
    await held[0]!.closed;
    // the server sees the close a moment after the client: a few tries
    let again: RawClient | undefined;
    for (let i = 0; i < 50 && again === undefined; i++) {
      const candidate = await new RawClient(gw.url).connected();
      candidate.socket.write('GET /healthz HTTP/1.1\r\nhost: gateway\r\nconnection: close\r\n\r\n');
      await candidate.closedWithin(5_000);
      if (candidate.received.includes('{"status":"ok"}')) again = candidate;
      else await new Promise((r) => setTimeout(r, 20));
    }
    expect(again).toBeDefined();
    for (const client of held) client.socket.destroy();
  });
});

describe('one address holding connections, with the default limits', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway(idleBackend());
  });
  afterAll(() => gw.stop());

  const { maxConnections, maxConnectionsPerAddress, headersTimeoutMs } = DEFAULT_SERVER_LIMITS;

  it("closes an address's connections past its share at once, serves another address, and times out a silent one", async () => {
    // a client of its own that sends nothing: its 408 comes at HEADERS_TIMEOUT_MS
    const silent = await new RawClient(gw.url, '127.0.0.3').connected();
    // the probe's 1,100 sockets from one address, each with half a request head
    const flood = await Promise.all(Array.from({ length: maxConnections + 76 }, () => new RawClient(gw.url).connected()));
    const closed = (): number => flood.filter((client) => client.closedAt !== null).length;
    try {
      for (const client of flood) client.socket.write('GET /healthz HTTP/1.1\r\nhost: gate');
      // all but the address's share are closed unanswered, long before any timeout
      await expect.poll(closed, { timeout: 5_000 }).toBe(flood.length - maxConnectionsPerAddress);
      expect(flood.filter((client) => client.closedAt !== null && client.received !== '')).toEqual([]);
      // a new one from there is refused too; from another address, answered
      const more = await new RawClient(gw.url).connected();
      await more.closedWithin(5_000);
      expect(more.received).toBe('');
      const other = await new RawClient(gw.url, '127.0.0.2').connected();
      other.socket.write('GET /healthz HTTP/1.1\r\nhost: gateway\r\nconnection: close\r\n\r\n');
      await other.closedWithin(5_000);
      expect(other.received).toMatch(/^HTTP\/1\.1 200 [\s\S]*\{"status":"ok"\}$/);

      // node looks for expired heads every second at most: up to a second late, and a loaded
      // machine's timers later still, but well before the 10 s the default was
      const ms = await silent.closedWithin(headersTimeoutMs + 4_000);
      expect(ms).toBeGreaterThanOrEqual(headersTimeoutMs - 100);
      expect(ms).toBeLessThan(headersTimeoutMs + 3_000);
      expect(silent.received).toMatch(/^HTTP\/1\.1 408 /);
      // the half heads the address kept open are timed out alike
      const timedOut = (): number => flood.filter((client) => /^HTTP\/1\.1 408 /.test(client.received)).length;
      await expect.poll(timedOut, { timeout: 4_000 }).toBe(maxConnectionsPerAddress);
    } finally {
      for (const client of [silent, ...flood]) client.socket.destroy();
    }
  }, 30_000);
});

describe('MAX_CONNECTIONS_PER_ADDRESS behind a proxy', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway(idleBackend(), { MAX_CONNECTIONS_PER_ADDRESS: '2', TRUST_PROXY: '127.0.0.4' });
  });
  afterAll(() => gw.stop());

  /** Three connections from `from` held open at once; whether each got its answer. */
  async function threeFrom(from: string): Promise<boolean[]> {
    const clients = await Promise.all([1, 2, 3].map(() => new RawClient(gw.url, from).connected()));
    try {
      for (const client of clients) client.socket.write('GET /healthz HTTP/1.1\r\nhost: gateway\r\n\r\n');
      await expect.poll(() => clients.every((c) => c.closedAt !== null || c.received.includes('{"status":"ok"}')), { timeout: 5_000 }).toBe(true);
      return clients.map((c) => c.received.includes('{"status":"ok"}'));
    } finally {
      for (const client of clients) client.socket.destroy();
    }
  }

  it("caps a client's own connections, never a trusted proxy's, which carries everyone's", async () => {
    expect((await threeFrom('127.0.0.5')).filter(Boolean)).toHaveLength(2);
    expect(await threeFrom('127.0.0.4')).toEqual([true, true, true]);
  });
});

describe('the client limits in the configuration', () => {
  it('defaults to 5 s for headers, 30 s for a request, 5 s keep-alive, 1024 connections, 128 and a MiB lingered a second an address', () => {
    expect(loadConfig({}).server).toEqual(DEFAULT_SERVER_LIMITS);
    expect(DEFAULT_SERVER_LIMITS).toEqual({
      headersTimeoutMs: 5_000,
      requestTimeoutMs: 30_000,
      keepAliveTimeoutMs: 5_000,
      maxConnections: 1024,
      maxConnectionsPerAddress: 128,
      lingerBytesPerSecond: 1024 * 1024,
    });
    expect(loadConfig({ MAX_CONNECTIONS_PER_ADDRESS: '0' }).server.maxConnectionsPerAddress).toBe(0);
    expect(loadConfig({ LINGER_BYTES_PER_SECOND: '0' }).server.lingerBytesPerSecond).toBe(0);
  });

  it('refuses a headers timeout longer than the request timeout, and bad numbers', () => {
    expect(() => loadConfig({ HEADERS_TIMEOUT_MS: '20000', REQUEST_TIMEOUT_MS: '10000' })).toThrow(
      'HEADERS_TIMEOUT_MS (20000) must not be more than REQUEST_TIMEOUT_MS (10000)',
    );
    expect(() => loadConfig({ MAX_CONNECTIONS: '-1' })).toThrow(ConfigError);
    expect(loadConfig({ MAX_CONNECTIONS: '0' }).server.maxConnections).toBe(0);
  });
});
