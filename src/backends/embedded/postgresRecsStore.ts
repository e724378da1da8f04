import { createHash } from 'node:crypto';
import type pg from 'pg';
import { toItemRecord } from '../../ports/itemRecord.js';
import type { ItemModel } from '../../ports/backend.js';
import { StoreBusyError, StoreFullError, StoreOpenError } from './dataFiles.js';
import { KIND_PURCHASE, KIND_VIEW } from '../../recommender/index.js';
import type { RecEvent } from '../../recommender/index.js';
import { describeDatabase, openPool, postgresReason } from './keys/postgresStore.js';
import type { EventRow, ImportRecord, ImportSession, ItemCap, RecsDataStore, SnapshotSink, StoreHead } from './liveStore.js';
import { NS_EVENT, NS_ORDER, NS_SESSION, NS_USER, PRUNE_ROWS, withoutRepeatedIds } from './liveStore.js';

export interface PostgresRecsStoreOptions {
  connectionString: string;
  /** A schema to keep the tables in (created when missing); default: the connection's search_path. */
  schema?: string;
  /** Pool size; default 4 (writes are serialised anyway, see WRITE_LOCK). */
  max?: number;
  /**
   * How long a write waits for WRITE_LOCK (another process's write, an import's final move)
   * before it fails with StoreBusyError, nothing of it kept; default: as long as it takes.
   */
  lockTimeoutMs?: number;
}

/** PostgreSQL's SQL state for a lock wait past lock_timeout. */
const LOCK_NOT_AVAILABLE = '55P03';

/** The SQL state recs_item_room raises (ours: PostgreSQL's classes are digits and capitals, and none is RM). */
const PAST_ITEM_CAP = 'RMI01';

/**
 * A write, its failure as the gateway answers it: a lock wait past lockTimeoutMs is StoreBusyError
 * (503, retry); the cap's refusal (recs_item_room) is StoreFullError (400).
 */
async function busyOnLockTimeout<T>(write: Promise<T>): Promise<T> {
  try {
    return await write;
  } catch (error) {
    const { code, detail } = error as { code?: unknown; detail?: unknown };
    if (code === PAST_ITEM_CAP && typeof detail === 'string') {
      const [held, fresh, maxItems] = detail.split(' ').map(Number);
      throw new StoreFullError(fresh!, held!, maxItems!);
    }
    if (code !== LOCK_NOT_AVAILABLE) throw error;
    throw new StoreBusyError('another process has held the PostgreSQL store\'s write lock for longer than the request may wait', { cause: error });
  }
}

// any constants will do: they only have to be the same in every process
const MIGRATION_LOCK = 7_311_923_020;
/**
 * Every write to the events and items takes this transaction lock first. Ids come from sequences
 * at insert time, and without it a transaction could commit ids below ones a follower has already
 * read past (id 7 committing after id 8 was read): under it, ids become visible in order. It costs
 * parallelism between writers, which PostgreSQL would spend on the same index pages anyway.
 *
 * An advisory lock is the database's, not a schema's: with one key for every schema, gateways of
 * different deployments (or test runs) sharing a database in schemas of their own held each
 * other's writes, and a session holding one store's lock made another's writes busy. So the key
 * is the store's schema's (writeLockFor); `public`, where a gateway keeps its tables unless told
 * otherwise, keeps this one, which gateways of earlier versions take, so that they and newer ones
 * still exclude each other there during a rolling upgrade. (In a schema of its own, a gateway of
 * an earlier version and a newer one do not, until the earlier ones are gone.)
 */
const WRITE_LOCK = 7_311_923_021;

/**
 * The write lock's key for the store in `schema` (PostgreSQL's current_schema() of its
 * connections; null when none of its search_path exists): WRITE_LOCK for `public` (and null), a
 * key of the schema's name for any other. A bigint, as text.
 */
export function writeLockFor(schema: string | null): string {
  if (schema === null || schema === 'public') return String(WRITE_LOCK);
  return createHash('sha256').update(`recs-gateway write lock\0${schema}`).digest().readBigInt64BE(0).toString();
}
/** Rows a statement when moving staged rows or paging a snapshot. */
const PAGE = 50_000;

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
CREATE TABLE IF NOT EXISTS recs_meta (key text PRIMARY KEY, value bigint NOT NULL);
`;

/**
 * recs_item_ids: every item id a stored event or record names (what each replica's model holds,
 * RECS_MAX_ITEMS), kept with the rows under WRITE_LOCK, and counted in recs_meta 'itemIds', so
 * that a write knows the count without counting. Filled from the rows when a migration makes it.
 */
const ITEM_IDS_SQL = 'CREATE TABLE IF NOT EXISTS recs_item_ids (item_id bigint PRIMARY KEY)';
const FILL_ITEM_IDS_SQL = `
INSERT INTO recs_item_ids (item_id) SELECT item_id FROM recs_items UNION SELECT item_id FROM recs_events ON CONFLICT DO NOTHING;
INSERT INTO recs_meta (key, value) SELECT 'itemIds', count(*) FROM recs_item_ids ON CONFLICT (key) DO UPDATE SET value = excluded.value;
`;
/**
 * The cap's refusal, raised from inside the write's one statement (so that the whole statement
 * rolls back, its events or records with it): `held` the items after the write, `fresh` those it
 * added. A write adding none passes, as EmbeddedIngest's own check lets it.
 */
const ITEM_ROOM_SQL = `
CREATE FUNCTION recs_item_room(held bigint, fresh bigint, max_items bigint) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  IF max_items IS NOT NULL AND fresh > 0 AND held > max_items THEN
    RAISE EXCEPTION USING ERRCODE = '${PAST_ITEM_CAP}', MESSAGE = 'RECS_MAX_ITEMS', DETAIL = format('%s %s %s', held - fresh, fresh, max_items);
  END IF;
  RETURN true;
END $$`;

/**
 * The CTEs `fresh` (the ids of `ids` new to recs_item_ids, added) and `room` (one row, once the
 * count is raised by them; recs_item_room's error past `cap`), for a write that joins `room`.
 * Inside a statement that takes WRITE_LOCK, `source` is its lock CTE: the ids are then added under
 * it. New ids are found by the primary key's conflicts and the count raised with an upsert, both
 * of which see the rows other writers committed after the statement's snapshot (taken before it
 * waited for the lock), as a select would not.
 */
function itemRoomCtes(ids: string, cap: string, source = ''): string {
  return `fresh AS (INSERT INTO recs_item_ids (item_id) SELECT DISTINCT id FROM ${source}unnest(${ids}::bigint[]) AS f(id) ON CONFLICT DO NOTHING RETURNING 1),
    room AS (INSERT INTO recs_meta (key, value) SELECT 'itemIds', count(*) FROM fresh ON CONFLICT (key) DO UPDATE SET value = recs_meta.value + excluded.value
      RETURNING recs_item_room(value, (SELECT count(*) FROM fresh), ${cap}::bigint))`;
}

/** Inside a transaction holding WRITE_LOCK: the ids of `source`'s `column` join recs_item_ids, counted (imports: no cap). */
async function addItemIds(client: pg.PoolClient, source: string, column: string): Promise<void> {
  await client.query(`WITH fresh AS (INSERT INTO recs_item_ids (item_id) SELECT DISTINCT ${column} FROM ${source} ON CONFLICT DO NOTHING RETURNING 1)
    INSERT INTO recs_meta (key, value) SELECT 'itemIds', count(*) FROM fresh ON CONFLICT (key) DO UPDATE SET value = recs_meta.value + excluded.value`);
}

/**
 * Inside a transaction holding WRITE_LOCK (taken by an earlier statement, so this one's snapshot
 * sees every write): ids neither an event nor a record names any more leave recs_item_ids, and
 * the count is made again. After deletions (a replacing import, a prune); one scan of the events.
 */
async function recountItemIds(client: pg.PoolClient): Promise<void> {
  await client.query(`
    DELETE FROM recs_item_ids i WHERE NOT EXISTS (SELECT 1 FROM recs_items r WHERE r.item_id = i.item_id)
      AND NOT EXISTS (SELECT 1 FROM recs_events e WHERE e.item_id = i.item_id);
    INSERT INTO recs_meta (key, value) SELECT 'itemIds', count(*) FROM recs_item_ids ON CONFLICT (key) DO UPDATE SET value = excluded.value;`);
}

const EVENT_COLUMNS = 'id, kind, item_id, coalesce(session, -1), coalesce(user_id, -1), coalesce(order_id, -1), time';

/** The events ids an insert returned (first column; the second, where there is one, is the position of an event whose eventId was taken), ascending. */
function idsOf(rows: readonly (readonly (string | null)[])[]): number[] {
  const ids: number[] = [];
  for (const row of rows) if (row[0] !== null) ids.push(Number(row[0]));
  return ids.sort((a, b) => a - b);
}

/** The events' columns as arrays, for unnest: one round trip a batch whatever its size. */
function columns(events: readonly RecEvent[]): [number[], number[], (string | null)[], (string | null)[], (string | null)[], number[]] {
  const kind: number[] = [];
  const item: number[] = [];
  const session: (string | null)[] = [];
  const user: (string | null)[] = [];
  const order: (string | null)[] = [];
  const time: number[] = [];
  for (const e of events) {
    kind.push(e.kind === 'purchase' ? KIND_PURCHASE : KIND_VIEW);
    item.push(e.itemId);
    session.push(e.session);
    user.push(e.user);
    order.push(e.orderId);
    time.push(Math.round(e.time));
  }
  return [kind, item, session, user, order, time];
}

const UNNEST_EVENTS = 'unnest($1::smallint[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::bigint[]) WITH ORDINALITY AS e(kind, item, s, u, o, t, n)';

/** Names the keys of staged rows (`source` has columns s, u, o) and inserts the events, in order. */
function insertEventsSql(source: string, importIdParam: string): string[] {
  return [
    `INSERT INTO recs_keys (ns, name)
       SELECT DISTINCT ns, name FROM (SELECT 0 AS ns, s AS name FROM ${source} UNION ALL SELECT 1, u FROM ${source} UNION ALL SELECT 2, o FROM ${source}) k
       WHERE name IS NOT NULL ORDER BY ns, name ON CONFLICT DO NOTHING`,
    `INSERT INTO recs_events (import_id, kind, item_id, session, user_id, order_id, time)
       SELECT ${importIdParam}, e.kind, e.item, ks.id, ku.id, ko.id, e.t FROM ${source}
       LEFT JOIN recs_keys ks ON ks.ns = 0 AND ks.name = e.s
       LEFT JOIN recs_keys ku ON ku.ns = 1 AND ku.name = e.u
       LEFT JOIN recs_keys ko ON ko.ns = 2 AND ko.name = e.o
       ORDER BY e.n`,
  ];
}

const toRow = (r: unknown[]): EventRow => r.map(Number) as EventRow;

/** The names of each namespace without an id yet (-1), as the columns of unnest(ns, name). */
function unnamed(ids: readonly Map<string, number>[]): [number[], string[]] {
  const ns: number[] = [];
  const names: string[] = [];
  ids.forEach((m, n) => {
    for (const [name, id] of m) {
      if (id >= 0) continue;
      ns.push(n);
      names.push(name);
    }
  });
  return [ns, names];
}

/** Ids and records for unnest; the last record of an id sent twice wins (ON CONFLICT cannot touch a row twice). */
function itemColumns(items: readonly ItemModel[]): [number[], string[]] {
  const byId = new Map<number, string>();
  for (const item of items) byId.set(item.itemId, JSON.stringify(toItemRecord(item)));
  return [[...byId.keys()], [...byId.values()]];
}

/**
 * The recommender's data in PostgreSQL (DATABASE_URL, beside the users and keys): tables
 * recs_items, recs_events, recs_keys, recs_imports, recs_meta, with the same meaning as the SQLite
 * store's (see RecsStore). Every replica reads them at start-up and follows `recs_events.id` and
 * `recs_items.seq`.
 */
export class PostgresRecsStore implements RecsDataStore {
  readonly where: string;
  readonly kind = 'postgresql';
  private readonly pool: pg.Pool;
  private readonly schema: string | undefined;
  /** writeLockFor the schema the connections use, read once (lockKey). */
  private writeLock: Promise<string> | undefined;

  constructor(options: PostgresRecsStoreOptions) {
    this.pool = openPool({ connectionString: options.connectionString, schema: options.schema, max: options.max ?? 4, lockTimeoutMs: options.lockTimeoutMs });
    this.schema = options.schema;
    this.where = describeDatabase(options.connectionString);
  }

  /** Whether the tables are there (a prune makes none); StoreOpenError as migrate's. */
  async hasTables(): Promise<boolean> {
    try {
      const { rows } = await this.pool.query<{ there: boolean }>("SELECT to_regclass('recs_events') IS NOT NULL AS there");
      return rows[0]!.there;
    } catch (error) {
      throw new StoreOpenError(`cannot use PostgreSQL at ${this.where} (DATABASE_URL): ${postgresReason(error)}`, { cause: error });
    }
  }

  /**
   * The key of this store's write lock (writeLockFor its schema). Asked for before a transaction
   * takes a connection of the pool, never inside one: its first read takes a connection of its own.
   */
  private lockKey(): Promise<string> {
    this.writeLock ??= this.pool.query<{ schema: string | null }>('SELECT current_schema() AS schema').then(
      ({ rows }) => writeLockFor(rows[0]?.schema ?? null),
      (error: unknown) => {
        this.writeLock = undefined;
        throw error;
      },
    );
    return this.writeLock;
  }

  /** Creates the tables when missing; StoreOpenError (one line, no password) when PostgreSQL cannot be used. */
  async migrate(): Promise<void> {
    try {
      await this.transaction(async (client) => {
        // Start-up waits out an import's move, as it did before lockTimeoutMs: CREATE INDEX IF NOT
        // EXISTS takes a SHARE lock on its table even when the index is there, which the move's
        // inserts hold off for as long as it runs; lockTimeoutMs bounds a request's write, not this.
        await client.query('SET LOCAL lock_timeout = 0');
        await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
        if (this.schema) await client.query(`CREATE SCHEMA IF NOT EXISTS ${this.schema}`);
        await client.query(SCHEMA_SQL);
        const { rows: [where] } = await client.query<{ schema: string | null }>('SELECT current_schema() AS schema');
        const lock = writeLockFor(where?.schema ?? null);
        this.writeLock = Promise.resolve(lock);
        const { rows: [had] } = await client.query<{ ids: boolean; room: boolean }>(
          "SELECT to_regclass('recs_item_ids') IS NOT NULL AS ids, to_regprocedure('recs_item_room(bigint, bigint, bigint)') IS NOT NULL AS room");
        if (!had!.room) await client.query(ITEM_ROOM_SQL);
        if (!had!.ids) {
          // the rows as they stand: writers of an earlier version, which do not add to it, held off meanwhile
          await client.query('SELECT pg_advisory_xact_lock($1)', [lock]);
          await client.query(ITEM_IDS_SQL);
          await client.query(FILL_ITEM_IDS_SQL);
        }
        // an eventId's time, the first event's that took it (pruneEvents); null for the ids of a
        // schema of an earlier version, which are kept. Asked first: ALTER TABLE takes its lock
        // even when the column is there, and would hold every replica's writes behind it
        const { rowCount } = await client.query("SELECT 1 FROM pg_attribute WHERE attrelid = 'recs_keys'::regclass AND attname = 'time' AND NOT attisdropped");
        if (rowCount === 0) await client.query('ALTER TABLE recs_keys ADD COLUMN time bigint');
      });
    } catch (error) {
      throw new StoreOpenError(`cannot use PostgreSQL at ${this.where} (DATABASE_URL): ${postgresReason(error)}`, { cause: error });
    }
  }

  private async transaction<T>(body: (client: pg.PoolClient) => Promise<T>, begin = 'BEGIN'): Promise<T> {
    const client = await this.pool.connect();
    try {
      await client.query(begin);
      const result = await body(client);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }

  private static async bumpMeta(client: pg.PoolClient, key: string): Promise<number> {
    const { rows } = await client.query<{ value: string }>(
      'INSERT INTO recs_meta (key, value) VALUES ($1, 1) ON CONFLICT (key) DO UPDATE SET value = recs_meta.value + 1 RETURNING value', [key]);
    return Number(rows[0]!.value);
  }

  async head(): Promise<StoreHead> {
    return this.headOn(this.pool);
  }

  private async headOn(client: pg.Pool | pg.PoolClient): Promise<StoreHead> {
    const { rows } = await client.query<{ g: string | null; e: string | null; s: string | null }>(
      `SELECT (SELECT value FROM recs_meta WHERE key = 'generation') AS g, (SELECT max(id) FROM recs_events) AS e,
              (SELECT value FROM recs_meta WHERE key = 'itemSeq') AS s`);
    const row = rows[0]!;
    return { generation: Number(row.g ?? 0), lastEventId: Number(row.e ?? 0), lastItemSeq: Number(row.s ?? 0) };
  }

  /**
   * Two round trips, neither inside a transaction of its own making: the batch's keys are named
   * first, without the write lock; then one statement takes the lock, inserts the events and
   * commits (its own transaction: the lock is held for that statement and its commit only, never
   * across a round trip while this process builds the next statement's arrays).
   */
  async appendEvents(all: readonly RecEvent[], cap?: ItemCap): Promise<EventRow[]> {
    const events = withoutRepeatedIds(all);
    if (events.length === 0) return [];
    // a name another writer's transaction is adding (an import's move) is waited for as the lock is
    const ids = await busyOnLockTimeout(this.nameKeys(events));
    const key = (n: number, name: string | null): number => (name === null ? -1 : ids[n]!.get(name)!);
    const kinds = events.map((e) => (e.kind === 'purchase' ? KIND_PURCHASE : KIND_VIEW));
    const sessions = events.map((e) => key(NS_SESSION, e.session));
    const users = events.map((e) => key(NS_USER, e.user));
    const orders = events.map((e) => key(NS_ORDER, e.orderId));
    const times = events.map((e) => Math.round(e.time));
    const orNull = (id: number): number | null => (id < 0 ? null : id);
    const values = [kinds, events.map((e) => e.itemId), sessions.map(orNull), users.map(orNull), orders.map(orNull), times, await this.lockKey(), cap?.maxItems ?? null];
    const rows = (inserted: number[], kept: (i: number) => boolean): EventRow[] => {
      const stored: EventRow[] = [];
      for (let i = 0; i < events.length; i++) {
        if (kept(i)) stored.push([inserted[stored.length]!, kinds[i]!, events[i]!.itemId, sessions[i]!, users[i]!, orders[i]!, times[i]!]);
      }
      return stored;
    };
    // Every row is joined with `lock`'s one row before it takes its id (the column default is
    // evaluated above the join, whatever its plan), so the ids are taken under WRITE_LOCK, in the
    // order of n. Only the ids come back: the rest is what was sent (read back whole, 5,000 rows of
    // seven columns cost more CPU than writing them). The items' ids join recs_item_ids under the
    // lock too, and past the cap ($8) the statement fails whole (itemRoomCtes).
    if (!events.some((e) => e.eventId != null)) {
      const result = await busyOnLockTimeout(this.pool.query({
        text: `WITH lock AS MATERIALIZED (SELECT pg_advisory_xact_lock($7)),
               ${itemRoomCtes('$2', '$8', 'lock, ')}
               INSERT INTO recs_events (import_id, kind, item_id, session, user_id, order_id, time)
               SELECT 0, kind, item, s, u, o, t FROM lock, room, unnest($1::smallint[], $2::bigint[], $3::bigint[], $4::bigint[], $5::bigint[], $6::bigint[])
                 WITH ORDINALITY AS e(kind, item, s, u, o, t, n) ORDER BY n
               RETURNING id`,
        values,
        rowMode: 'array',
      }));
      return rows(idsOf(result.rows as [string | null, string | null][]), () => true);
    }
    // With eventIds: under the same lock and in the same statement (one transaction), the ids new
    // to recs_keys are taken, and only their events, and those without one, are inserted. A name
    // another writer took first conflicts (the unique index sees it committed, whatever this
    // statement's snapshot), so two replicas sending the same event store it once. The events kept
    // come back as their positions in the call, as PostgreSQL matched them, never as names: a name
    // is not always read back as sent (a lone surrogate came back as U+FFFD, and matched none).
    const result = await busyOnLockTimeout(this.pool.query({
      text: `WITH lock AS MATERIALIZED (SELECT pg_advisory_xact_lock($7)),
             ${itemRoomCtes('$2', '$8', 'lock, ')},
             taken AS (
               INSERT INTO recs_keys (ns, name, time) SELECT ${NS_EVENT}, name, t FROM lock, unnest($9::text[], $6::bigint[]) AS c(name, t)
               WHERE name IS NOT NULL ON CONFLICT DO NOTHING RETURNING name),
             stored AS (
               INSERT INTO recs_events (import_id, kind, item_id, session, user_id, order_id, time)
               SELECT 0, kind, item, s, u, o, t FROM lock, room, unnest($1::smallint[], $2::bigint[], $3::bigint[], $4::bigint[], $5::bigint[], $6::bigint[], $9::text[])
                 WITH ORDINALITY AS e(kind, item, s, u, o, t, eid, n)
               WHERE eid IS NULL OR eid IN (SELECT name FROM taken) ORDER BY n
               RETURNING id)
             SELECT id::text, NULL FROM stored
             UNION ALL SELECT NULL, n::text FROM unnest($9::text[]) WITH ORDINALITY AS k(eid, n) WHERE eid IN (SELECT name FROM taken)`,
      values: [...values, events.map((e) => e.eventId ?? null)],
      rowMode: 'array',
    }));
    const taken = new Set<number>();
    for (const [, position] of result.rows as [string | null, string | null][]) if (position !== null) taken.add(Number(position) - 1);
    return rows(idsOf(result.rows as [string | null, string | null][]), (i) => events[i]!.eventId == null || taken.has(i));
  }

  /**
   * The key ids of the batch's session, user and order names, per namespace; names not seen
   * before are added. Committed on their own, outside the events' transaction: a key is a name,
   * which no follower reads, so one named for a batch that then fails is harmless (the next batch
   * with that name finds it). Each name is one index probe, whatever the size of recs_keys.
   */
  private async nameKeys(events: readonly RecEvent[]): Promise<Map<string, number>[]> {
    const ids = [new Map<string, number>(), new Map<string, number>(), new Map<string, number>()];
    for (const e of events) {
      if (e.session !== null) ids[NS_SESSION]!.set(e.session, -1);
      if (e.user !== null) ids[NS_USER]!.set(e.user, -1);
      if (e.orderId !== null) ids[NS_ORDER]!.set(e.orderId, -1);
    }
    const [ns, names] = unnamed(ids);
    if (names.length === 0) return ids;
    // The lookup's snapshot is the statement's: a name another writer commits while it runs is
    // neither inserted (a conflict) nor seen, and is read again by the statement after.
    const named = await this.pool.query({
      text: `WITH names AS (SELECT * FROM unnest($1::smallint[], $2::text[]) AS n(ns, name)),
               ins AS (INSERT INTO recs_keys (ns, name) SELECT ns, name FROM names ORDER BY ns, name ON CONFLICT DO NOTHING RETURNING id, ns, name)
             SELECT id, ns, name FROM ins
             UNION ALL SELECT (SELECT k.id FROM recs_keys k WHERE k.ns = n.ns AND k.name = n.name), n.ns, n.name FROM names n`,
      values: [ns, names],
      rowMode: 'array',
    });
    for (const [id, n, name] of named.rows as [string | null, number, string][]) if (id !== null) ids[n]!.set(name, Number(id));
    const left = unnamed(ids);
    if (left[1].length > 0) {
      const again = await this.pool.query({
        text: 'SELECT (SELECT k.id FROM recs_keys k WHERE k.ns = n.ns AND k.name = n.name), n.ns, n.name FROM unnest($1::smallint[], $2::text[]) AS n(ns, name)',
        values: left,
        rowMode: 'array',
      });
      for (const [id, n, name] of again.rows as [string | null, number, string][]) {
        if (id === null) throw new Error(`recs_keys has no row for a name just added (namespace ${n})`);
        ids[n]!.set(name, Number(id));
      }
    }
    return ids;
  }

  async upsertItems(items: readonly ItemModel[], cap?: ItemCap): Promise<number> {
    const lock = await this.lockKey();
    return busyOnLockTimeout(this.transaction(async (client) => {
      await client.query('SELECT pg_advisory_xact_lock($1)', [lock]);
      const seq = await PostgresRecsStore.bumpMeta(client, 'itemSeq');
      await client.query(
        `WITH ${itemRoomCtes('$1', '$4')}
         INSERT INTO recs_items (item_id, record, seq) SELECT id, record, $3 FROM room, unnest($1::bigint[], $2::text[]) AS r(id, record)
         ON CONFLICT (item_id) DO UPDATE SET record = excluded.record, seq = excluded.seq`,
        [...itemColumns(items), seq, cap?.maxItems ?? null]);
      return seq;
    }));
  }

  async eventsAfter(afterId: number, limit: number): Promise<EventRow[]> {
    const result = await this.pool.query({ text: `SELECT ${EVENT_COLUMNS} FROM recs_events WHERE id > $1 ORDER BY id LIMIT $2`, values: [afterId, limit], rowMode: 'array' });
    return result.rows.map(toRow);
  }

  async itemsAfter(afterSeq: number): Promise<{ seq: number; records: string[] }> {
    const { rows } = await this.pool.query<{ record: string; seq: string }>('SELECT record, seq FROM recs_items WHERE seq > $1 ORDER BY seq', [afterSeq]);
    return { seq: rows.length === 0 ? afterSeq : Number(rows[rows.length - 1]!.seq), records: rows.map((r) => r.record) };
  }

  async snapshot(sink: SnapshotSink, options: { maxAgeMs?: number } = {}): Promise<StoreHead> {
    const maxAgeMs = options.maxAgeMs ?? 0;
    // one snapshot for the head, the records and the events
    return this.transaction(async (client) => {
      const head = await this.headOn(client);
      for (let after = -1; ;) {
        const { rows } = await client.query<{ item_id: string; record: string }>('SELECT item_id, record FROM recs_items WHERE item_id > $1 ORDER BY item_id LIMIT $2', [after, PAGE]);
        for (const r of rows) sink.record(r.record);
        if (rows.length < PAGE) break;
        after = Number(rows[rows.length - 1]!.item_id);
      }
      let from = Number.MIN_SAFE_INTEGER;
      if (maxAgeMs > 0) {
        const { rows } = await client.query<{ t: string | null }>('SELECT max(time) AS t FROM recs_events WHERE id <= $1', [head.lastEventId]);
        if (rows[0]!.t !== null) from = Number(rows[0]!.t) - maxAgeMs;
      }
      for (let after = 0; after < head.lastEventId;) {
        const result = await client.query({ text: `SELECT ${EVENT_COLUMNS} FROM recs_events WHERE id > $1 AND id <= $2 AND time >= $4 ORDER BY id LIMIT $3`, values: [after, head.lastEventId, PAGE, from], rowMode: 'array' });
        for (const r of result.rows) sink.event(toRow(r));
        if (result.rows.length < PAGE) break;
        after = Number(result.rows[result.rows.length - 1]![0]);
      }
      return head;
    }, 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
  }

  async pruneEvents(maxAgeMs: number, dryRun = false): Promise<{ newest: number | null; removed: number; eventIds: number }> {
    const { rows } = await this.pool.query<{ t: string | null; last: string | null; keys: string | null }>(
      'SELECT max(time) AS t, max(id) AS last, (SELECT max(id) FROM recs_keys) AS keys FROM recs_events');
    if (rows[0]!.t === null) return { newest: null, removed: 0, eventIds: 0 };
    const newest = Number(rows[0]!.t);
    const cutoff = newest - maxAgeMs;
    const last = Number(rows[0]!.last);
    if (dryRun) {
      const { rows: would } = await this.pool.query<{ e: string; k: string }>(
        `SELECT (SELECT count(*) FROM recs_events WHERE id < $1 AND time < $2) AS e, (SELECT count(*) FROM recs_keys WHERE ns = ${NS_EVENT} AND time < $2) AS k`, [last, cutoff]);
      return { newest, removed: Number(would[0]!.e), eventIds: Number(would[0]!.k) };
    }
    let removed = 0;
    for (let after = 0; after < last; after += PRUNE_ROWS) {
      const result = await this.pool.query('DELETE FROM recs_events WHERE id > $1 AND id <= $2 AND id < $3 AND time < $4', [after, after + PRUNE_ROWS, last, cutoff]);
      removed += result.rowCount ?? 0;
    }
    let eventIds = 0;
    for (let after = 0, lastKey = Number(rows[0]!.keys ?? 0); after < lastKey; after += PRUNE_ROWS) {
      const result = await this.pool.query(`DELETE FROM recs_keys WHERE id > $1 AND id <= $2 AND ns = ${NS_EVENT} AND time < $3`, [after, after + PRUNE_ROWS, cutoff]);
      eventIds += result.rowCount ?? 0;
    }
    // the items only the deleted events named no longer count against RECS_MAX_ITEMS
    if (removed > 0) await this.dropUnnamedItemIds();
    return { newest, removed, eventIds };
  }

  /**
   * After a prune: the ids neither an event nor a record names any more leave recs_item_ids, and
   * its count goes down by as many. Under WRITE_LOCK, recountItemIds's scan of the events (0.66 s
   * for 3 million) held every other replica's writes for as long; the scan is made first, without
   * the lock, and gives the candidates with the last event id its snapshot saw. Under the lock
   * only the writes since can have named a candidate again: events are given ids in the order
   * they commit (WRITE_LOCK), so those are the events past that id, read by their primary key,
   * and the records (by theirs). A candidate either names is kept; the rest are deleted, and the
   * count lowered by the rows deleted. An id that became unnamed after the scan (another prune)
   * stays, counted, for that prune to drop.
   */
  private async dropUnnamedItemIds(): Promise<void> {
    const { rows } = await this.pool.query<{ last: string | null; ids: string[] }>(
      `SELECT (SELECT max(id) FROM recs_events) AS last, ARRAY(SELECT item_id FROM recs_item_ids i
         WHERE NOT EXISTS (SELECT 1 FROM recs_items r WHERE r.item_id = i.item_id)
           AND NOT EXISTS (SELECT 1 FROM recs_events e WHERE e.item_id = i.item_id)) AS ids`);
    const { last, ids } = rows[0]!;
    if (ids.length === 0) return;
    const lock = await this.lockKey();
    await this.transaction(async (client) => {
      await client.query('SELECT pg_advisory_xact_lock($1)', [lock]);
      // a statement of its own, after the lock: its snapshot has every write that went before
      await client.query(
        `WITH gone AS (DELETE FROM recs_item_ids i WHERE i.item_id = ANY($1::bigint[])
           AND NOT EXISTS (SELECT 1 FROM recs_items r WHERE r.item_id = i.item_id)
           AND NOT EXISTS (SELECT 1 FROM recs_events e WHERE e.id > $2 AND e.item_id = i.item_id) RETURNING 1)
         UPDATE recs_meta SET value = value - (SELECT count(*) FROM gone) WHERE key = 'itemIds'`,
        [ids, last ?? 0]);
    });
  }

  async counts(): Promise<{ items: number; events: number }> {
    const { rows } = await this.pool.query<{ i: string; e: string }>('SELECT (SELECT count(*) FROM recs_items) AS i, (SELECT count(*) FROM recs_events) AS e');
    return { items: Number(rows[0]!.i), events: Number(rows[0]!.e) };
  }

  async countWithoutRecord(itemIds: readonly number[]): Promise<number> {
    const { rows } = await this.pool.query<{ n: string }>(
      'SELECT count(*) AS n FROM unnest($1::bigint[]) AS i(id) WHERE NOT EXISTS (SELECT 1 FROM recs_items r WHERE r.item_id = i.id)', [[...itemIds]]);
    return Number(rows[0]!.n);
  }

  async imports(): Promise<ImportRecord[]> {
    const { rows } = await this.pool.query<ImportRecord & { id: string; records: string; skipped: string; finishedAt: Date | null }>(
      'SELECT id, what, format, file, sha256, records, skipped, finished_at AS "finishedAt" FROM recs_imports ORDER BY id');
    return rows.map((r) => ({ ...r, id: Number(r.id), records: Number(r.records), skipped: Number(r.skipped), finishedAt: r.finishedAt?.toISOString() ?? null }));
  }

  async findImport(what: ImportRecord['what'], format: string, sha256: string): Promise<ImportRecord | undefined> {
    return (await this.imports()).find((i) => i.what === what && i.format === format && i.sha256 === sha256 && i.finishedAt !== null);
  }

  /** Staged in temporary tables of one connection of its own; moved under the write lock by finish. */
  async beginImport(what: ImportRecord['what'], format: string, file: string, sha256: string): Promise<ImportSession> {
    const lock = await this.lockKey();
    const client = await this.pool.connect();
    let released = false;
    const release = (): void => {
      if (!released) client.release();
      released = true;
    };
    try {
      await client.query(`
        CREATE TEMP TABLE IF NOT EXISTS staged_events (kind smallint, item bigint, s text, u text, o text, t bigint, n bigserial);
        CREATE TEMP TABLE IF NOT EXISTS staged_items (item_id bigint PRIMARY KEY, record text NOT NULL);
        TRUNCATE staged_events, staged_items;`);
    } catch (error) {
      release();
      throw error;
    }
    const startedAt = new Date();
    const [keysSql, insertSql] = insertEventsSql('staged_events e', '$1');
    return {
      addEvents: async (events) => {
        if (events.length === 0) return;
        await client.query('INSERT INTO staged_events (kind, item, s, u, o, t) SELECT kind, item, s, u, o, t FROM ' + UNNEST_EVENTS + ' ORDER BY n', columns(events));
      },
      addItems: async (items) => {
        if (items.length === 0) return;
        await client.query(
          `INSERT INTO staged_items (item_id, record) SELECT id, record FROM unnest($1::bigint[], $2::text[]) AS r(id, record)
           ON CONFLICT (item_id) DO UPDATE SET record = excluded.record`,
          itemColumns(items));
      },
      finish: async (records, skipped, options = {}) => {
        try {
          await client.query('BEGIN');
          await client.query('SELECT pg_advisory_xact_lock($1)', [lock]);
          let removed = 0;
          if (options.replace === true && what === 'catalog') {
            removed = (await client.query("DELETE FROM recs_imports WHERE what = 'catalog'")).rowCount ?? 0;
            await client.query('DELETE FROM recs_items');
            await PostgresRecsStore.bumpMeta(client, 'generation');
          } else if (options.replace === true) {
            const { rows } = await client.query<{ id: string }>('DELETE FROM recs_imports WHERE what = $1 AND (file = $2 OR sha256 = $3) RETURNING id', [what, file, sha256]);
            removed = rows.length;
            if (removed > 0) {
              await client.query('DELETE FROM recs_events WHERE import_id = ANY($1::bigint[])', [rows.map((r) => r.id)]);
              await PostgresRecsStore.bumpMeta(client, 'generation');
            }
          }
          const { rows } = await client.query<{ id: string }>(
            'INSERT INTO recs_imports (what, format, file, sha256, records, skipped, started_at, finished_at) VALUES ($1, $2, $3, $4, $5, $6, $7, now()) RETURNING id',
            [what, format, file, sha256, records, skipped, startedAt]);
          const importId = Number(rows[0]!.id);
          if (removed > 0 || (options.replace === true && what === 'catalog')) await recountItemIds(client);
          if (what === 'events') {
            await client.query(keysSql!);
            await client.query(insertSql!, [importId]);
            await addItemIds(client, 'staged_events', 'item');
          } else {
            const seq = await PostgresRecsStore.bumpMeta(client, 'itemSeq');
            await client.query(
              `INSERT INTO recs_items (item_id, record, seq) SELECT item_id, record, $1 FROM staged_items
               ON CONFLICT (item_id) DO UPDATE SET record = excluded.record, seq = excluded.seq`, [seq]);
            await addItemIds(client, 'staged_items', 'item_id');
          }
          await client.query('COMMIT');
          return { importId, removed };
        } catch (error) {
          await client.query('ROLLBACK').catch(() => undefined);
          throw error;
        } finally {
          await client.query('DROP TABLE IF EXISTS staged_events, staged_items').catch(() => undefined);
          release();
        }
      },
      abandon: async () => {
        if (released) return;
        await client.query('ROLLBACK').catch(() => undefined);
        await client.query('DROP TABLE IF EXISTS staged_events, staged_items').catch(() => undefined);
        release();
      },
    };
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}
