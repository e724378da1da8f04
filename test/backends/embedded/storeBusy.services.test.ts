import path from 'node:path';
import { performance } from 'node:perf_hooks';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuthorization } from '../../../src/auth/authorization.js';
import { createEmbeddedBackend, STORE_BUSY_RETRY_AFTER_S } from '../../../src/backends/embedded/index.js';
import { SqliteKeyStore } from '../../../src/backends/embedded/keys/sqliteStore.js';
import { addUser } from '../../../src/backends/embedded/keys/users.js';
import { openEmbeddedRecs } from '../../../src/backends/embedded/openRecs.js';
import { type EmbeddedRecs } from '../../../src/backends/embedded/recs.js';
import { writeLockFor } from '../../../src/backends/embedded/postgresRecsStore.js';
import { DB_FILE, RecsStore } from '../../../src/backends/embedded/store.js';
import { MemoryCache } from '../../../src/cache/memory.js';
import { loadConfig } from '../../../src/config/env.js';
import { createGateway, type Gateway } from '../../../src/http/server.js';
import { openBackend } from '../../../src/main.js';
import { codeOf, startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { NO_RATE_LIMITS } from '../../helpers/processes.js';
import { DATABASE_URL, dropSchema, TEST_COST, tempDir, testSchema } from '../../helpers/stores.js';

const root = basicAuthorization('root', 'root-password');
const RECORD = 'mutation($events: [EventInput!]!) { recordEvents(events: $events) { accepted } }';
const events = (session: string): { kind: string; itemId: number; sessionId: string; time: string }[] =>
  [1, 2].map((itemId) => ({ kind: 'VIEW', itemId: 31000000 + itemId, sessionId: session, time: new Date(Date.now() - 60_000).toISOString() }));

describe('a write the SQLite store is too busy for (another process holds its write lock)', () => {
  const data = tempDir('recs-busy-');
  let recs: EmbeddedRecs;
  let gateway: TestGateway;
  beforeAll(async () => {
    const keys = new SqliteKeyStore(path.join(data.dir, 'keys.db'));
    await keys.migrate();
    await addUser(keys, { username: 'root', password: 'root-password', isAdmin: true }, TEST_COST);
    // a write waits 300 ms for the lock here, not the minute it waits by default
    recs = await openEmbeddedRecs({ dataDir: data.dir, followIntervalMs: 0, storeLockRetryMs: 300 });
    gateway = await startTestGateway(createEmbeddedBackend(keys, recs));
  });
  afterAll(async () => {
    await gateway?.stop();
    data.remove();
  });

  it('is answered as retryable (REST 503 with Retry-After; GraphQL UPSTREAM_UNAVAILABLE with retryAfter), keeps nothing, and goes through once the lock is let go', async () => {
    const other = new Database(path.join(data.dir, DB_FILE));
    other.exec('BEGIN IMMEDIATE');
    try {
      const rest = await fetch(`${gateway.url}/v1/events`, {
        method: 'POST', headers: { 'content-type': 'application/json', authorization: root }, body: JSON.stringify(events('busy-rest').map((e) => ({ ...e, kind: 'view' }))),
      });
      const body = (await rest.json()) as { errors: { code: number; message: string }[] };
      expect(rest.status).toBe(503);
      expect(rest.headers.get('retry-after')).toBe(String(STORE_BUSY_RETRY_AFTER_S));
      expect(body.errors[0]!.message).toMatch(/store is busy.*nothing of the call was kept/);

      const graphql = await gateway.gql(RECORD, { events: events('busy-graphql') }, { authorization: root });
      expect(codeOf(graphql)).toBe('UPSTREAM_UNAVAILABLE');
      expect(graphql.body.errors![0]!.extensions).toMatchObject({ service: 'recommendations', retryAfter: STORE_BUSY_RETRY_AFTER_S });
    } finally {
      other.exec('ROLLBACK');
      other.close();
    }
    expect(await recs.store!.counts()).toMatchObject({ events: 0 });
    expect(recs.applied.lastEventId).toBe(0);

    const again = await gateway.gql(RECORD, { events: events('busy-graphql') }, { authorization: root });
    expect(again.body).toEqual({ data: { recordEvents: { accepted: 2 } } });
    expect(await recs.store!.counts()).toMatchObject({ events: 2 });
  });
});

describe('a write waiting for another process\'s SQLite write lock', () => {
  it('leaves the event loop free while it waits, and is stored once the lock is let go', async () => {
    const data = tempDir('recs-busy-loop-');
    const store = RecsStore.open(data.dir, { lockRetryMs: 30_000 });
    const other = new Database(path.join(data.dir, DB_FILE));
    try {
      other.exec('BEGIN IMMEDIATE');
      const before = performance.eventLoopUtilization();
      const write = store.appendEvents([{ kind: 'view', itemId: 31000001, session: 'loop', user: null, orderId: null, time: Date.now() - 60_000 }]);
      let settled = false;
      void write.then(() => (settled = true), () => (settled = true));
      await new Promise((resolve) => setTimeout(resolve, 800));
      // The share of those 800 ms the loop was not idle: SQLite's busy handler sleeping on it
      // (50 ms an attempt, between timers of 5 to 100 ms) made it about half.
      const busy = performance.eventLoopUtilization(before).utilization;
      expect(settled).toBe(false);
      other.exec('ROLLBACK');
      expect((await write).map((row) => row[2])).toEqual([31000001]);
      expect(busy).toBeLessThan(0.2);
      expect(await store.counts()).toMatchObject({ events: 1 });
    } finally {
      if (other.inTransaction) other.exec('ROLLBACK');
      other.close();
      await store.close();
      data.remove();
    }
  });
});

/** A gateway as `serve` builds it (openBackend), its deadline 500 ms: its URL and its first administrator's credential. */
async function serveGateway(env: Record<string, string>): Promise<{ gateway: Gateway; url: string; admin: string }> {
  const config = loadConfig({ ...NO_RATE_LIMITS, ...env, REQUEST_DEADLINE_MS: '500', RECS_FOLLOW_INTERVAL_MS: '0' });
  const cache = new MemoryCache();
  let admin = '';
  const backend = await openBackend(config, { cache, onFirstAdmin: (password) => (admin = basicAuthorization('admin', password)) });
  const gateway = await createGateway({ config, backend, cache });
  return { gateway, url: await gateway.listen(0, '127.0.0.1'), admin };
}

describe('the gateway as serve makes it, while another process holds the write lock of its recs.db', () => {
  const data = tempDir('recs-busy-serve-');
  let gateway: Gateway;
  let url: string;
  let admin: string;
  beforeAll(async () => {
    ({ gateway, url, admin } = await serveGateway({ DATA_DIR: data.dir }));
  });
  afterAll(async () => {
    await gateway?.stop();
    data.remove();
  });

  it('answers a call 503 with Retry-After within REQUEST_DEADLINE_MS, not after the store\'s minute, and keeps nothing of it', async () => {
    const other = new Database(path.join(data.dir, DB_FILE));
    other.exec('BEGIN IMMEDIATE');
    try {
      // 40 times the deadline: a bound against a hang, far above any scheduling delay; the
      // store's own window (a minute) is past it, and then the fetch fails
      const rest = await fetch(`${url}/v1/events`, {
        method: 'POST', headers: { 'content-type': 'application/json', authorization: admin },
        body: JSON.stringify(events('busy-serve').map((e) => ({ ...e, kind: 'view' }))), signal: AbortSignal.timeout(20_000),
      });
      expect(rest.status).toBe(503);
      expect(rest.headers.get('retry-after')).toBe(String(STORE_BUSY_RETRY_AFTER_S));
      await rest.body?.cancel();
    } finally {
      other.exec('ROLLBACK');
    }
    try {
      expect(other.prepare('SELECT count(*) FROM events').pluck().get()).toBe(0);
    } finally {
      other.close();
    }
  }, 30_000);
});

describe('the gateway as serve makes it on PostgreSQL, while another session holds the store\'s write lock', () => {
  const data = tempDir('recs-busy-pg-');
  const schema = testSchema();
  /** The advisory lock every write to the events and items in the schema takes (postgresRecsStore.ts writeLockFor). */
  const WRITE_LOCK = writeLockFor(schema);
  let gateway: Gateway;
  let url: string;
  let admin: string;
  let other: pg.Client;
  beforeAll(async () => {
    other = new pg.Client({ connectionString: DATABASE_URL });
    await other.connect();
    await other.query(`CREATE SCHEMA ${schema}`);
    await other.query(`SET search_path = ${schema}`);
    const database = new URL(DATABASE_URL);
    database.searchParams.set('options', `-c search_path=${schema}`);
    ({ gateway, url, admin } = await serveGateway({ DATA_DIR: data.dir, DATABASE_URL: database.toString() }));
  });
  afterAll(async () => {
    await gateway?.stop();
    await other?.end();
    await dropSchema(schema);
    data.remove();
  });

  const post = (path: string, method: string, body: unknown): Promise<Response> =>
    fetch(`${url}${path}`, {
      method, headers: { 'content-type': 'application/json', authorization: admin }, body: JSON.stringify(body),
      // 40 times the deadline: a bound against a hang (before, the call waited as long as the lock was held)
      signal: AbortSignal.timeout(20_000),
    });

  it('answers events and items 503 with Retry-After within REQUEST_DEADLINE_MS, keeps nothing of them, and takes them once the lock is let go', async () => {
    const viewed = events('busy-pg').map((e) => ({ ...e, kind: 'view' }));
    const records = [{ itemId: 99000001, name: 'Busy Case' }];
    await other.query('SELECT pg_advisory_lock($1)', [WRITE_LOCK]);
    try {
      for (const [path, method, body] of [['/v1/events', 'POST', viewed], ['/v1/items', 'PUT', records]] as const) {
        const answer = await post(path, method, body);
        expect(answer.status).toBe(503);
        expect(answer.headers.get('retry-after')).toBe(String(STORE_BUSY_RETRY_AFTER_S));
        await answer.body?.cancel();
      }
    } finally {
      await other.query('SELECT pg_advisory_unlock($1)', [WRITE_LOCK]);
    }
    const counts = await other.query<{ e: string; i: string }>('SELECT (SELECT count(*) FROM recs_events) AS e, (SELECT count(*) FROM recs_items) AS i');
    expect(counts.rows[0]).toEqual({ e: '0', i: '0' });
    expect(await (await post('/v1/events', 'POST', viewed)).json()).toMatchObject({ accepted: 2 });
    expect(await (await post('/v1/items', 'PUT', records)).json()).toEqual({ upserted: 1 });
  }, 30_000);

  it('answers 503, not 500, a call naming a session another transaction is adding (an import\'s move), and keeps nothing of it', async () => {
    const viewed = events('busy-pg-key').map((e) => ({ ...e, kind: 'view' }));
    await other.query('BEGIN');
    try {
      await other.query("INSERT INTO recs_keys (ns, name) VALUES (0, 'busy-pg-key')");
      const answer = await post('/v1/events', 'POST', viewed);
      expect(answer.status).toBe(503);
      expect(answer.headers.get('retry-after')).toBe(String(STORE_BUSY_RETRY_AFTER_S));
      await answer.body?.cancel();
    } finally {
      await other.query('ROLLBACK');
    }
    const kept = await other.query<{ e: string }>("SELECT count(*) AS e FROM recs_events e JOIN recs_keys k ON k.id = e.session WHERE k.name = 'busy-pg-key'");
    expect(kept.rows[0]).toEqual({ e: '0' });
    expect(await (await post('/v1/events', 'POST', viewed)).json()).toMatchObject({ accepted: 2 });
  }, 30_000);

  it('starts another replica while an import\'s move holds recs_events past REQUEST_DEADLINE_MS: it waits for the move', async () => {
    const database = new URL(DATABASE_URL);
    database.searchParams.set('options', `-c search_path=${schema}`);
    const second = tempDir('recs-busy-pg2-');
    await other.query('BEGIN');
    let starting: Promise<{ gateway: Gateway }> | undefined;
    try {
      // what an import's final move holds while it inserts its rows
      await other.query('LOCK TABLE recs_events IN ROW EXCLUSIVE MODE');
      starting = serveGateway({ DATA_DIR: second.dir, DATABASE_URL: database.toString() });
      starting.catch(() => undefined);
      // the replica's migration waits on the table; held for twice the deadline from then
      for (let polls = 0; polls < 200; polls++) {
        const waiting = await other.query("SELECT 1 FROM pg_locks l JOIN pg_class c ON c.oid = l.relation WHERE c.relname = 'recs_events' AND NOT l.granted");
        if (waiting.rowCount) break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    } finally {
      await other.query('COMMIT');
    }
    try {
      const { gateway: replica } = await starting;
      await replica.stop();
    } finally {
      second.remove();
    }
  }, 30_000);
});
