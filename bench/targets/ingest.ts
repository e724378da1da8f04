/**
 * A benchmark target (not a test) for bench/ingest.ts: a gateway taking events, in one of three
 * shapes (BENCH_INGEST):
 *   raw      a bare node:http server that reads the body, parses its JSON and answers
 *            {"accepted": n}: the floor any JSON-over-HTTP ingestion pays (the reference)
 *   noop     the gateway (compiled dist/) on the embedded backend, whose ingestion checks the
 *            caller and the batch (EmbeddedIngest, checkEvents) and applies it to nothing: the
 *            HTTP + GraphQL/REST + validation path alone
 *   standin  the embedded backend without a store (DATA_DIR unset): the demo shop in memory,
 *            each batch applied to the live model (recommender/live.ts), nothing stored (the
 *            store in memory of test/helpers/memoryIngest.ts)
 *   sqlite   the embedded backend as `recs-gateway serve` runs it with DATA_DIR: each batch
 *            committed to DATA_DIR/recs.db (WAL, synchronous=FULL), then applied to the live
 *            model (the demo shop plus the stored events), then answered
 *   pg       the same on PostgreSQL (BENCH_DATABASE_URL or the local test database, in a
 *            schema of its own, dropped at the end)
 * Prints one JSON line {"url", "key"} once it listens; key is an administrator's API key.
 */
import http from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import type * as AuthModule from '../../src/auth/authorization.js';
import type * as EmbeddedModule from '../../src/backends/embedded/index.js';
import type * as RecsModule from '../../src/backends/embedded/openRecs.js';
import type * as StoreModule from '../../src/backends/embedded/keys/sqliteStore.js';
import type * as UsersModule from '../../src/backends/embedded/keys/users.js';
import type * as ConfigModule from '../../src/config/env.js';
import type * as ServerModule from '../../src/http/server.js';
import type { LiveRecs } from '../../src/backends/embedded/index.js';
import type { EventRow } from '../../src/backends/embedded/liveStore.js';
import { inMemoryStore } from '../../test/helpers/memoryIngest.js';

// the compiled dist/ (bench/ingest.ts builds it first), as `npm start` runs it
const dist = (file: string): string => new URL(`../../dist/${file}`, import.meta.url).href;
const mode = process.env.BENCH_INGEST ?? 'noop';

// bench/ingest.ts asks for the memory the process holds (after a full collection: it runs this with --expose-gc)
process.on('SIGUSR2', () => {
  (globalThis as { gc?: () => void }).gc?.();
  const m = process.memoryUsage();
  console.log(JSON.stringify({ retainedMb: (m.heapUsed + m.external) / 1048576 }));
});

if (mode === 'raw') {
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
      const events = Array.isArray(body) ? body : (body as { variables: { events: unknown[] } }).variables.events;
      const text = JSON.stringify({ accepted: events.length });
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
      res.end(text);
    });
  });
  server.listen(0, '127.0.0.1', () => {
    console.log(JSON.stringify({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, key: 'none' }));
  });
} else {
  const { loadConfig } = (await import(dist('config/env.js'))) as typeof ConfigModule;
  const { createGateway } = (await import(dist('http/server.js'))) as typeof ServerModule;
  const { createEmbeddedBackend, EmbeddedIngest } = (await import(dist('backends/embedded/index.js'))) as typeof EmbeddedModule;
  const { openEmbeddedRecs } = (await import(dist('backends/embedded/openRecs.js'))) as typeof RecsModule;
  const { SqliteKeyStore } = (await import(dist('backends/embedded/keys/sqliteStore.js'))) as typeof StoreModule;
  const { addUser } = (await import(dist('backends/embedded/keys/users.js'))) as typeof UsersModule;
  const { basicAuthorization } = (await import(dist('auth/authorization.js'))) as typeof AuthModule;

  const dir = mkdtempSync(path.join(os.tmpdir(), 'recs-gateway-bench-ingest-'));
  const store = new SqliteKeyStore(path.join(dir, 'keys.db'));
  await store.migrate();
  await addUser(store, { username: 'root', password: 'root-password', isAdmin: true }, { N: 1024, r: 8, p: 1 });
  const schema = `bench_ingest_${process.pid}`;
  const databaseUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  const recs = await openEmbeddedRecs(
    mode === 'sqlite' ? { dataDir: dir } : mode === 'pg' ? { dataDir: dir, databaseUrl, schema } : { dataDir: null },
  );
  const backend = createEmbeddedBackend(store, recs);
  if (mode === 'noop') backend.ingest = new EmbeddedIngest(storesNothing(recs.catalog, recs.itemCount));
  if (mode === 'standin') backend.ingest = new EmbeddedIngest(inMemoryStore(recs));
  const root = await backend.keys.authenticate(basicAuthorization('root', 'root-password'));
  const { key } = await backend.keys.createKey(root, { name: 'bench' });
  const gateway = await createGateway({ config: loadConfig({ ...process.env, DATA_DIR: dir }), backend });
  const url = await gateway.listen(0, '127.0.0.1');
  console.log(JSON.stringify({ url, key }));
  process.once('SIGTERM', () => void gateway.stop().then(async () => {
    if (mode === 'pg') {
      const { default: pg } = await import('pg');
      const client = new pg.Client({ connectionString: databaseUrl });
      await client.connect();
      await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await client.end();
    }
    rmSync(dir, { recursive: true, force: true });
    process.exit(0);
  }));
}

/** Ingestion's checks alone: a call is answered as stored, and nothing is kept or applied. */
function storesNothing(catalog: LiveRecs['catalog'], itemCount: number): LiveRecs {
  return {
    store: {
      appendEvents: (events) => Promise.resolve(events.map((e, i): EventRow => [i + 1, 0, e.itemId, -1, -1, -1, e.time])),
      upsertItems: () => Promise.resolve(0),
    },
    catalog,
    itemCount,
    newItemCount: () => 0,
    applyOwnEvents: () => Promise.resolve(),
    applyOwnItems: () => Promise.resolve(),
  };
}
