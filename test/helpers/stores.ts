import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll } from 'vitest';
import { PostgresKeyStore } from '../../src/backends/embedded/keys/postgresStore.js';
import { SqliteKeyStore } from '../../src/backends/embedded/keys/sqliteStore.js';
import type { KeyStore } from '../../src/backends/embedded/keys/store.js';
import type { ScryptCost } from '../../src/backends/embedded/keys/passwords.js';
import type { RecsSource } from '../../src/backends/embedded/liveStore.js';

/** The PostgreSQL of this machine (trust auth, database test); each test store gets its own schema. */
export const DATABASE_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** Cheap hashes for tests: the cost travels with each hash, so verification works the same. */
export const TEST_COST: ScryptCost = { N: 1024, r: 8, p: 1 };

export interface StoreKind {
  name: 'sqlite' | 'postgres';
  /** A fresh, empty store, and how to throw it away. */
  open(): Promise<{ store: KeyStore; dispose: () => Promise<void> }>;
}

/** Counts the store's key lookups from now on: how often the key service did not trust a kept key. */
export function countKeyLookups(store: KeyStore): () => number {
  let lookups = 0;
  const find = store.findKeyByHash.bind(store);
  store.findKeyByHash = (hash) => {
    lookups += 1;
    return find(hash);
  };
  return () => lookups;
}

export function tempDir(prefix = 'recs-gateway-test-'): { dir: string; remove: () => void } {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Makes temporary directories for one test file, removed after its last test (call it at the top of a describe). */
export function scratchDirs(): () => string {
  const made: { remove: () => void }[] = [];
  afterAll(() => {
    for (const d of made) d.remove();
  });
  return () => {
    const d = tempDir();
    made.push(d);
    return d.dir;
  };
}

export const testSchema = (): string => `recs_test_${randomBytes(6).toString('hex')}`;

export async function dropSchema(schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: DATABASE_URL });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  } finally {
    await client.end();
  }
}

export const storeKinds: StoreKind[] = [
  {
    name: 'sqlite',
    async open() {
      const { dir, remove } = tempDir();
      const store = new SqliteKeyStore(path.join(dir, 'keys.db'));
      await store.migrate();
      return {
        store,
        async dispose() {
          await store.close();
          remove();
        },
      };
    },
  },
  {
    name: 'postgres',
    async open() {
      const schema = testSchema();
      const store = new PostgresKeyStore({ connectionString: DATABASE_URL, schema, max: 20 });
      await store.migrate();
      return {
        store,
        async dispose() {
          // the store may have been closed by whoever owned it (a gateway): drop on a connection of our own
          await store.close().catch(() => undefined);
          await dropSchema(schema);
        },
      };
    },
  },
];

/** A fresh recommender store: a DATA_DIR of its own (SQLite), or a PostgreSQL schema of its own. */
export interface FreshRecsStore {
  source: RecsSource;
  /** What openEmbeddedRecs and the CLI commands take to reach it. */
  io: { dataDir: string; databaseUrl?: string; schema?: string };
  dispose(): Promise<void>;
}

export const recsStoreKinds: { name: 'sqlite' | 'postgres'; fresh: (prefix: string) => FreshRecsStore }[] = [
  {
    name: 'sqlite',
    fresh: (prefix) => {
      const { dir, remove } = tempDir(`${prefix}-`);
      return { source: { kind: 'sqlite', dataDir: dir }, io: { dataDir: dir }, dispose: () => Promise.resolve(remove()) };
    },
  },
  {
    name: 'postgres',
    fresh: (prefix) => {
      const schema = testSchema();
      const { dir, remove } = tempDir(`${prefix}-pg-`);
      return {
        source: { kind: 'postgres', connectionString: DATABASE_URL, schema },
        io: { dataDir: dir, databaseUrl: DATABASE_URL, schema },
        async dispose() {
          await dropSchema(schema);
          remove();
        },
      };
    },
  },
];

/** A store two `recs-gateway serve` processes share: each one's environment, the store to read, and its removal. */
export interface SharedRecsStore {
  env: (i: number) => Record<string, string>;
  source: RecsSource;
  dispose: () => Promise<void>;
}

/**
 * The stores replicas share (PostgreSQL: one schema, keys and recommender data alike, each process
 * a DATA_DIR of its own; SQLite: one DATA_DIR), each process's environment `env` and where its store is.
 */
export const sharedRecsStoreKinds = (prefix: string, env: Record<string, string>): { name: 'sqlite' | 'postgres'; open: () => Promise<SharedRecsStore> }[] => [
  {
    name: 'sqlite',
    open: () => {
      const data = tempDir(`${prefix}-`);
      return Promise.resolve({
        env: () => ({ ...env, DATA_DIR: data.dir, DATABASE_URL: '' }),
        source: { kind: 'sqlite', dataDir: data.dir } as const,
        dispose: () => Promise.resolve(data.remove()),
      });
    },
  },
  {
    name: 'postgres',
    async open() {
      const schema = testSchema();
      const client = new pg.Client({ connectionString: DATABASE_URL });
      await client.connect();
      await client.query(`CREATE SCHEMA ${schema}`);
      await client.end();
      const url = new URL(DATABASE_URL);
      url.searchParams.set('options', `-c search_path=${schema}`);
      const dirs = [tempDir(`${prefix}-pg-a-`), tempDir(`${prefix}-pg-b-`)];
      return {
        env: (i) => ({ ...env, DATA_DIR: dirs[i]!.dir, DATABASE_URL: url.toString() }),
        source: { kind: 'postgres', connectionString: DATABASE_URL, schema },
        async dispose() {
          for (const d of dirs) d.remove();
          await dropSchema(schema);
        },
      };
    },
  },
];
