import { spawn } from 'node:child_process';
import { once } from 'node:events';
import type { IncomingMessage } from 'node:http';
import { connect, type Socket } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuthorization } from '../../src/auth/authorization.js';
import { LINGER_MAX_BYTES, LINGER_MAX_MS } from '../../src/http/linger.js';
import { embeddedWithUsers, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { storeKinds } from '../helpers/stores.js';
import type { Sending, Sent } from './fixtures/sendingClient.js';

// A body refused before it was read (413, 415, a 401 before the body) is answered with
// `Connection: close`; the rest of the body is then read and thrown away for a bounded while
// (src/http/linger.ts) before the connection closes, so that a client still sending reads its
// answer rather than a reset. Real sockets against a gateway on loopback, every test bounded in
// requests and seconds.

const MiB = 1024 * 1024;
/** How many times each client below tries: before lingering, 20 tries lost some answers to a reset. */
const ATTEMPTS = 20;

const FIXTURE = new URL('./fixtures/sendingClient.ts', import.meta.url).pathname;

/** Whether `text` holds a whole HTTP/1.1 answer with a Content-Length body. */
function wholeAnswer(text: string): boolean {
  const end = text.indexOf('\r\n\r\n');
  if (end < 0) return false;
  const length = /\r\ncontent-length: *(\d+)/i.exec(text.slice(0, end))?.[1];
  return length !== undefined && text.length - (end + 4) >= Number(length);
}

/**
 * What clients like `options` got, each on a raw socket in a process of their own
 * (fixtures/sendingClient.ts): `tries` one after another, `together` at once each time.
 */
async function sendFromElsewhere(url: string, options: Sending & { tries?: number; together?: number }): Promise<Sent[]> {
  const child = spawn(process.execPath, ['--import', 'tsx', FIXTURE, JSON.stringify({ url, ...options })], {
    cwd: new URL('../../', import.meta.url).pathname,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let stdout = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  const killer = setTimeout(() => child.kill(), 60_000);
  const [code] = (await once(child, 'exit')) as [number | null];
  clearTimeout(killer);
  expect(code).toBe(0);
  return JSON.parse(stdout) as Sent[];
}

const send = async (url: string, options: Sending): Promise<Sent> => (await sendFromElsewhere(url, options))[0]!;

const statusOf = (text: string): number => Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);
const headerOf = (text: string, name: string): string | undefined =>
  new RegExp(`\r\n${name}: *([^\r]*)`, 'i').exec(text.slice(0, text.indexOf('\r\n\r\n')))?.[1];
const bodyOf = (text: string): unknown => JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4));

/** What `count` clients like this one got, one after another: those that read a whole answer, and what the others met. */
async function tries(url: string, options: Sending, count = ATTEMPTS): Promise<{ answered: Sent[]; lost: string[] }> {
  const answered: Sent[] = [];
  const lost: string[] = [];
  for (const outcome of await sendFromElsewhere(url, { ...options, tries: count })) {
    if (wholeAnswer(outcome.received)) answered.push(outcome);
    else lost.push(outcome.error ?? `closed after ${outcome.received.length} bytes`);
  }
  return { answered, lost };
}

const kind = storeKinds.find((k) => k.name === 'sqlite')!;

describe('a body refused before it is read', () => {
  let gw: TestGateway;
  let dispose: () => Promise<void>;
  const alice = basicAuthorization('alice', 'alice-password');

  beforeAll(async () => {
    const opened = await kind.open();
    dispose = opened.dispose;
    // BODY_LIMIT_BYTES 64 KiB: the REST route's 413 well within a MiB
    gw = await startTestGateway(await embeddedWithUsers(opened.store), { BODY_LIMIT_BYTES: String(64 * 1024) });
  });
  afterAll(async () => {
    await gw?.stop().catch(() => undefined);
    await dispose?.();
  });

  const graphqlTooLarge = { errors: [{ message: 'Request body larger than 32768 bytes', extensions: { code: 'BAD_REQUEST' } }] };

  it.each([
    ['declared with Content-Length', false],
    ['chunked', true],
  ])('is answered 413 on /graphql without credentials, %s, to a client still sending 1 MiB, every time', async (_, chunked) => {
    const { answered, lost } = await tries(gw.url, { path: '/graphql', bytes: MiB, chunked });
    expect(lost).toEqual([]);
    for (const { received } of answered) {
      expect([statusOf(received), headerOf(received, 'connection'), bodyOf(received)]).toEqual([413, 'close', graphqlTooLarge]);
    }
  });

  it.each([
    ['declared with Content-Length', false],
    ['chunked', true],
  ])('is answered 413 on POST /api/v1/apikey in its own error body, %s, to a client still sending 1 MiB, every time', async (_, chunked) => {
    const { answered, lost } = await tries(gw.url, { path: '/api/v1/apikey', headers: { authorization: alice }, bytes: MiB, chunked });
    expect(lost).toEqual([]);
    for (const { received } of answered) {
      expect([statusOf(received), headerOf(received, 'connection'), bodyOf(received)]).toEqual([413, 'close', [{ id: '*', message: 'Request body larger than 65536 bytes' }]]);
    }
  });

  it('is answered 415 for a Content-Encoding, and 401 for a wrong key, to a client still sending, every time', async () => {
    const encoded = await tries(gw.url, { path: '/graphql', headers: { 'content-encoding': 'gzip' }, bytes: MiB });
    expect(encoded.lost).toEqual([]);
    for (const { received } of encoded.answered) expect([statusOf(received), headerOf(received, 'connection')]).toEqual([415, 'close']);
    const wrongKey = await tries(gw.url, { path: '/graphql', headers: { authorization: 'Bearer AAAAAAAAAAAAAAAAAAAAAA' }, bytes: MiB });
    expect(wrongKey.lost).toEqual([]);
    for (const { received } of wrongKey.answered) expect([statusOf(received), headerOf(received, 'connection')]).toEqual([401, 'close']);
  });

  it('serves no request sent behind a refused body on the same connection', async () => {
    const { hostname, port } = new URL(gw.url);
    const served: string[] = [];
    const follow = (req: IncomingMessage): void => void served.push(req.url ?? '');
    gw.gateway.httpServer.on('request', follow);
    const received = await new Promise<string>((resolve) => {
      const socket = connect(Number(port), hostname);
      let text = '';
      const timer = setTimeout(() => socket.destroy(), 10_000);
      socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
      socket.on('error', () => undefined);
      socket.on('close', () => {
        clearTimeout(timer);
        resolve(text);
      });
      const body = Buffer.alloc(64 * 1024, 0x20);
      socket.write(`POST /graphql HTTP/1.1\r\nhost: gateway\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n`);
      socket.write(body);
      socket.write('GET /healthz HTTP/1.1\r\nhost: gateway\r\n\r\n');
    });
    gw.gateway.httpServer.off('request', follow);
    expect(statusOf(received)).toBe(413);
    expect(received.match(/HTTP\/1\.1 /g)).toHaveLength(1);
    // not even handled with its answer lost: the gateway never saw it
    expect(served).toEqual(['/graphql']);
  });

  it('closes the connection of a client sending far past the byte budget, within a bound', async () => {
    // declared as 1 GiB, sent until the gateway closes: it reads LINGER_MAX_BYTES at most
    const outcome = await send(gw.url, { path: '/graphql', bytes: 1024 * MiB, within: 20_000 });
    expect(outcome.ms).toBeLessThan(4 * LINGER_MAX_MS + 2_000);
    expect(outcome.written).toBeLessThan(1024 * MiB);
    // what the client got in before the close: the budget, and what the kernels' buffers held
    expect(outcome.written).toBeLessThan(LINGER_MAX_BYTES + 64 * MiB);
  });

  it('closes the connection of a client trickling past the time budget, and of one gone silent, within a bound', async () => {
    // 1 KiB every 100 ms of a declared MiB: it would take 100 s
    const [trickle, silent] = await Promise.all([
      send(gw.url, { path: '/graphql', bytes: MiB, piece: 1024, everyMs: 100, within: 20_000 }),
      send(gw.url, { path: '/graphql', bytes: 1024, declared: MiB, within: 20_000 }),
    ]);
    for (const outcome of [trickle, silent]) {
      expect(statusOf(outcome.received)).toBe(413);
      expect(outcome.ms).toBeLessThan(4 * LINGER_MAX_MS + 2_000);
    }
    expect(trickle.written).toBeLessThan(MiB);
  });

  it('keeps none of the bytes it throws away: 96 MB over eight connections', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    /** Heap and buffers in use after two collections (buffers' memory is freed behind the first, on another thread). */
    const used = async (): Promise<number> => {
      gc();
      await new Promise((resolve) => setTimeout(resolve, 20));
      gc();
      const { heapUsed, arrayBuffers } = process.memoryUsage();
      return heapUsed + arrayBuffers;
    };
    // what a first request allocates for good is not what is measured
    await send(gw.url, { path: '/graphql', bytes: MiB });
    const sockets: Socket[] = [];
    const follow = (socket: Socket): void => void sockets.push(socket);
    gw.gateway.httpServer.on('connection', follow);
    try {
      const before = await used();
      const each = 12 * 1000 * 1000;
      // under the byte budget each: all of it is read and thrown away (unless a starved client is
      // cut off by the time budgets); the clients keep their connections open a while after
      expect(each).toBeLessThan(LINGER_MAX_BYTES);
      const sending = sendFromElsewhere(gw.url, { path: '/graphql', bytes: each, piece: 256 * 1024, holdMs: 300, within: 20_000, together: 8 });
      const read = (): number => sockets.reduce((sum, socket) => sum + socket.bytesRead, 0);
      const settled = (): boolean => read() >= 8 * each || (sockets.length === 8 && sockets.every((socket) => socket.destroyed));
      const until = Date.now() + 20_000;
      while (!settled() && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 5));
      // read by the gateway, the connections (most likely) still lingering
      const readWhileOpen = read();
      const whileOpen = await used();
      const outcomes = await sending;
      const after = await used();
      expect(outcomes.filter((o) => statusOf(o.received) === 413)).toHaveLength(8);
      // all 96 MB on a machine that is not starved
      expect(readWhileOpen).toBeGreaterThan(16 * MiB);
      // kept bodies would be all that was read (92 MiB of 96 MB, when tried)
      expect(whileOpen - before).toBeLessThan(Math.max(16 * MiB, readWhileOpen / 3));
      expect(after - before).toBeLessThan(8 * MiB);
    } finally {
      gw.gateway.httpServer.off('connection', follow);
    }
  });
});

describe('stopping while a refused body is still coming', () => {
  it('answers it and closes within the linger bound, not the drain grace', async () => {
    const opened = await kind.open();
    const gw = await startTestGateway(await embeddedWithUsers(opened.store));
    try {
      const connected = once(gw.gateway.httpServer, 'connection');
      const trickling = send(gw.url, { path: '/graphql', bytes: MiB, piece: 1024, everyMs: 100, within: 20_000 });
      // the client's process starts, connects, and its body begins to trickle after the 413
      await connected;
      await new Promise((resolve) => setTimeout(resolve, 300));
      const started = Date.now();
      await gw.stop();
      const outcome = await trickling;
      expect(statusOf(outcome.received)).toBe(413);
      // the drain grace is 10 s: the lingering connection is gone well before
      expect(Date.now() - started).toBeLessThan(LINGER_MAX_MS + 3_000);
    } finally {
      await gw.stop().catch(() => undefined);
      await opened.dispose();
    }
  });
});
