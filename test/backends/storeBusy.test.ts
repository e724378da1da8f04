import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuthorization } from '../../src/auth/authorization.js';
import { createEmbeddedBackend, STORE_BUSY_RETRY_AFTER_S } from '../../src/backends/embedded/index.js';
import { SqliteKeyStore } from '../../src/backends/embedded/keys/sqliteStore.js';
import { addUser } from '../../src/backends/embedded/keys/users.js';
import { openEmbeddedRecs, type EmbeddedRecs } from '../../src/backends/embedded/recs.js';
import { DB_FILE } from '../../src/backends/embedded/store.js';
import { MemoryCache } from '../../src/cache/memory.js';
import { loadConfig } from '../../src/config/env.js';
import { createGateway, type Gateway } from '../../src/http/server.js';
import { openBackend } from '../../src/main.js';
import { codeOf, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { NO_RATE_LIMITS } from '../helpers/processes.js';
import { TEST_COST, tempDir } from '../helpers/stores.js';

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

describe('the gateway as serve makes it, while another process holds the write lock of its recs.db', () => {
  const data = tempDir('recs-busy-serve-');
  let gateway: Gateway;
  let url: string;
  let admin: string;
  beforeAll(async () => {
    const config = loadConfig({ ...NO_RATE_LIMITS, DATA_DIR: data.dir, REQUEST_DEADLINE_MS: '500', RECS_FOLLOW_INTERVAL_MS: '0' });
    const cache = new MemoryCache();
    const backend = await openBackend(config, { cache, onFirstAdmin: (password) => (admin = basicAuthorization('admin', password)) });
    gateway = await createGateway({ config, backend, cache });
    url = await gateway.listen(0, '127.0.0.1');
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
