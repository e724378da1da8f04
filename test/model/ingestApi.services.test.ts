import http from 'node:http';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuthorization } from '../../src/auth/authorization.js';
import { createEmbeddedBackend, EmbeddedIngest } from '../../src/backends/embedded/index.js';
import { addUser } from '../../src/backends/embedded/keys/users.js';
import { openEmbeddedRecs } from '../../src/backends/embedded/openRecs.js';
import { loadConfig } from '../../src/config/env.js';
import { createGateway, type Gateway } from '../../src/http/server.js';
import { createLogger } from '../../src/logger.js';
import { parseItemRecord } from '../../src/model/itemRecord.js';
import { embeddedWithUsers } from '../helpers/gateway.js';
import { principal } from '../helpers/liveEvents.js';
import { DATABASE_URL, dropSchema, storeKinds, TEST_COST, tempDir, testSchema } from '../helpers/stores.js';
import { raw, statusOf } from '../helpers/rawHttp.js';

// What a probe of the running gateway found in the live recommender's API (recordEvents,
// upsertItems, POST /v1/events, PUT /v1/items), past the other tests: each bounded in requests,
// over real HTTP and raw sockets.

const root = basicAuthorization('root', 'root-password');
const alice = basicAuthorization('alice', 'alice-password');
const RECORD_EVENTS = 'mutation($e:[EventInput!]!){ recordEvents(events:$e){ accepted } }';

interface Answer {
  status: number;
  body: string;
}

/** One request with exactly the headers given (fetch would drop an empty Authorization). */
function request(url: string, method: string, path: string, headers: Record<string, string>, body = ''): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${url}${path}`, { method, headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}


interface LogLine {
  level: number;
  msg: string;
}

/** A gateway over the embedded backend (users alice, bob, root) whose log lines are kept. */
async function loggedGateway(env: Record<string, string>): Promise<{ url: string; lines: LogLine[]; stop(): Promise<void> }> {
  const opened = await storeKinds[0]!.open();
  const lines: LogLine[] = [];
  const destination = new PassThrough();
  destination.on('data', (chunk: Buffer) => {
    for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) lines.push(JSON.parse(line) as LogLine);
  });
  const gateway: Gateway = await createGateway({
    config: loadConfig({ DATA_DIR: '/nonexistent', AUTH_FAILURES_PER_MINUTE: '0', ...env }),
    backend: await embeddedWithUsers(opened.store),
    log: createLogger({ level: 'info', destination }),
  });
  const url = await gateway.listen(0, '127.0.0.1');
  return {
    url,
    lines,
    stop: async () => {
      await gateway.stop().catch(() => undefined);
      await opened.dispose();
    },
  };
}

let shared: ReturnType<typeof loggedGateway> | undefined;
/** One gateway without rate limits for the describe blocks below that need no other (each start builds the demo shop). */
const unlimited = (): ReturnType<typeof loggedGateway> => (shared ??= loggedGateway({ RATE_LIMIT_RPS: '0' }));
afterAll(async () => {
  await (await shared)?.stop();
});

describe('the REST routes without credentials', () => {
  let gw: Awaited<ReturnType<typeof loggedGateway>>;
  beforeAll(async () => {
    // an address's burst of 3 requests without credentials, then one a second
    gw = await loggedGateway({ RATE_LIMIT_RPS: '1', RATE_LIMIT_BURST: '3' });
  });
  afterAll(() => gw?.stop());

  it.each([
    ['POST', '/v1/events', { authorization: '' }],
    ['PUT', '/v1/items', { authorization: '   ' }],
    ['GET', '/api/v1/apikey', { authorization: '' }],
    ['GET', '/v1/nbp?itemId=31000005&apiKey=', {}],
    ['GET', '/v1/postbrowse?itemId=31000005&apiKey=%21%21', {}],
    ['GET', '/v1/items?ids=31000005&apiKey=a&apiKey=b', {}],
  ] as [string, string, Record<string, string>][])('%s %s with a blank or malformed credential spends the address\'s bucket', async (method, path, headers) => {
    // each case from an address of its own (TRUST_PROXY is off: the socket's address counts, so
    // the cases share 127.0.0.1; the burst of 3 is spent by the first case and 429 follows)
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) statuses.push((await request(gw.url, method, path, { 'content-type': 'application/json', ...headers }, '[]')).status);
    expect(statuses).toContain(429);
    expect(statuses.filter((s) => ![401, 403, 429].includes(s))).toEqual([]);
  });
});

describe('the REST twins for who may not send events', () => {
  let gw: Awaited<ReturnType<typeof loggedGateway>>;
  beforeAll(async () => {
    gw = await unlimited();
  });

  it('answers a non-administrator 403 before reading the batch, on both twins', async () => {
    const { port } = new URL(gw.url);
    for (const [method, path] of [['POST', '/v1/events'], ['PUT', '/v1/items']]) {
      const head = `${method} ${path} HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\nauthorization: ${alice}\r\ncontent-type: application/json\r\ncontent-length: 1000000\r\n\r\n[{"kind":"`;
      const answer = await raw(gw.url, head);
      expect(statusOf(answer)).toBe(403);
      expect(answer).toContain('Only administrators may send events and item records');
    }
  });

  it('answers a non-administrator 403 whatever the batch holds: not 400 for its size or its fields', async () => {
    const tooMany = JSON.stringify(Array.from({ length: 1_001 }, (_, i) => ({ itemId: 1 + i, name: 'x' })));
    expect((await request(gw.url, 'PUT', '/v1/items', { authorization: alice, 'content-type': 'application/json' }, tooMany)).status).toBe(403);
    const bad = JSON.stringify([{ kind: 'view', itemId: -1 }]);
    expect((await request(gw.url, 'POST', '/v1/events', { authorization: alice, 'content-type': 'application/json' }, bad)).status).toBe(403);
    // an administrator's is checked: the 400 names the field
    expect((await request(gw.url, 'POST', '/v1/events', { authorization: root, 'content-type': 'application/json' }, bad)).body).toMatch(/events\[0\]\.itemId/);
  });

  it('takes a batch as JSON only: text/plain or a form (what a page on another site can POST with remembered Basic credentials) is 415, nothing kept', async () => {
    const events = JSON.stringify([{ kind: 'view', itemId: 31000005, sessionId: 'csrf-1' }]);
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', undefined]) {
      const headers: Record<string, string> = { authorization: root };
      if (type !== undefined) headers['content-type'] = type;
      const answer = await request(gw.url, 'POST', '/v1/events', headers, events);
      expect(answer.status).toBe(415);
      expect(JSON.parse(answer.body)).toEqual({ errors: [{ code: 415, message: expect.stringMatching(/application\/json/) as string }] });
    }
    const items = await request(gw.url, 'PUT', '/v1/items', { authorization: root, 'content-type': 'text/plain' }, '[{"itemId":99000009,"name":"csrf"}]');
    expect(items.status).toBe(415);
    const ok = await request(gw.url, 'POST', '/v1/events', { authorization: root, 'content-type': 'application/json; charset=utf-8' }, events);
    expect([ok.status, JSON.parse(ok.body)]).toEqual([200, { accepted: 1, duplicates: 0, itemsWithoutRecord: 0 }]);
  });

  it('counts POST /v1/events under its own route in /metrics, not under "other"', async () => {
    await request(gw.url, 'POST', '/v1/events', { authorization: root, 'content-type': 'application/json' }, '[]');
    const metrics = await (await fetch(`${gw.url}/metrics`)).text();
    expect(metrics).toMatch(/http_requests_total\{route="\/v1\/events",method="POST",status="200"\} [1-9]/);
  });
});

describe('event times', () => {
  let gw: Awaited<ReturnType<typeof loggedGateway>>;
  beforeAll(async () => {
    gw = await unlimited();
  });

  it('refuses a time no calendar has, that is no ISO 8601, or without an offset, on GraphQL as on the twin (Date took "1" for 2001 and 31 February for 3 March)', async () => {
    // a time without an offset was read as UTC: refused since, as RFC 3339 refuses it
    const withoutOffset = ['2024-02-29', '2026-11-23 06:40', '2026-11-23T10:00:00'];
    for (const time of ['1', 'March 7', '2026-02-31', '2026-02-29T10:00:00Z', '2026-04-31T00:00:00Z', '2026-11-23T24:00:00Z', ...withoutOffset]) {
      const graphql = await request(gw.url, 'POST', '/graphql', { authorization: root, 'content-type': 'application/json' },
        JSON.stringify({ query: RECORD_EVENTS, variables: { e: [{ kind: 'VIEW', itemId: 31000005, sessionId: 's', time }] } }));
      expect(graphql.status, time).toBe(400);
      expect(graphql.body, time).toMatch(/DateTime must be an ISO 8601 string/);
      const twin = await request(gw.url, 'POST', '/v1/events', { authorization: root, 'content-type': 'application/json' }, JSON.stringify([{ kind: 'view', itemId: 31000005, sessionId: 's', time }]));
      expect(twin.status, time).toBe(400);
    }
    for (const time of ['2024-02-29T00:00Z', '2026-11-23T06:40:00Z', '2026-11-23T07:40:00.123456789+01:00', '2026-11-23 06:40Z']) {
      const graphql = await request(gw.url, 'POST', '/graphql', { authorization: root, 'content-type': 'application/json' },
        JSON.stringify({ query: RECORD_EVENTS, variables: { e: [{ kind: 'VIEW', itemId: 31000005, sessionId: 's', time }] } }));
      expect(graphql.body, time).toBe('{"data":{"recordEvents":{"accepted":1}}}\n');
    }
  });
});

describe('identifiers PostgreSQL cannot hold', () => {
  it('refuses a NUL in a session, user or order id with BAD_USER_INPUT (a 500 and an error logged before), on GraphQL and the twin', async () => {
    const schema = testSchema();
    const keys = await storeKinds[0]!.open();
    const recs = await openEmbeddedRecs({ dataDir: null, databaseUrl: DATABASE_URL, schema, followIntervalMs: 0 });
    await addUser(keys.store, { username: 'root', password: 'root-password', isAdmin: true }, TEST_COST);
    const lines: LogLine[] = [];
    const destination = new PassThrough();
    destination.on('data', (chunk: Buffer) => {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) lines.push(JSON.parse(line) as LogLine);
    });
    const gateway = await createGateway({
      config: loadConfig({ DATA_DIR: '/nonexistent', RATE_LIMIT_RPS: '0', AUTH_FAILURES_PER_MINUTE: '0' }),
      backend: createEmbeddedBackend(keys.store, recs),
      log: createLogger({ level: 'info', destination }),
    });
    try {
      const url = await gateway.listen(0, '127.0.0.1');
      for (const field of ['sessionId', 'userId', 'orderId']) {
        const event = { kind: 'purchase', itemId: 31000005, [field]: 'a\u0000b' };
        const twin = await request(url, 'POST', '/v1/events', { authorization: root, 'content-type': 'application/json' }, JSON.stringify([event]));
        expect([twin.status, JSON.parse(twin.body)]).toEqual([400, { errors: [{ code: 4000, message: `events[0].${field}: must not contain the NUL character (\\u0000)` }] }]);
      }
      const graphql = await request(url, 'POST', '/graphql', { authorization: root, 'content-type': 'application/json' },
        JSON.stringify({ query: RECORD_EVENTS, variables: { e: [{ kind: 'VIEW', itemId: 31000005, sessionId: 'a\u0000b' }] } }));
      expect((JSON.parse(graphql.body) as { errors: { extensions: { code: string } }[] }).errors[0]!.extensions.code).toBe('BAD_USER_INPUT');
      expect(lines.filter((line) => line.level >= 50)).toEqual([]);
      expect(recs.state().lastEventId).toBe(0);
    } finally {
      await gateway.stop();
      await keys.dispose();
      await dropSchema(schema);
    }
  }, 30_000);
});

describe('recordEvents\' variable errors', () => {
  let gw: Awaited<ReturnType<typeof loggedGateway>>;
  beforeAll(async () => {
    gw = await unlimited();
  });

  const send = async (events: unknown[]): Promise<{ status: number; body: { errors?: { message: string; extensions?: { code?: string } }[] } }> => {
    const answer = await request(gw.url, 'POST', '/graphql', { authorization: root, 'content-type': 'application/json' }, JSON.stringify({ query: RECORD_EVENTS, variables: { e: events } }));
    return { status: answer.status, body: JSON.parse(answer.body) as never };
  };

  it('a batch with more than 50 bad values is BAD_USER_INPUT, logged at most as a warning', async () => {
    const events = Array.from({ length: 60 }, (_, i) => ({ kind: 'VIEW', itemId: 31000005, sessionId: `s-${i}`, time: 'not a date' }));
    const { status, body } = await send(events);
    expect(status).toBe(400);
    expect(body.errors!.map((e) => e.extensions?.code)).not.toContain('INTERNAL_SERVER_ERROR');
    expect(body.errors!.at(-1)).toMatchObject({ message: expect.stringMatching(/^Too many errors/) as string, extensions: { code: 'BAD_USER_INPUT' } });
    expect(gw.lines.filter((line) => line.level >= 50)).toEqual([]);
  });

  it('never quotes an event\'s session, user or order id back, and still names the field', async () => {
    const cases: [unknown, RegExp][] = [
      [{ kind: 'VIEW', itemId: 31000005, sessionId: 'secret-session-77', time: 'bad' }, /at "e\[0\]\.time"; DateTime must be an ISO 8601 string with an offset \(2026-11-23T06:40:00Z or \+01:00\)$/],
      [{ kind: 'VIEW', itemId: 31000005, sessionId: 'secret-session-77', userId: 'secret-user-9', extra: 1 }, /at "e\[0\]"; Field "extra" is not defined by type "EventInput"\.$/],
      [{ kind: 'PURCHASE', itemId: 31000005, orderId: 987654321 }, /at "e\[0\]\.orderId"; String cannot represent a non string value$/],
      [{ kind: 'VIEW', itemId: 31000005, sessionId: 'x'.repeat(100_000), time: 'y'.repeat(100_000) }, /at "e\[0\]\.time"; DateTime must be an ISO 8601 string with an offset \(2026-11-23T06:40:00Z or \+01:00\)$/],
    ];
    for (const [event, reason] of cases) {
      const { status, body } = await send([event]);
      expect(status).toBe(400);
      const text = JSON.stringify(body);
      expect(text).not.toMatch(/secret-|987654321|xxxxx|yyyyy/);
      expect(body.errors![0]).toMatchObject({ message: expect.stringMatching(reason) as string, extensions: { code: 'BAD_USER_INPUT' } });
    }
  });
});

describe('a newcomer\'s first item record', () => {
  it('says that the store\'s catalogue replaces the demo shop', async () => {
    const { dir, remove } = tempDir('recs-probe-demo-');
    const said: string[] = [];
    const recs = await openEmbeddedRecs({ dataDir: dir, followIntervalMs: 60_000, log: (line) => said.push(line) });
    try {
      expect(recs.state().mode).toBe('demo');
      await new EmbeddedIngest(recs).upsertItems(principal(true), [parseItemRecord({ itemId: 99000001, name: 'Vireo Labs Case 7' })]);
      expect(recs.state()).toMatchObject({ mode: 'store', items: 1 });
      expect(said.some((line) => /replaces the demo shop/.test(line))).toBe(true);
    } finally {
      await recs.close();
      remove();
    }
  }, 30_000);
});

describe('an empty upsertItems on a store still serving the demo shop', () => {
  it('answers {upserted: 0} on GraphQL and the twin and leaves the store and the model as they were (each took a whole reload of the demo shop, on the event loop of every process following the store)', async () => {
    const { dir, remove } = tempDir('recs-probe-empty-');
    const keys = await storeKinds[0]!.open();
    const said: string[] = [];
    const recs = await openEmbeddedRecs({ dataDir: dir, followIntervalMs: 0, log: (line) => said.push(line) });
    await addUser(keys.store, { username: 'root', password: 'root-password', isAdmin: true }, TEST_COST);
    const gateway = await createGateway({
      config: loadConfig({ DATA_DIR: '/nonexistent', RATE_LIMIT_RPS: '0', AUTH_FAILURES_PER_MINUTE: '0' }),
      backend: createEmbeddedBackend(keys.store, recs),
      log: createLogger({ level: 'silent' }),
    });
    try {
      const url = await gateway.listen(0, '127.0.0.1');
      const before = recs.state();
      const json = { authorization: root, 'content-type': 'application/json' };
      const twin = await request(url, 'PUT', '/v1/items', json, '[]');
      expect([twin.status, JSON.parse(twin.body)]).toEqual([200, { upserted: 0 }]);
      const graphql = await request(url, 'POST', '/graphql', json, JSON.stringify({ query: 'mutation { upsertItems(items: []) { upserted } }' }));
      expect(JSON.parse(graphql.body)).toEqual({ data: { upsertItems: { upserted: 0 } } });
      expect(recs.state()).toMatchObject({ mode: 'demo', lastItemSeq: before.lastItemSeq, items: before.items });
      expect(said.filter((line) => /serving the demo shop with/.test(line))).toEqual([]);
    } finally {
      await gateway.stop();
      await keys.dispose();
      remove();
    }
  }, 30_000);
});
