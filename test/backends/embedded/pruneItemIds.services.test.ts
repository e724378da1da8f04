import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { PostgresRecsStore, writeLockFor } from '../../../src/backends/embedded/postgresRecsStore.js';
import { DB_FILE, RecsStore } from '../../../src/backends/embedded/store.js';
import type { RecEvent } from '../../../src/recommender/index.js';
import { DATABASE_URL, dropSchema, tempDir, testSchema } from '../../helpers/stores.js';

/*
 * A prune's recount of the stored item ids (recs_item_ids and recs_meta 'itemIds' on PostgreSQL,
 * item_ids and meta on SQLite: what RECS_MAX_ITEMS is checked against): its scan of the events is
 * made without the write lock, and writes that name an id it would drop, made meanwhile, keep that
 * id, counted.
 */

const DAY = 86_400_000;
const MAX_AGE = 90 * DAY;

const event = (itemId: number, daysAgo: number, session: string): RecEvent => ({
  kind: 'view', session, user: null, itemId, time: Date.now() - daysAgo * DAY, orderId: null,
});

/** The ids recs_item_ids holds, the count recs_meta keeps, and the ids events and records name. */
async function itemIds(client: pg.Client, schema: string): Promise<{ held: number[]; counted: number; named: number[] }> {
  const held = await client.query<{ id: string }>(`SELECT item_id AS id FROM ${schema}.recs_item_ids ORDER BY 1`);
  const counted = await client.query<{ value: string }>(`SELECT value FROM ${schema}.recs_meta WHERE key = 'itemIds'`);
  const named = await client.query<{ id: string }>(
    `SELECT item_id AS id FROM ${schema}.recs_events UNION SELECT item_id FROM ${schema}.recs_items ORDER BY 1`);
  return { held: held.rows.map((r) => Number(r.id)), counted: Number(counted.rows[0]!.value), named: named.rows.map((r) => Number(r.id)) };
}

/**
 * A prune with writes racing it that name ids it would drop. Items 1 to 300 are named only by
 * 30,000 events too old to count (more than one of the prune's deletions: 20,000 rows), 1000 by a
 * recent one; 40 writes of 3 events each, 4 at a time, name ids among the old ones and new ones
 * (2000 to 2039) while the prune runs. Afterwards 121 ids are named: 1000, the 80 old ones written
 * again, the 40 new ones.
 */
async function pruneRacedByWrites(store: Pick<PostgresRecsStore, 'appendEvents' | 'pruneEvents'>): Promise<void> {
  const old = Array.from({ length: 30_000 }, (_, i) => event((i % 300) + 1, 200, `old-${i % 3000}`));
  for (let at = 0; at < old.length; at += 5_000) await store.appendEvents(old.slice(at, at + 5_000));
  await store.appendEvents([event(1000, 1, 'new')]);
  const writes = Array.from({ length: 40 }, (_, w) => [event(w * 7 + 1, 0, `w-${w}`), event(w * 7 + 2, 0, `w-${w}`), event(2000 + w, 0, `w-${w}`)]);
  const writer = async (lane: number): Promise<void> => {
    for (let w = lane; w < writes.length; w += 4) await store.appendEvents(writes[w]!);
  };
  const [pruned] = await Promise.all([store.pruneEvents(MAX_AGE), ...[0, 1, 2, 3].map(writer)]);
  expect(pruned.removed).toBe(old.length);
}

/**
 * Waits (at most 200 looks, 25 ms apart) until a session waits behind the session `pid` on a
 * statement starting with `text`; asked on `client`, outside the holder's transaction (which sees
 * pg_stat_activity as it was when it first looked).
 */
async function waitingBehind(client: pg.Client, pid: number, text: string): Promise<void> {
  for (let look = 0; look < 200; look++) {
    const { rows } = await client.query(
      'SELECT 1 FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid)) AND left(query, $3) = $2', [pid, text, text.length]);
    if (rows.length > 0) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`no session came to wait behind the lock on: ${text}`);
}

describe('prune events on PostgreSQL: the item ids no event or record names any more', () => {
  const disposals: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const dispose of disposals.reverse()) await dispose();
  });

  async function fresh(): Promise<{ store: PostgresRecsStore; schema: string; client: pg.Client }> {
    const schema = testSchema();
    disposals.push(() => dropSchema(schema));
    const store = new PostgresRecsStore({ connectionString: DATABASE_URL, schema, max: 8 });
    disposals.push(() => store.close());
    await store.migrate();
    const client = new pg.Client({ connectionString: DATABASE_URL });
    await client.connect();
    disposals.push(() => client.end());
    return { store, schema, client };
  }

  it('an event naming an id the prune found unnamed, written between its scan and its deletion, keeps the id', async () => {
    const { store, schema, client } = await fresh();
    // items 1 to 20 named only by events too old to count; 1000 by a recent one
    await store.appendEvents([...Array.from({ length: 20 }, (_, i) => event(i + 1, 200, `old-${i}`)), event(1000, 1, 'new')]);
    expect((await itemIds(client, schema)).counted).toBe(21);

    // the write lock held here: a write naming item 7 queues for it, then the prune, its scan made
    const holder = new pg.Client({ connectionString: DATABASE_URL });
    await holder.connect();
    disposals.push(() => holder.end());
    const pid = (await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    await holder.query('BEGIN');
    await holder.query('SELECT pg_advisory_xact_lock($1)', [writeLockFor(schema)]);
    let writing: Promise<unknown> | undefined;
    let pruning: Promise<{ removed: number }> | undefined;
    try {
      writing = store.appendEvents([event(7, 0, 'late')]);
      await waitingBehind(client, pid, 'WITH lock AS MATERIALIZED');
      pruning = store.pruneEvents(MAX_AGE);
      await waitingBehind(client, pid, 'SELECT pg_advisory_xact_lock($1)');
    } finally {
      await holder.query('COMMIT');
    }
    await writing;
    expect((await pruning).removed).toBe(20);

    const after = await itemIds(client, schema);
    expect(after.named).toEqual([7, 1000]);
    expect(after).toEqual({ held: after.named, counted: 2, named: after.named });
  }, 30_000);

  it('with writes racing it that name ids it would drop, the count is the ids named, exactly', async () => {
    const { store, schema, client } = await fresh();
    await pruneRacedByWrites(store);
    const after = await itemIds(client, schema);
    expect(after.named.length).toBe(121);
    expect(after).toEqual({ held: after.named, counted: after.named.length, named: after.named });
  }, 60_000);
});

describe('prune events on SQLite: the item ids no event or record names any more', () => {
  const disposals: (() => void)[] = [];
  afterAll(() => {
    for (const dispose of disposals.reverse()) dispose();
  });

  /** A store in a DATA_DIR of its own, and a second connection to its file (another process's, as far as SQLite knows). */
  function fresh(): { store: RecsStore; other: Database.Database } {
    const dir = tempDir('recs-prune-ids-');
    disposals.push(dir.remove);
    const store = RecsStore.open(dir.dir);
    disposals.push(() => void store.close());
    const other = new Database(join(dir.dir, DB_FILE));
    disposals.push(() => other.close());
    return { store, other };
  }

  const itemIdsOf = (db: Database.Database): { held: number[]; counted: number; named: number[] } => ({
    held: db.prepare('SELECT item_id FROM item_ids ORDER BY 1').pluck().all() as number[],
    counted: db.prepare("SELECT value FROM meta WHERE key = 'itemIds'").pluck().get() as number,
    named: db.prepare('SELECT item_id FROM events UNION SELECT item_id FROM items ORDER BY 1').pluck().all() as number[],
  });

  // a replacing import may delete the newest events, and rowids are then taken again below the
  // last one the scan saw: it bumps the generation, and the prune recounts under the lock instead
  it.each([
    ['a write', 'INSERT INTO events (import_id, kind, item_id, session, user, order_id, time) VALUES (0, 0, 7, NULL, NULL, NULL, ?)'],
    ['a replacing import (a rowid below the last the scan saw)', `INSERT INTO meta (key, value) VALUES ('generation', 1) ON CONFLICT (key) DO UPDATE SET value = value + 1;
      INSERT INTO events (rowid, import_id, kind, item_id, session, user, order_id, time) VALUES (5, 0, 0, 7, NULL, NULL, NULL, ?)`],
  ])('an event naming an id the prune found unnamed, stored by %s between its scan and its deletion, keeps the id', async (_what, sql) => {
    const { store, other } = fresh();
    await store.appendEvents([...Array.from({ length: 20 }, (_, i) => event(i + 1, 200, `old-${i}`)), event(1000, 1, 'new')]);
    expect(itemIdsOf(other).counted).toBe(21);

    // once the prune's scan is made (its one read transaction), another process takes the write
    // lock and stores an event naming item 7 (held by item_ids still, so it adds none) before the prune has it
    const transaction = store.db.transaction.bind(store.db);
    let written: Promise<void> | undefined;
    store.db.transaction = ((fn: (...args: never[]) => unknown) => {
      const made = transaction(fn);
      return Object.assign((...args: never[]) => {
        const result = made(...args);
        other.exec('BEGIN IMMEDIATE');
        const statements = sql.split(';');
        for (const statement of statements.slice(0, -1)) other.exec(statement);
        other.prepare(statements.at(-1)!).run(Date.now());
        written = new Promise((resolve) => setTimeout(() => resolve(void other.exec('COMMIT')), 50));
        return result;
      }, made);
    }) as typeof store.db.transaction;
    const pruned = await store.pruneEvents(MAX_AGE);
    await written;
    expect(pruned.removed).toBe(20);

    const after = itemIdsOf(other);
    expect(after.named).toEqual([7, 1000]);
    expect(after).toEqual({ held: after.named, counted: 2, named: after.named });
  }, 30_000);

  it('with writes racing it that name ids it would drop, the count is the ids named, exactly', async () => {
    const { store, other } = fresh();
    await pruneRacedByWrites(store);
    const after = itemIdsOf(other);
    expect(after.named.length).toBe(121);
    expect(after).toEqual({ held: after.named, counted: after.named.length, named: after.named });
  }, 60_000);
});
