import { spawn } from 'node:child_process';
import { once } from 'node:events';
import type { IncomingMessage } from 'node:http';
import { connect, type Socket } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuthorization } from '../../src/auth/authorization.js';
import { DEFAULT_SERVER_LIMITS } from '../../src/config/defaults.js';
import { LINGER_MAX_BYTES, LINGER_MAX_MS, LINGER_REFUSED_BYTES, lingerBudgetFor } from '../../src/http/linger.js';
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

/**
 * What the gateway at `url` sent back on one raw connection (in this process) to `writes`, each
 * written in turn, until it closed the connection or `done` said the client had all (then the
 * client closes it); at most 10 s. `from`: the local address to connect from.
 */
function exchange(url: string, writes: (string | Buffer)[], done?: (text: string) => boolean, from?: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise<string>((resolve) => {
    const socket = connect({ port: Number(port), host: hostname, ...(from ? { localAddress: from } : {}) });
    let text = '';
    const timer = setTimeout(() => socket.destroy(), 10_000);
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1');
      if (done?.(text) === true) socket.end();
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(text);
    });
    for (const written of writes) socket.write(written);
  });
}

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
    // BODY_LIMIT_BYTES 64 KiB: the REST route's 413 well within a MiB; the clients below send
    // tens of refused MiB from one address, past what it may have read by default (tested below)
    gw = await startTestGateway(await embeddedWithUsers(opened.store), { BODY_LIMIT_BYTES: String(64 * 1024), LINGER_BYTES_PER_SECOND: '0' });
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
    const served: string[] = [];
    const follow = (req: IncomingMessage): void => void served.push(req.url ?? '');
    gw.gateway.httpServer.on('request', follow);
    const body = Buffer.alloc(64 * 1024, 0x20);
    const received = await exchange(gw.url, [
      `POST /graphql HTTP/1.1\r\nhost: gateway\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n`,
      body,
      'GET /healthz HTTP/1.1\r\nhost: gateway\r\n\r\n',
    ]);
    gw.gateway.httpServer.off('request', follow);
    expect(statusOf(received)).toBe(413);
    expect(received.match(/HTTP\/1\.1 /g)).toHaveLength(1);
    // not even handled with its answer lost: the gateway never saw it
    expect(served).toEqual(['/graphql']);
  });

  it('serves no request sent in the same write behind a refused body, and stores nothing of it', async () => {
    // node parses a read whole: a batch written behind the refused body in one write was stored,
    // its answer lost with the connection (a probe)
    const root = basicAuthorization('root', 'root-password');
    const event = (id: string): string => JSON.stringify([{ kind: 'view', itemId: 31000005, sessionId: `pipelined-${id}`, eventId: `pipelined-${id}` }]);
    const behind = (id: string): string =>
      `POST /v1/events HTTP/1.1\r\nhost: gateway\r\nauthorization: ${root}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(event(id))}\r\n\r\n${event(id)}`;
    const refusals: [string, string][] = [
      ['an anonymous body over its limit', `POST /graphql HTTP/1.1\r\nhost: gateway\r\ncontent-type: application/json\r\ncontent-length: 40000\r\n\r\n${' '.repeat(40_000)}`],
      ['a Content-Encoding', `POST /graphql HTTP/1.1\r\nhost: gateway\r\nauthorization: ${alice}\r\ncontent-type: application/json\r\ncontent-encoding: gzip\r\ncontent-length: 100\r\n\r\n${' '.repeat(100)}`],
      ['a PUT', `PUT /graphql HTTP/1.1\r\nhost: gateway\r\ncontent-length: 100\r\n\r\n${' '.repeat(100)}`],
    ];
    for (const [what, refused] of refusals) {
      const id = what.replace(/\W+/g, '-');
      const received = await exchange(gw.url, [refused + behind(id)]);
      expect(received.match(/HTTP\/1\.1 /g), what).toHaveLength(1);
      expect([413, 415, 405], what).toContain(statusOf(received));
      // the same event sent now is new: the one behind the refusal was never stored
      const again = await fetch(`${gw.url}/v1/events`, { method: 'POST', headers: { authorization: root, 'content-type': 'application/json' }, body: event(id) });
      expect(await again.json(), what).toMatchObject({ accepted: 1, duplicates: 0 });
    }
  });

  it('still answers requests pipelined on a connection that stays open, each in turn, in order', async () => {
    const query = JSON.stringify({ query: '{ viewer { username } }' });
    const received = await exchange(
      gw.url,
      [
        'GET /healthz HTTP/1.1\r\nhost: gateway\r\n\r\n' +
          `POST /graphql HTTP/1.1\r\nhost: gateway\r\nauthorization: ${alice}\r\ncontent-type: application/json\r\ncontent-length: ${query.length}\r\n\r\n${query}` +
          'GET /openapi.json HTTP/1.1\r\nhost: gateway\r\n\r\n',
      ],
      (text) => (text.match(/HTTP\/1\.1 /g) ?? []).length === 3 && wholeAnswer(text.slice(text.lastIndexOf('HTTP/1.1 '))),
    );
    const answers = received.split(/(?=HTTP\/1\.1 \d{3} )/);
    expect(answers.map(statusOf)).toEqual([200, 200, 200]);
    expect(answers[1]).toContain('"username":"alice"');
    expect(answers[2]).toContain('"openapi"');
  });

  it('answers Expect: 100-continue with the 413 at once where the declared body is past any limit of its route, else 100 Continue', async () => {
    // curl waits for the 100 before a body over a MiB: node sent it to every such request, and the
    // body went only to be refused (a probe)
    const root = basicAuthorization('root', 'root-password');
    const firstStatus = async (path: string, length: number, authorization?: string): Promise<number> => {
      const head = `POST ${path} HTTP/1.1\r\nhost: gateway\r\ncontent-type: application/json\r\nexpect: 100-continue\r\n${authorization ? `authorization: ${authorization}\r\n` : ''}content-length: ${length}\r\n\r\n`;
      return statusOf(await exchange(gw.url, [head], (text) => text.includes('\r\n\r\n')));
    };
    // without credentials: 32 KiB
    expect(await firstStatus('/graphql', 2 * MiB)).toBe(413);
    expect(await firstStatus('/graphql', 1000)).toBe(100);
    // with them: BODY_LIMIT_BYTES (64 KiB here) on /graphql, INGEST_BODY_LIMIT_BYTES (8 MiB) on the batches' route
    expect(await firstStatus('/graphql', 2 * MiB, alice)).toBe(413);
    expect(await firstStatus('/graphql', 60 * 1024, alice)).toBe(100);
    expect(await firstStatus('/v1/events', 9 * MiB, root)).toBe(413);
    expect(await firstStatus('/v1/events', 2 * MiB, root)).toBe(100);
  });

  it('closes the connection of a client sending far past the byte budget, within a bound', async () => {
    // declared as 1 GiB, sent until the gateway closes: an anonymous request, so the gateway reads
    // LINGER_REFUSED_BYTES at most after its answer (a probe's 40 such clients kept a core busy at
    // 16 MiB each)
    const sockets: Socket[] = [];
    const follow = (socket: Socket): void => void sockets.push(socket);
    gw.gateway.httpServer.on('connection', follow);
    try {
      const outcome = await send(gw.url, { path: '/graphql', bytes: 1024 * MiB, within: 20_000 });
      expect(outcome.ms).toBeLessThan(4 * LINGER_MAX_MS + 2_000);
      expect(outcome.written).toBeLessThan(1024 * MiB);
      expect(sockets).toHaveLength(1);
      // the anonymous limit read before the answer, then the budget, give or take a read's chunk
      expect(sockets[0]!.bytesRead).toBeGreaterThan(LINGER_REFUSED_BYTES);
      expect(sockets[0]!.bytesRead).toBeLessThan(LINGER_REFUSED_BYTES + 32 * 1024 + 256 * 1024);
    } finally {
      gw.gateway.httpServer.off('connection', follow);
    }
  });

  it('lingers for twice the limit a body went past, from a MiB (every refusal of a sender not known yet) to 16 MiB', () => {
    expect([32 * 1024, MiB, 8 * MiB, 100 * MiB].map(lingerBudgetFor)).toEqual([LINGER_REFUSED_BYTES, 2 * MiB, LINGER_MAX_BYTES, LINGER_MAX_BYTES]);
    expect([LINGER_REFUSED_BYTES, LINGER_MAX_BYTES]).toEqual([MiB, 16 * MiB]);
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

  it('keeps none of the bytes it throws away: 24 MB over 24 connections', async () => {
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
    const clients = 24;
    try {
      const before = await used();
      const each = 1000 * 1000;
      // under the byte budget each (an anonymous request's): all of it is read and thrown away
      // (unless a starved client is cut off by the time budgets); the clients keep their
      // connections open a while after
      expect(each).toBeLessThan(LINGER_REFUSED_BYTES);
      const sending = sendFromElsewhere(gw.url, { path: '/graphql', bytes: each, piece: 256 * 1024, holdMs: 300, within: 20_000, together: clients });
      const read = (): number => sockets.reduce((sum, socket) => sum + socket.bytesRead, 0);
      const settled = (): boolean => read() >= clients * each || (sockets.length === clients && sockets.every((socket) => socket.destroyed));
      const until = Date.now() + 20_000;
      while (!settled() && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 5));
      // read by the gateway, the connections (most likely) still lingering
      const readWhileOpen = read();
      const whileOpen = await used();
      const outcomes = await sending;
      const after = await used();
      expect(outcomes.filter((o) => statusOf(o.received) === 413)).toHaveLength(clients);
      // all 24 MB on a machine that is not starved
      expect(readWhileOpen).toBeGreaterThan(16 * MiB);
      // kept bodies would be all that was read
      expect(whileOpen - before).toBeLessThan(Math.max(6 * MiB, readWhileOpen / 3));
      expect(after - before).toBeLessThan(8 * MiB);
    } finally {
      gw.gateway.httpServer.off('connection', follow);
    }
  });
});

describe("one address's refused bodies, with the default limits", () => {
  let gw: TestGateway;
  let dispose: () => Promise<void>;
  beforeAll(async () => {
    const opened = await kind.open();
    dispose = opened.dispose;
    gw = await startTestGateway(await embeddedWithUsers(opened.store));
  });
  afterAll(async () => {
    await gw?.stop().catch(() => undefined);
    await dispose?.();
  });

  it('are read for it within LINGER_BYTES_PER_SECOND, while a first offender still reads its answer and others are served', async () => {
    const sockets: Socket[] = [];
    const follow = (socket: Socket): void => void sockets.push(socket);
    gw.gateway.httpServer.on('connection', follow);
    const { lingerBytesPerSecond } = DEFAULT_SERVER_LIMITS;
    try {
      // 60 junk bodies of 1 MB, 4 at a time, each under the byte budget of one linger
      const started = Date.now();
      const junk = await sendFromElsewhere(gw.url, { path: '/graphql', bytes: 1000 * 1000, from: '127.0.0.2', tries: 15, together: 4, within: 20_000 });
      const seconds = (Date.now() - started) / 1000;
      const fromJunk = sockets.filter((socket) => socket.remoteAddress === '127.0.0.2');
      expect(fromJunk).toHaveLength(60);
      const read = fromJunk.reduce((sum, socket) => sum + socket.bytesRead, 0);
      // every body whole (57 MiB) before; now a first linger's whole budget, what refills while
      // they send, and what each connection's first reads bring with the head
      expect(read).toBeLessThan(LINGER_MAX_BYTES + lingerBytesPerSecond * (seconds + 1) + 60 * 256 * 1024);
      // the refusals it still read are 413s (those past the budget may meet the reset instead)
      expect(junk.filter((outcome) => statusOf(outcome.received) === 413).length).toBeGreaterThan(16);

      // another address's first somewhat-too-large body: lingered, its answer read every time
      const { answered, lost } = await tries(gw.url, { path: '/graphql', bytes: 40_000, from: '127.0.0.3' }, 5);
      expect(lost).toEqual([]);
      expect(answered.map((outcome) => statusOf(outcome.received))).toEqual([413, 413, 413, 413, 413]);
      // and a request that needs no lingering is served, from the junk's address too
      const query = JSON.stringify({ query: '{ __typename }' });
      const request = `POST /graphql HTTP/1.1\r\nhost: gateway\r\ncontent-type: application/json\r\ncontent-length: ${query.length}\r\nconnection: close\r\n\r\n${query}`;
      for (const from of ['127.0.0.2', '127.0.0.1']) {
        const received = await exchange(gw.url, [request], undefined, from);
        expect([statusOf(received), bodyOf(received)], from).toEqual([200, { data: { __typename: 'Query' } }]);
      }
    } finally {
      gw.gateway.httpServer.off('connection', follow);
    }
  }, 60_000);
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
