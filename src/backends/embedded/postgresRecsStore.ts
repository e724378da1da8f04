import type pg from 'pg';
import type { ItemModel } from '../../ports/backend.js';
import { StoreOpenError } from './dataFiles.js';
import type { RecEvent } from '../../recommender/index.js';
import { describeDatabase, openPool, postgresReason } from './keys/postgresStore.js';
import type { EventRow, ImportRecord, ImportSession, ItemCap, RecsDataStore, SnapshotSink, StoreHead } from './liveStore.js';
import { NS_EVENT, NS_SESSION, NS_USER, PRUNE_ROWS } from './liveStore.js';
import { appendEvents, readEventPage } from './postgresAppend.js';
import { beginImport, itemColumns } from './postgresImports.js';
import { dropUnnamedItemIds, itemRoomCtes } from './postgresItemIds.js';
import { migrateTables, writeLockFor } from './postgresSchema.js';
import { bumpMeta, busyOnLockTimeout, inTransaction } from './postgresWrites.js';

export { writeLockFor } from './postgresSchema.js';

export interface PostgresRecsStoreOptions {
  connectionString: string;
  /** A schema to keep the tables in (created when missing); default: the connection's search_path. */
  schema?: string;
  /** Pool size; default 4 (writes are serialised anyway, see WRITE_LOCK). */
  max?: number;
  /** How long a write waits for the write lock before StoreBusyError; default: as long as it takes. */
  lockTimeoutMs?: number;
}

/** Rows a statement when moving staged rows or paging a snapshot. */
const PAGE = 50_000;

/** The recommender's data in PostgreSQL (DATABASE_URL), shared by every replica: tables as the SQLite store's. */
export class PostgresRecsStore implements RecsDataStore {
  readonly where: string;
  readonly kind = 'postgresql';
  private readonly pool: pg.Pool;
  private readonly schema: string | undefined;
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

  /** Asked for before a transaction takes a connection, never inside one: its first read takes one of its own. */
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
        this.writeLock = Promise.resolve(await migrateTables(client, this.schema));
      });
    } catch (error) {
      throw new StoreOpenError(`cannot use PostgreSQL at ${this.where} (DATABASE_URL): ${postgresReason(error)}`, { cause: error });
    }
  }

  private transaction<T>(body: (client: pg.PoolClient) => Promise<T>, begin = 'BEGIN'): Promise<T> {
    return inTransaction(this.pool, body, begin);
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
  appendEvents(all: readonly RecEvent[], cap?: ItemCap): Promise<EventRow[]> {
    return appendEvents(this.pool, () => this.lockKey(), all, cap);
  }

  async upsertItems(items: readonly ItemModel[], cap?: ItemCap): Promise<number> {
    const lock = await this.lockKey();
    return busyOnLockTimeout(this.transaction(async (client) => {
      await client.query('SELECT pg_advisory_xact_lock($1)', [lock]);
      const seq = await bumpMeta(client, 'itemSeq');
      await client.query(
        `WITH ${itemRoomCtes('$1', '$4')}
         INSERT INTO recs_items (item_id, record, seq) SELECT id, record, $3 FROM room, unnest($1::bigint[], $2::text[]) AS r(id, record)
         ON CONFLICT (item_id) DO UPDATE SET record = excluded.record, seq = excluded.seq`,
        [...itemColumns(items), seq, cap?.maxItems ?? null]);
      return seq;
    }));
  }

  async eventsAfter(afterId: number, limit: number): Promise<EventRow[]> {
    return (await readEventPage(this.pool, afterId, limit)).rows;
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
        const { rows, lastId } = await readEventPage(client, after, PAGE, { upTo: head.lastEventId, from });
        for (const r of rows) sink.event(r);
        if (lastId === null) break;
        after = lastId;
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
    if (removed > 0) await dropUnnamedItemIds(this.pool, () => this.lockKey());
    return { newest, removed, eventIds };
  }

  async keyIds(sessionId: string | null, userId: string | null): Promise<{ session: number | null; user: number | null }> {
    const { rows } = await this.pool.query<{ ns: number; id: string }>(
      'SELECT ns, id FROM recs_keys WHERE (ns = $1 AND name = $2) OR (ns = $3 AND name = $4)', [NS_SESSION, sessionId, NS_USER, userId]);
    const id = (ns: number): number | null => {
      const row = rows.find((r) => r.ns === ns);
      return row === undefined ? null : Number(row.id);
    };
    return { session: sessionId === null ? null : id(NS_SESSION), user: userId === null ? null : id(NS_USER) };
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
  beginImport(what: ImportRecord['what'], format: string, file: string, sha256: string): Promise<ImportSession> {
    return beginImport(this.pool, () => this.lockKey(), what, format, file, sha256);
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}