import { afterEach, describe, expect, it } from 'vitest';
import type { ServerResponse } from 'node:http';
import { createServer } from 'node:net';
import type { AddressInfo, Server, Socket } from 'node:net';
import { createRestBackend } from '../../../src/backends/rest/index.js';
import type { RestBackend, RestBackendOptions } from '../../../src/backends/rest/index.js';
import { GatewayError } from '../../../src/errors.js';
import { ManualClock } from '../../helpers/clock.js';
import { itemRecord, sendJson, startServer } from '../../rest/helpers.js';
import type { RecordedRequest, TestServer } from '../../rest/helpers.js';

const started: { close(): Promise<void> }[] = [];
afterEach(async () => {
  while (started.length > 0) await started.pop()?.close();
});

async function upstream(answer: (req: RecordedRequest, res: ServerResponse) => void): Promise<TestServer> {
  const server = await startServer(answer);
  started.push(server);
  return server;
}

function backend(url: string, options: Partial<RestBackendOptions> = {}): RestBackend {
  const b = createRestBackend({
    apiKeyServiceUrl: url, recsServiceUrl: url, recsApiKey: 'k',
    retryBaseDelayMs: 1, retryMaxDelayMs: 5, ...options,
  });
  // closed before the servers: they were started first
  started.push(b);
  return b;
}

async function codeOf(promise: Promise<unknown>): Promise<string> {
  const error = await promise.then(() => null, (e: unknown) => e);
  expect(error).toBeInstanceOf(GatewayError);
  return (error as GatewayError).code;
}

const BASIC = `Basic ${Buffer.from('alice:pw').toString('base64')}`;

describe('retries', () => {
  it('retries a GET after a 503 and succeeds', async () => {
    const server = await upstream((_req, res) =>
      server.requests.length < 3 ? sendJson(res, 503, { errors: [{ code: 503, message: 'Service Unavailable' }] }) : sendJson(res, 200, [itemRecord(2)]),
    );
    const b = backend(server.url);
    const list = await b.recs.recommend('POST_BROWSE', 1);
    expect(list.entries.map((e) => e.itemId)).toEqual([2]);
    expect(server.requests).toHaveLength(3);
  });

  it('keeps a 503 storm within the retry budget: upstream calls <= 1.2 x client calls + 3', async () => {
    const server = await upstream((_req, res) => sendJson(res, 503, { errors: [{ code: 503, message: 'Service Unavailable' }] }));
    const b = backend(server.url, { breakerFailures: 1_000_000 });
    const calls = 100;
    for (let i = 0; i < calls; i++) expect(await codeOf(b.recs.recommend('POST_BROWSE', 1))).toBe('UPSTREAM_UNAVAILABLE');
    expect(server.requests.length).toBeGreaterThan(calls);
    expect(server.requests.length).toBeLessThanOrEqual(1.2 * calls + 3);
  });

  it('honours Retry-After on a 429, and gives up when it is beyond the cap', async () => {
    let first = 0;
    const server = await upstream((_req, res) => {
      if (server.requests.length === 1) {
        first = Date.now();
        return sendJson(res, 429, { errors: [{ code: 429, message: 'Too Many Requests' }] }, { 'retry-after': '1' });
      }
      return sendJson(res, 200, [itemRecord(2)]);
    });
    const b = backend(server.url);
    await b.recs.recommend('POST_BROWSE', 1);
    expect(server.requests).toHaveLength(2);
    expect(Date.now() - first).toBeGreaterThanOrEqual(950);

    const slow = await upstream((_req, res) => sendJson(res, 429, { errors: [{ code: 429, message: 'Too Many Requests' }] }, { 'retry-after': '60' }));
    const b2 = backend(slow.url);
    const error = await b2.recs.recommend('POST_BROWSE', 1).catch((e: unknown) => e as GatewayError);
    expect(error).toMatchObject({ code: 'RATE_LIMITED', retryAfter: 60 });
    expect(slow.requests).toHaveLength(1);
  });

  it('retries a GET at most twice', async () => {
    const server = await upstream((_req, res) => sendJson(res, 502, {}));
    const b = backend(server.url);
    expect(await codeOf(b.recs.getItems([1, 2]))).toBe('UPSTREAM_UNAVAILABLE');
    expect(server.requests).toHaveLength(3);
  });

  it('never retries POST or DELETE', async () => {
    const server = await upstream((req, res) =>
      req.method === 'GET' ? sendJson(res, 200, [{ id: 'k1', userId: 'u1', name: 'a' }]) : sendJson(res, 503, {}),
    );
    const b = backend(server.url);
    const principal = await b.keys.authenticate(BASIC);
    expect(await codeOf(b.keys.createKey(principal, { name: 'abc' }))).toBe('UPSTREAM_UNAVAILABLE');
    expect(await codeOf(b.keys.deleteKey(principal, '00000000-0000-4000-8000-000000000000'))).toBe('UPSTREAM_UNAVAILABLE');
    expect(server.requests.map((r) => r.method)).toEqual(['GET', 'POST', 'DELETE']);
  });

  it('retries a GET after a connection reset, never a POST', async () => {
    const server = await upstream((req, res) => {
      if (server.requests.length === 1 || req.method === 'POST') return res.socket?.destroy();
      return sendJson(res, 200, [{ id: 'k1', userId: 'u1', name: 'a' }]);
    });
    const b = backend(server.url);
    const principal = await b.keys.authenticate(BASIC);
    expect(principal.user.id).toBe('u1');
    expect(server.requests).toHaveLength(2);
    expect(await codeOf(b.keys.createKey(principal, {}))).toBe('UPSTREAM_UNAVAILABLE');
    expect(server.requests.filter((r) => r.method === 'POST')).toHaveLength(1);
  });
});

describe('circuit breaker', () => {
  it('opens after N failures, rejects fast without calling, lets one probe through, closes on success', async () => {
    let healthy = false;
    const server = await upstream((_req, res) => (healthy ? sendJson(res, 200, [itemRecord(2)]) : sendJson(res, 500, {})));
    // the breaker's time moves by hand: on a busy machine the 20 rejections below may well take
    // longer than the open period, and a probe would slip through in the middle of them
    const clock = new ManualClock();
    const b = backend(server.url, { breakerFailures: 3, breakerOpenMs: 200, retries: 0, now: clock.now });
    for (let i = 0; i < 3; i++) await codeOf(b.recs.recommend('POST_BROWSE', 1));
    expect(server.requests).toHaveLength(3);
    expect(b.breakerState().recommendations).toBe('open');
    expect(b.breakerState().apikeys).toBe('closed');

    const durations: number[] = [];
    for (let i = 0; i < 20; i++) {
      const start = performance.now();
      const error = await b.recs.recommend('POST_BROWSE', 1).catch((e: unknown) => e as GatewayError);
      durations.push(performance.now() - start);
      expect(error).toMatchObject({ code: 'UPSTREAM_UNAVAILABLE' });
      expect((error as GatewayError).message).toContain('recommendations');
    }
    // the median, so that GC pauses and a busy 2-core test machine do not decide (the tail is
    // measured and reported by test/backends/rest/upstreamFaults.processes.test.ts)
    expect(durations.sort((x, y) => x - y)[10]).toBeLessThan(5);
    expect(server.requests).toHaveLength(3);

    clock.advance(199);
    expect(b.breakerState().recommendations).toBe('open');
    clock.advance(21);
    expect(b.breakerState().recommendations).toBe('half-open');
    // the probe fails: open again
    await codeOf(b.recs.recommend('POST_BROWSE', 1));
    expect(server.requests).toHaveLength(4);
    expect(b.breakerState().recommendations).toBe('open');

    clock.advance(220);
    healthy = true;
    // one probe at a time: of two concurrent requests, one is rejected without a call
    const [a, c] = await Promise.allSettled([b.recs.recommend('POST_BROWSE', 1), b.recs.recommend('POST_BROWSE', 1)]);
    expect([a.status, c.status].sort()).toEqual(['fulfilled', 'rejected']);
    expect(server.requests).toHaveLength(5);
    expect(b.breakerState().recommendations).toBe('closed');
    expect((await b.recs.recommend('POST_BROWSE', 1)).entries).toHaveLength(1);
  });

  it('does not count 4xx answers as failures', async () => {
    const server = await upstream((_req, res) => sendJson(res, 400, { errors: [{ code: 4002, message: 'Invalid itemId' }] }));
    const b = backend(server.url, { breakerFailures: 2 });
    for (let i = 0; i < 5; i++) expect(await codeOf(b.recs.recommend('POST_BROWSE', 1))).toBe('NOT_FOUND');
    expect(b.breakerState().recommendations).toBe('closed');
    expect(server.requests).toHaveLength(5);
  });
});

describe('timeouts and deadlines', () => {
  it('gives up on a blackholed upstream at the deadline given by AbortSignal.timeout', async () => {
    const server = await upstream(() => undefined);
    const b = backend(server.url, { headersTimeoutMs: 60_000 });
    const start = Date.now();
    const error = await b.recs.recommend('POST_BROWSE', 1, { signal: AbortSignal.timeout(300) }).catch((e: unknown) => e as GatewayError);
    expect(error).toMatchObject({ code: 'UPSTREAM_UNAVAILABLE' });
    expect((error as GatewayError).message).toContain('deadline');
    expect(Date.now() - start).toBeLessThan(1000);
    expect(server.requests).toHaveLength(1);
  });

  it('gives up on a blackholed upstream at the headers timeout, and does not retry a timeout', async () => {
    const server = await upstream(() => undefined);
    const b = backend(server.url, { headersTimeoutMs: 200 });
    const start = Date.now();
    expect(await codeOf(b.recs.getItems([1]))).toBe('UPSTREAM_UNAVAILABLE');
    expect(Date.now() - start).toBeLessThan(1500);
    expect(server.requests).toHaveLength(1);
  });

  it('gives up on a body that stalls half-way, and the pool still serves the next request', async () => {
    const server = await upstream((_req, res) => {
      if (server.requests.length === 1) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('[{"itemId":');
        return;
      }
      sendJson(res, 200, [itemRecord(2)]);
    });
    const b = backend(server.url, { bodyTimeoutMs: 200 });
    expect(await codeOf(b.recs.recommend('POST_BROWSE', 1))).toBe('UPSTREAM_UNAVAILABLE');
    expect((await b.recs.recommend('POST_BROWSE', 1)).entries).toHaveLength(1);
  });

  it('refuses a body past maxResponseBytes without reading it all, and the pool still serves the next request', async () => {
    const chunk = `"${'x'.repeat(16 * 1024)}",`;
    let written = 0;
    const server = await upstream((_req, res) => {
      if (server.requests.length > 1) return sendJson(res, 200, [itemRecord(2)]);
      // up to 32 MiB in chunks of 16 KiB, each once the last was taken: more than loopback's
      // socket buffers hold, and far more than the 64 KiB allowed
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('[');
      const more = (): void => {
        if (res.destroyed) return;
        if (written++ === 2048) return void res.end('1]');
        if (res.write(chunk)) setImmediate(more);
        else res.once('drain', more);
      };
      more();
    });
    const b = backend(server.url, { maxResponseBytes: 64 * 1024, retries: 0 });
    const error = await b.recs.recommend('POST_BROWSE', 1).catch((e: unknown) => e as GatewayError);
    expect(error).toMatchObject({ code: 'UPSTREAM_UNAVAILABLE' });
    expect((error as GatewayError).message).toContain('larger than 65536 bytes');
    expect(written).toBeLessThan(2048);
    expect((await b.recs.recommend('POST_BROWSE', 1)).entries).toHaveLength(1);
  });

  it('reads a body that arrives in many chunks, whole and in order', async () => {
    const records = Array.from({ length: 10 }, (_, i) => itemRecord(100 + i, { longDescription: 'é'.repeat(20_000) }));
    const text = JSON.stringify(records);
    const server = await upstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const bytes = Buffer.from(text);
      // split inside multi-byte characters too: the text is decoded once, from all the bytes
      const step = 4_097;
      const next = (offset: number): void => {
        if (offset >= bytes.length) return void res.end();
        res.write(bytes.subarray(offset, offset + step));
        setImmediate(() => next(offset + step));
      };
      next(0);
    });
    const list = await backend(server.url).recs.recommend('POST_BROWSE', 1);
    expect(list.items?.map((item) => item.itemId)).toEqual(records.map((r) => r.itemId));
    expect(list.items?.every((item) => item.longDescription === 'é'.repeat(20_000))).toBe(true);
  });

  it('fails at connect to an address that accepts nothing, then retries within the budget', async () => {
    // a port that was just freed: nothing listens there
    const probe: Server = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const { port } = probe.address() as AddressInfo;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const b = backend(`http://127.0.0.1:${port}`);
    const error = await b.recs.recommend('POST_BROWSE', 1).catch((e: unknown) => e as GatewayError);
    expect(error).toMatchObject({ code: 'UPSTREAM_UNAVAILABLE' });
    expect((error as GatewayError).message).toMatch(/recommendations.*connection refused/);
  });

  it('check() reports each upstream', async () => {
    const server = await upstream((_req, res) => sendJson(res, 403, {}));
    const sockets = new Set<Socket>();
    const blackhole: Server = createServer((socket) => sockets.add(socket));
    await new Promise<void>((resolve) => blackhole.listen(0, '127.0.0.1', resolve));
    started.push({
      close: () => new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        blackhole.close(() => resolve());
      }),
    });
    const b = createRestBackend({
      apiKeyServiceUrl: server.url, recsServiceUrl: `http://127.0.0.1:${(blackhole.address() as AddressInfo).port}`, recsApiKey: 'k',
    });
    started.push(b);
    const result = await b.check();
    expect(result.apikeys).toBe('ok');
    expect(result.recommendations).not.toBe('ok');
  });
});
