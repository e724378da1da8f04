import { createHash } from 'node:crypto';
import type pg from 'pg';
import { PAST_ITEM_CAP } from './postgresWrites.js';

// any constants will do: they only have to be the same in every process
const MIGRATION_LOCK = 7_311_923_020;
/** Every write to events and items takes this lock first, so that ids become visible in order and
 * a follower never reads past one committed later. Public's key; other schemas have their own (writeLockFor). */
const WRITE_LOCK = 7_311_923_021;

/** The write lock's key for `schema`: an advisory lock is the database's, so stores in other
 * schemas need keys of their own; public keeps the one earlier versions take (rolling upgrades). */
export function writeLockFor(schema: string | null): string {
  if (schema === null || schema === 'public') return String(WRITE_LOCK);
  return createHash('sha256').update(`recs-gateway write lock\0${schema}`).digest().readBigInt64BE(0).toString();
}

const SCHEMA_SQL = `
CREATE TABLE IF NOT EXISTS recs_items (item_id bigint PRIMARY KEY, record text NOT NULL, seq bigint NOT NULL);
CREATE INDEX IF NOT EXISTS recs_items_by_seq ON recs_items (seq);
CREATE TABLE IF NOT EXISTS recs_imports (
  id bigserial PRIMARY KEY, what text NOT NULL, format text NOT NULL, file text NOT NULL, sha256 text NOT NULL,
  records bigint NOT NULL DEFAULT 0, skipped bigint NOT NULL DEFAULT 0, started_at timestamptz NOT NULL, finished_at timestamptz);
CREATE TABLE IF NOT EXISTS recs_keys (id bigserial PRIMARY KEY, ns smallint NOT NULL, name text NOT NULL, UNIQUE (ns, name));
CREATE TABLE IF NOT EXISTS recs_events (
  id bigserial PRIMARY KEY, import_id bigint NOT NULL, kind smallint NOT NULL, item_id bigint NOT NULL,
  session bigint, user_id bigint, order_id bigint, time bigint NOT NULL);
CREATE INDEX IF NOT EXISTS recs_events_by_import ON recs_events (import_id);
CREATE INDEX IF NOT EXISTS recs_events_by_session ON recs_events (session, time, id) WHERE session IS NOT NULL;
CREATE INDEX IF NOT EXISTS recs_events_by_user ON recs_events (user_id, time, id) WHERE user_id IS NOT NULL;
CREATE TABLE IF NOT EXISTS recs_meta (key text PRIMARY KEY, value bigint NOT NULL);
`;

/** Every item id the rows name (RECS_MAX_ITEMS), counted in recs_meta so that a write need not count. */
const ITEM_IDS_SQL = 'CREATE TABLE IF NOT EXISTS recs_item_ids (item_id bigint PRIMARY KEY)';
const FILL_ITEM_IDS_SQL = `
INSERT INTO recs_item_ids (item_id) SELECT item_id FROM recs_items UNION SELECT item_id FROM recs_events ON CONFLICT DO NOTHING;
INSERT INTO recs_meta (key, value) SELECT 'itemIds', count(*) FROM recs_item_ids ON CONFLICT (key) DO UPDATE SET value = excluded.value;
`;
/** The cap's refusal, raised inside the write's one statement so that all of it rolls back. */
const ITEM_ROOM_SQL = `
CREATE FUNCTION recs_item_room(held bigint, fresh bigint, max_items bigint) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  IF max_items IS NOT NULL AND fresh > 0 AND held > max_items THEN
    RAISE EXCEPTION USING ERRCODE = '${PAST_ITEM_CAP}', MESSAGE = 'RECS_MAX_ITEMS', DETAIL = format('%s %s %s', held - fresh, fresh, max_items);
  END IF;
  RETURN true;
END $$`;

/** Creates or brings up to date the tables, inside a transaction; the store's write lock key. */
export async function migrateTables(client: pg.PoolClient, schema: string | undefined): Promise<string> {
  // CREATE INDEX IF NOT EXISTS waits for an import's move whatever lockTimeoutMs, which bounds requests
  await client.query('SET LOCAL lock_timeout = 0');
  await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
  if (schema) await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
  await client.query(SCHEMA_SQL);
  const { rows: [where] } = await client.query<{ schema: string | null }>('SELECT current_schema() AS schema');
  const lock = writeLockFor(where?.schema ?? null);
  const { rows: [had] } = await client.query<{ ids: boolean; room: boolean }>(
    "SELECT to_regclass('recs_item_ids') IS NOT NULL AS ids, to_regprocedure('recs_item_room(bigint, bigint, bigint)') IS NOT NULL AS room");
  if (!had!.room) await client.query(ITEM_ROOM_SQL);
  if (!had!.ids) {
    // the rows as they stand: writers of an earlier version, which do not add to it, held off meanwhile
    await client.query('SELECT pg_advisory_xact_lock($1)', [lock]);
    await client.query(ITEM_IDS_SQL);
    await client.query(FILL_ITEM_IDS_SQL);
  }
  // an eventId's time, for prunes; asked first, as ALTER TABLE takes its lock even when it changes
  // nothing and would hold every replica's writes behind it
  const { rowCount } = await client.query("SELECT 1 FROM pg_attribute WHERE attrelid = 'recs_keys'::regclass AND attname = 'time' AND NOT attisdropped");
  if (rowCount === 0) await client.query('ALTER TABLE recs_keys ADD COLUMN time bigint');
  return lock;
}
