import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { StoreBusyError } from '../../../src/backends/embedded/dataFiles.js';
import { PostgresRecsStore, writeLockFor } from '../../../src/backends/embedded/postgresRecsStore.js';
import { parseItemRecord } from '../../../src/model/itemRecord.js';
import type { RecEvent } from '../../../src/recommender/index.js';
import { DATABASE_URL, dropSchema, testSchema } from '../../helpers/stores.js';

/*
 * PostgreSQL's advisory locks are the database's, not a schema's: the write lock every write to a
 * store takes is keyed by the store's schema, so that gateways keeping their stores in schemas of
 * their own in one database (deployments, test runs beside each other) do not hold each other's
 * writes. Found by two copies of the test suite run at once: one's session holding its store's
 * lock made the other's writes busy (503).
 */
const event = (itemId: number, session: string): RecEvent => ({ kind: 'view', session, user: null, itemId, time: Date.now(), orderId: null });

describe('the PostgreSQL store\'s write lock, a schema\'s own', () => {
  const disposals: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const dispose of disposals.reverse()) await dispose();
  });

  /** A store in a schema of its own, whose writes wait at most 300 ms for the lock. */
  async function store(schema = testSchema()): Promise<{ store: PostgresRecsStore; schema: string }> {
    disposals.push(() => dropSchema(schema));
    const opened = new PostgresRecsStore({ connectionString: DATABASE_URL, schema, lockTimeoutMs: 300 });
    disposals.push(() => opened.close());
    await opened.migrate();
    return { store: opened, schema };
  }

  it('is held by writes to its own schema only', async () => {
    const a = await store();
    const b = await store();
    const holder = new pg.Client({ connectionString: DATABASE_URL });
    await holder.connect();
    disposals.push(() => holder.end());
    await holder.query('BEGIN');
    try {
      await holder.query('SELECT pg_advisory_xact_lock($1)', [writeLockFor(a.schema)]);
      // a's writes wait for it and are answered busy past their wait; b's go on
      await expect(a.store.appendEvents([event(1, 'a')])).rejects.toBeInstanceOf(StoreBusyError);
      await expect(a.store.upsertItems([parseItemRecord({ itemId: 1, name: 'A' })])).rejects.toBeInstanceOf(StoreBusyError);
      expect(await b.store.appendEvents([event(1, 'b')])).toHaveLength(1);
      expect(await b.store.upsertItems([parseItemRecord({ itemId: 1, name: 'B' })])).toBeGreaterThan(0);
    } finally {
      await holder.query('COMMIT');
    }
    expect(await a.store.appendEvents([event(1, 'a')])).toHaveLength(1);
  }, 30_000);

  it('keeps, in public, the key gateways of earlier versions take, and gives other schemas keys of their own', () => {
    expect(writeLockFor('public')).toBe('7311923021');
    expect(writeLockFor(null)).toBe('7311923021');
    const keys = new Set(['recs_a', 'recs_b', 'tenant_1', 'Public'].map(writeLockFor));
    expect(keys.size).toBe(4);
    expect(keys.has('7311923021')).toBe(false);
    for (const key of keys) expect(BigInt(key) >= -(2n ** 63n) && BigInt(key) < 2n ** 63n).toBe(true);
  });
});
