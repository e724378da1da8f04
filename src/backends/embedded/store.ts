import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import Database from 'better-sqlite3';
import type { Database as SqliteDatabase, Statement } from 'better-sqlite3';
import { parseStoredRecord, toItemRecord } from '../../ports/itemRecord.js';
import type { ItemModel } from '../../ports/backend.js';
import { Catalog, KIND_PURCHASE, KIND_VIEW } from '../../recommender/index.js';
import type { EventLog, RecEvent } from '../../recommender/index.js';
import { makeDataDir, preparePrivateFile, StoreBusyError, StoreFullError, storeOpenError } from './dataFiles.js';
import type { EventRow, ImportRecord, ImportSession, ItemCap, RecsDataStore, SnapshotSink, StoreHead } from './liveStore.js';
import { NS_EVENT, NS_ORDER, NS_SESSION, NS_USER, PRUNE_ROWS } from './liveStore.js';
import { promised } from '../../ports/promised.js';

export type { ImportRecord } from './liveStore.js';

/** The database file in DATA_DIR. */
export const DB_FILE = 'recs.db';

const SCHEMA = `
CREATE TABLE IF NOT EXISTS items (item_id INTEGER PRIMARY KEY, record TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS imports (
  id INTEGER PRIMARY KEY, what TEXT NOT NULL, format TEXT NOT NULL, file TEXT NOT NULL, sha256 TEXT NOT NULL,
  records INTEGER NOT NULL DEFAULT 0, skipped INTEGER NOT NULL DEFAULT 0, started_at TEXT NOT NULL, finished_at TEXT);
CREATE TABLE IF NOT EXISTS keys (id INTEGER PRIMARY KEY, ns INTEGER NOT NULL, name TEXT NOT NULL, UNIQUE (ns, name));
CREATE TABLE IF NOT EXISTS events (
  import_id INTEGER NOT NULL, kind INTEGER NOT NULL, item_id INTEGER NOT NULL,
  session INTEGER, user INTEGER, order_id INTEGER, time INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS events_by_import ON events (import_id) WHERE import_id <> 0;
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS item_ids (item_id INTEGER PRIMARY KEY);
`;

const STAGING = `
CREATE TEMP TABLE IF NOT EXISTS staged_events (kind INTEGER NOT NULL, item_id INTEGER NOT NULL, session TEXT, user TEXT, order_id TEXT, time INTEGER NOT NULL);
CREATE TEMP TABLE IF NOT EXISTS staged_items (item_id INTEGER PRIMARY KEY, record TEXT NOT NULL);
`;

/** How long a prune leaves the write lock free after each transaction that deleted (see pruneEvents). */
const PRUNE_PAUSE_MS = 30;

/** The tables and indexes SCHEMA and open() make, by name. */
const SCHEMA_OBJECTS = ['items', 'imports', 'keys', 'events', 'events_by_import', 'meta', 'items_by_seq', 'item_ids'];

/** Whether the file holds this version's schema (open() then changes nothing), read without a lock. */
function schemaIsCurrent(db: SqliteDatabase): boolean {
  const objects = db.prepare(`SELECT name, sql FROM sqlite_master WHERE name IN (${SCHEMA_OBJECTS.map(() => '?').join(', ')})`).all(...SCHEMA_OBJECTS) as { name: string; sql: string | null }[];
  if (objects.length !== SCHEMA_OBJECTS.length) return false;
  if (!/\bWHERE\b/i.test(objects.find((o) => o.name === 'events_by_import')!.sql ?? '')) return false;
  const has = (table: string, column: string): boolean => (db.prepare(`PRAGMA table_info(${table})`).all() as { name: string }[]).some((c) => c.name === column);
  return has('items', 'seq') && has('keys', 'time');
}

/** An event row as the store reads it back (EventRow): keys absent as -1. */
const EVENT_COLUMNS = 'rowid, kind, item_id, coalesce(session, -1), coalesce(user, -1), coalesce(order_id, -1), time';
/** The events that are the store's: API calls' (import 0) and finished imports'. */
const STORED_EVENTS = '(import_id = 0 OR import_id IN (SELECT id FROM imports WHERE finished_at IS NOT NULL))';

/** Events of API calls have no import: import id 0. */
export const API_IMPORT_ID = 0;
const ROWS_PER_INSERT = 100;
/**
 * An import's events. events_by_import is partial (import_id <> 0): API calls' events, most of
 * what a live store takes, are not in it, which made an event's insert about a third cheaper (in
 * process, 5,000-event batches after 200k imported events: 1.8 against 1.1 µs of CPU an event).
 * SQLite uses a partial index only where the query's WHERE implies the index's, hence the second
 * term (import ids start at 1).
 */
export const DELETE_EVENTS_OF_IMPORT = 'DELETE FROM events WHERE import_id = ? AND import_id <> 0';
/**
 * SQLite's busy timeout on the connection: how long a statement waits on another process's lock,
 * the event loop blocked meanwhile. A write's BEGIN IMMEDIATE waits with none (RecsStore.write
 * retries it on timers); this is left for the rest (opening, reads in a checkpoint's moment).
 */
const LOCK_WAIT_MS = 50;
/**
 * The busy timeout while a start opens the file and brings its schema up to date: replicas
 * starting together on a fresh DATA_DIR wait for each other's WAL switch and schema transaction,
 * which take longer than LOCK_WAIT_MS on a loaded machine (the start failed "locked by another
 * process" then), and a read, for the checkpoint of another's last connection closing. Nothing
 * else runs in the process yet; a file whose schema is current takes no write lock at the open.
 */
const OPEN_LOCK_WAIT_MS = 10_000;
/**
 * Default of RecsStoreOptions.lockRetryMs: how long a write keeps retrying (asynchronously) while
 * another process writes, e.g. an import's final move.
 */
export const LOCK_RETRY_MS = 60_000;

export interface RecsStoreOptions {
  /** How long a write waits for another process's write lock before it fails with StoreBusyError; default LOCK_RETRY_MS. */
  lockRetryMs?: number;
}

const isBusy = (error: unknown): boolean => /^SQLITE_BUSY/.test((error as { code?: string } | null)?.code ?? '');

/**
 * DATA_DIR/recs.db, the embedded backend's SQLite database (WAL, so readers never wait for
 * writers, and several processes on one machine share it):
 * - `items`: the catalogue, one JSON record (recommendations.md shape) per item id, with `seq`,
 *   the batch that last wrote it (followers read `seq > last`); writing an item again replaces it.
 * - `events`: one row per view (kind 0) or purchase (kind 1), all integers: item id, session,
 *   user and order as ids of `keys` (the names as sent), time in ms; the rowid is the monotonic id
 *   followers read after. Events of API calls have import id 0.
 * - `imports`: every imported file with its SHA-256. Importing content already imported (same
 *   SHA-256, kind and format: the format's whole column mapping, EventFormat.mapping) is
 *   skipped, so running an import twice never doubles events;
 *   `replace` first deletes earlier imports of the same content or the same path. An import is
 *   staged in temporary tables and moved in one transaction (see ImportSession).
 * - `meta`: `generation` (bumped when data is deleted: followers reload whole) and `itemSeq`.
 *
 * Writes use synchronous=FULL: a commit is on disk before the call returns, so an acknowledged
 * call survives SIGKILL and power loss.
 */
export class RecsStore implements RecsDataStore {
  readonly where: string;
  readonly kind = 'sqlite';
  private stagingReady = false;

  private constructor(readonly db: SqliteDatabase, readonly path: string, private readonly lockRetryMs = LOCK_RETRY_MS) {
    this.where = path;
    this.noBusyWait = db.prepare('PRAGMA busy_timeout = 0');
    this.busyWait = db.prepare(`PRAGMA busy_timeout = ${LOCK_WAIT_MS}`);
  }

  /** Opens (creating DATA_DIR 0700 and the file 0600 when missing); StoreOpenError when it cannot. */
  static open(dataDir: string, options: RecsStoreOptions = {}): RecsStore {
    makeDataDir(dataDir);
    const path = join(dataDir, DB_FILE);
    let db: SqliteDatabase | undefined;
    try {
      preparePrivateFile(path);
      db = new Database(path, { timeout: OPEN_LOCK_WAIT_MS });
      // a damaged file or a file of another kind fails here, not at the open
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = FULL');
      // one write transaction: two processes opening a fresh file at once (replicas starting
      // together) would otherwise both see no seq column and the second ALTER fail. None where the
      // schema is this version's already: the transaction waited LOCK_WAIT_MS for the write lock,
      // which a prune (transaction after transaction) or an import's move elsewhere holds far
      // longer, and the start failed ("locked by another process")
      const open = db;
      if (!schemaIsCurrent(open)) open.transaction(() => {
        const hadItemIds = open.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'item_ids'").get() !== undefined;
        open.exec(SCHEMA);
        // item_ids made now, on a file of an earlier version: filled from its rows (RecsStore.takeItemIds)
        if (!hadItemIds) {
          const filled = open.prepare('INSERT OR IGNORE INTO item_ids (item_id) SELECT item_id FROM items UNION SELECT item_id FROM events').run().changes;
          open.prepare("INSERT INTO meta (key, value) VALUES ('itemIds', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value").run(filled);
        }
        const columns = open.prepare('PRAGMA table_info(items)').all() as { name: string }[];
        if (!columns.some((c) => c.name === 'seq')) {
          open.exec('ALTER TABLE items ADD COLUMN seq INTEGER NOT NULL DEFAULT 0');
        }
        open.exec('CREATE INDEX IF NOT EXISTS items_by_seq ON items (seq)');
        // an eventId's time, the first event's that took it (pruneEvents); null for the ids of
        // a file of an earlier version, which are kept
        const keyColumns = open.prepare('PRAGMA table_info(keys)').all() as { name: string }[];
        if (!keyColumns.some((c) => c.name === 'time')) open.exec('ALTER TABLE keys ADD COLUMN time INTEGER');
        // events_by_import holds imported events only (DELETE_EVENTS_OF_IMPORT); a file of an earlier
        // version indexed every API event too, each under the one key 0
        const index = open.prepare("SELECT sql FROM sqlite_master WHERE type = 'index' AND name = 'events_by_import'").pluck().get() as string | undefined;
        if (index !== undefined && !/\bWHERE\b/i.test(index)) {
          open.exec('DROP INDEX events_by_import');
          open.exec(SCHEMA);
        }
      }).immediate();
      const store = new RecsStore(db, path, options.lockRetryMs);
      // a read too waits out another process's last close (its checkpoint, synchronous=FULL)
      store.deleteUnfinished();
      db.pragma(`busy_timeout = ${LOCK_WAIT_MS}`);
      return store;
    } catch (error) {
      db?.close();
      throw storeOpenError(path, error);
    }
  }

  /**
   * A read-only connection (build workers, tests): no schema changes and no clean-up. Null when
   * there is no database yet.
   */
  static openReadOnly(dataDir: string): RecsStore | null {
    const path = join(dataDir, DB_FILE);
    if (!existsSync(path)) return null;
    return new RecsStore(new Database(path, { readonly: true, fileMustExist: true }), path);
  }

  close(): Promise<void> {
    return promised(() => {
      if (this.db.open) {
        if (this.db.inTransaction) this.db.exec('ROLLBACK');
        this.db.close();
      }
    });
  }

  private meta(key: string): number {
    try {
      return (this.db.prepare('SELECT value FROM meta WHERE key = ?').pluck().get(key) as number | undefined) ?? 0;
    } catch {
      return 0; // a read-only connection to a file of an older version, without the table
    }
  }

  private setMeta(key: string, value: number): void {
    this.db.prepare('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value').run(key, value);
  }

  headNow(): StoreHead {
    return {
      generation: this.meta('generation'),
      lastEventId: (this.db.prepare('SELECT max(rowid) FROM events').pluck().get() as number | null) ?? 0,
      lastItemSeq: this.meta('itemSeq'),
    };
  }

  /** The head as one string (the older build worker's change marker). */
  importsVersion(): string {
    const head = this.headNow();
    return `${head.generation}:${head.lastEventId}:${head.lastItemSeq}`;
  }

  head(): Promise<StoreHead> {
    return promised(() => this.headNow());
  }

  /** The stored item records as JSON text, unparsed. */
  catalogRecords(): IterableIterator<string> {
    return this.db.prepare('SELECT record FROM items').pluck().iterate() as IterableIterator<string>;
  }

  itemCount(): number {
    return (this.db.prepare('SELECT count(*) AS n FROM items').get() as { n: number }).n;
  }

  eventCount(): number {
    return (this.db.prepare('SELECT count(*) AS n FROM events').get() as { n: number }).n;
  }

  counts(): Promise<{ items: number; events: number }> {
    return promised(() => ({ items: this.itemCount(), events: this.eventCount() }));
  }

  async pruneEvents(maxAgeMs: number, dryRun = false): Promise<{ newest: number | null; removed: number; eventIds: number }> {
    const newest = this.db.prepare(`SELECT max(time) FROM events WHERE ${STORED_EVENTS}`).pluck().get() as number | null;
    const last = (this.db.prepare('SELECT max(rowid) FROM events').pluck().get() as number | null) ?? 0;
    if (newest === null) return { newest, removed: 0, eventIds: 0 };
    const cutoff = newest - maxAgeMs;
    if (dryRun) {
      return {
        newest,
        removed: this.db.prepare(`SELECT count(*) FROM events WHERE rowid < ? AND time < ? AND ${STORED_EVENTS}`).pluck().get(last, cutoff) as number,
        eventIds: this.db.prepare(`SELECT count(*) FROM keys WHERE ns = ${NS_EVENT} AND time < ?`).pluck().get(cutoff) as number,
      };
    }
    const prune = this.db.prepare(`DELETE FROM events WHERE rowid > ? AND rowid <= ? AND rowid < ? AND time < ? AND ${STORED_EVENTS}`);
    let removed = 0;
    for (let after = 0; after < last; after += PRUNE_ROWS) {
      const changes = await this.write(() => prune.run(after, after + PRUNE_ROWS, last, cutoff).changes);
      removed += changes;
      // the lock left free for longer than a waiting write() looks again (every 25 ms at most):
      // taken again at once, writes elsewhere waited for many of these transactions, not one
      if (changes > 0) await sleep(PRUNE_PAUSE_MS);
    }
    const lastKey = (this.db.prepare('SELECT max(id) FROM keys').pluck().get() as number | null) ?? 0;
    const forget = this.db.prepare(`DELETE FROM keys WHERE id > ? AND id <= ? AND ns = ${NS_EVENT} AND time < ?`);
    let eventIds = 0;
    for (let after = 0; after < lastKey; after += PRUNE_ROWS) {
      const changes = await this.write(() => forget.run(after, after + PRUNE_ROWS, cutoff).changes);
      eventIds += changes;
      if (changes > 0) await sleep(PRUNE_PAUSE_MS);
    }
    // the items only the deleted events named no longer count against RECS_MAX_ITEMS
    if (removed > 0) await this.dropUnnamedItemIds();
    return { newest, removed, eventIds };
  }

  countWithoutRecord(itemIds: readonly number[]): Promise<number> {
    return promised(() => {
      const has = this.db.prepare('SELECT 1 FROM items WHERE item_id = ?').pluck();
      let missing = 0;
      for (const id of itemIds) if (has.get(id) === undefined) missing++;
      return missing;
    });
  }

  importsNow(): ImportRecord[] {
    return this.db.prepare('SELECT id, what, format, file, sha256, records, skipped, finished_at AS finishedAt FROM imports ORDER BY id').all() as ImportRecord[];
  }

  imports(): Promise<ImportRecord[]> {
    return promised(() => this.importsNow());
  }

  findImport(what: ImportRecord['what'], format: string, sha256: string): Promise<ImportRecord | undefined> {
    return promised(() => this.importsNow().find((i) => i.what === what && i.format === format && i.sha256 === sha256 && i.finishedAt !== null));
  }

  /**
   * Runs `body` in one write transaction (BEGIN IMMEDIATE). While another process holds the write
   * lock, retries on timers (5 ms, doubling to 25 ms), so a long import elsewhere does not freeze
   * this process's event loop; StoreBusyError once lockRetryMs have passed. Each attempt asks for
   * the lock without SQLite's busy handler: with it, every attempt slept LOCK_WAIT_MS on the event
   * loop, which was then blocked for about half of any wait (test/backends/storeBusy.test.ts).
   */
  private async write<T>(body: () => T): Promise<T> {
    const deadline = Date.now() + this.lockRetryMs;
    for (let attempt = 0; ; attempt++) {
      try {
        this.beginImmediateNow();
      } catch (error) {
        if (!isBusy(error)) throw error;
        if (Date.now() > deadline) {
          throw new StoreBusyError(`another process has held the write lock of ${this.path} for over ${Math.round(this.lockRetryMs / 1000)} s`, { cause: error });
        }
        // 5, 10, 20, then every 25 ms: how often SQLite's own busy handler looks, after its first steps
        await sleep(Math.min(25, 5 * 2 ** Math.min(attempt, 3)));
        continue;
      }
      try {
        const result = body();
        this.db.exec('COMMIT');
        return result;
      } catch (error) {
        if (this.db.inTransaction) this.db.exec('ROLLBACK');
        throw error;
      }
    }
  }

  private readonly noBusyWait: Statement;
  private readonly busyWait: Statement;

  /** BEGIN IMMEDIATE, SQLITE_BUSY at once where another connection holds the write lock. */
  private beginImmediateNow(): void {
    this.noBusyWait.get();
    try {
      this.db.exec('BEGIN IMMEDIATE');
    } finally {
      this.busyWait.get();
    }
  }

  private staging(): void {
    if (this.stagingReady) return;
    this.db.exec(STAGING);
    this.stagingReady = true;
  }

  private stageStatements = new Map<number, Statement>();

  /** Writes events, their keys still names, to the temporary staging table (no lock on recs.db). */
  private stage(events: readonly RecEvent[]): void {
    this.staging();
    const statement = (rows: number): Statement => {
      let s = this.stageStatements.get(rows);
      if (s === undefined) {
        s = this.db.prepare(`INSERT INTO temp.staged_events (kind, item_id, session, user, order_id, time) VALUES ${Array(rows).fill('(?, ?, ?, ?, ?, ?)').join(', ')}`);
        this.stageStatements.set(rows, s);
      }
      return s;
    };
    const values: (number | string | null)[] = [];
    for (let from = 0; from < events.length; from += ROWS_PER_INSERT) {
      const rows = Math.min(ROWS_PER_INSERT, events.length - from);
      values.length = 0;
      for (let i = from; i < from + rows; i++) {
        const e = events[i]!;
        values.push(e.kind === 'purchase' ? KIND_PURCHASE : KIND_VIEW, e.itemId, e.session, e.user, e.orderId, Math.round(e.time));
      }
      statement(rows).run(values);
    }
  }

  /** Moves the staged events into `events` (inside a write transaction), naming new keys on the way. */
  private moveStaged(importId: number): void {
    this.db.exec(`
      INSERT OR IGNORE INTO keys (ns, name) SELECT 0, session FROM temp.staged_events WHERE session IS NOT NULL;
      INSERT OR IGNORE INTO keys (ns, name) SELECT 1, user FROM temp.staged_events WHERE user IS NOT NULL;
      INSERT OR IGNORE INTO keys (ns, name) SELECT 2, order_id FROM temp.staged_events WHERE order_id IS NOT NULL;`);
    this.db.prepare(`
      INSERT INTO events (import_id, kind, item_id, session, user, order_id, time)
      SELECT ?, s.kind, s.item_id, ks.id, ku.id, ko.id, s.time FROM temp.staged_events s
      LEFT JOIN keys ks ON ks.ns = 0 AND ks.name = s.session
      LEFT JOIN keys ku ON ku.ns = 1 AND ku.name = s.user
      LEFT JOIN keys ko ON ko.ns = 2 AND ko.name = s.order_id
      ORDER BY s.rowid`).run(importId);
    this.db.exec('DELETE FROM temp.staged_events');
  }

  private readEventsAfter(afterId: number, limit: number): EventRow[] {
    return this.db
      .prepare(`SELECT ${EVENT_COLUMNS} FROM events WHERE rowid > ? ORDER BY rowid LIMIT ?`)
      .raw()
      .all(afterId, limit) as EventRow[];
  }

  private appendStatements = new Map<number, Statement>();
  private appendKeyStatements: { lastRow: Statement; find: Statement; name: Statement } | null = null;

  /**
   * appendNow's lookups, prepared once: better-sqlite3's prepare parses the SQL anew, and doing
   * so at every call was 2% of the busy samples of bench/ingest.ts --batch 50 (sqlite-graphql).
   */
  private appendKeys(): { lastRow: Statement; find: Statement; name: Statement } {
    this.appendKeyStatements ??= {
      lastRow: this.db.prepare('SELECT max(rowid) FROM events').pluck(),
      find: this.db.prepare('SELECT id FROM keys WHERE ns = ? AND name = ?').pluck(),
      name: this.db.prepare('INSERT INTO keys (ns, name) VALUES (?, ?)'),
    };
    return this.appendKeyStatements;
  }
  /** Calls of appendEvents waiting for the next group commit (commitAppends). */
  private appending: { events: readonly RecEvent[]; cap: ItemCap | undefined; resolve: (rows: EventRow[]) => void; reject: (error: unknown) => void }[] = [];

  /**
   * A call's events, committed durably before the promise resolves. Group commit: the calls made
   * in the same turn of the event loop (batches read from several connections at once) are
   * written in ONE transaction after it (setImmediate), so they share its commit and its fsync,
   * the cost of synchronous=FULL; each still resolves only after that commit, with its own rows.
   */
  appendEvents(events: readonly RecEvent[], cap?: ItemCap): Promise<EventRow[]> {
    if (events.length === 0) return Promise.resolve([]);
    return new Promise((resolve, reject) => {
      this.appending.push({ events, cap, resolve, reject });
      if (this.appending.length === 1) setImmediate(() => void this.commitAppends());
    });
  }

  /** Group commits made, and the calls they held (tests, benchmarks). */
  readonly groupCommits = { commits: 0, calls: 0 };

  private async commitAppends(): Promise<void> {
    const group = this.appending;
    this.appending = [];
    let rows: (EventRow[] | StoreFullError)[];
    try {
      // a call past the cap is refused alone, before it writes anything: the others are kept
      rows = await this.write(() => group.map((call) => {
        try {
          return this.appendNow(call.events, call.cap);
        } catch (error) {
          if (error instanceof StoreFullError) return error;
          throw error;
        }
      }));
    } catch (error) {
      // nothing of the group was kept: each call alone, so that one call's failure is only its own
      // (a lock held elsewhere is every call's: they are not kept waiting once more)
      if (group.length === 1 || error instanceof StoreBusyError) for (const call of group) call.reject(error);
      else for (const call of group) this.write(() => this.appendNow(call.events, call.cap)).then(call.resolve, call.reject);
      return;
    }
    this.groupCommits.commits++;
    this.groupCommits.calls += group.length;
    group.forEach((call, i) => {
      const stored = rows[i]!;
      if (stored instanceof StoreFullError) call.reject(stored);
      else call.resolve(stored);
    });
  }

  /**
   * A call's events, inside a write transaction: each distinct key name looked up (named when new),
   * then the rows inserted with integer keys, many a statement. No staging and no reading back
   * (as an import does): under the write lock the rows take the ids after the largest, in order,
   * which is checked, and the rows are answered from what was written.
   */
  private appendNow(all: readonly RecEvent[], cap?: ItemCap): EventRow[] {
    this.takeItemIds(all.map((e) => e.itemId), cap);
    const events = this.withoutDuplicates(all);
    if (events.length === 0) return [];
    const { lastRow, find, name } = this.appendKeys();
    const before = (lastRow.get() as number | null) ?? 0;
    const keys = [new Map<string, number>(), new Map<string, number>(), new Map<string, number>()];
    const keyOf = (ns: number, key: string | null): number => {
      if (key === null) return -1;
      const map = keys[ns]!;
      let id = map.get(key);
      if (id === undefined) {
        id = (find.get(ns, key) as number | undefined) ?? Number(name.run(ns, key).lastInsertRowid);
        map.set(key, id);
      }
      return id;
    };
    const rows: EventRow[] = events.map((e, i) => [
      before + 1 + i, e.kind === 'purchase' ? KIND_PURCHASE : KIND_VIEW, e.itemId,
      keyOf(NS_SESSION, e.session), keyOf(NS_USER, e.user), keyOf(NS_ORDER, e.orderId), Math.round(e.time),
    ]);
    const statement = (n: number): Statement => {
      let st = this.appendStatements.get(n);
      if (st === undefined) {
        st = this.db.prepare(`INSERT INTO events (import_id, kind, item_id, session, user, order_id, time) VALUES ${Array(n).fill(`(${API_IMPORT_ID}, ?, ?, ?, ?, ?, ?)`).join(', ')}`);
        this.appendStatements.set(n, st);
      }
      return st;
    };
    const values: (number | null)[] = [];
    let last = before;
    for (let from = 0; from < rows.length; from += ROWS_PER_INSERT) {
      const n = Math.min(ROWS_PER_INSERT, rows.length - from);
      values.length = 0;
      for (let i = from; i < from + n; i++) {
        const [, kind, itemId, session, user, order, time] = rows[i]!;
        values.push(kind, itemId, session < 0 ? null : session, user < 0 ? null : user, order < 0 ? null : order, time);
      }
      last = Number(statement(n).run(values).lastInsertRowid);
    }
    // rowids are max + 1 while the table's largest is below 2^63 - 1: never otherwise here, but then read them
    return last === before + rows.length ? rows : this.readEventsAfter(before, events.length);
  }

  /**
   * The events whose eventId is new to the store, or who have none, their ids taken (inside the
   * write transaction, so that they are taken with the rows or not at all): a duplicate of an
   * earlier call's, or of one earlier in this call, is left out.
   */
  private withoutDuplicates(events: readonly RecEvent[]): readonly RecEvent[] {
    if (!events.some((e) => e.eventId != null)) return events;
    const take = this.db.prepare(`INSERT OR IGNORE INTO keys (ns, name, time) VALUES (${NS_EVENT}, ?, ?)`);
    return events.filter((e) => e.eventId == null || take.run(e.eventId, Math.round(e.time)).changes === 1);
  }

  private itemIdStatements: { has: Statement; add: Statement; held: Statement; count: Statement } | null = null;

  /**
   * Inside a write transaction, before anything else of the write: the ids of `ids` new to
   * item_ids (named by no stored event or record: what every process's model holds, RECS_MAX_ITEMS)
   * join it, and its count in meta 'itemIds' goes up by them. Past `cap`, StoreFullError, nothing
   * written: the transaction holds the file's write lock, so processes sharing the file check one
   * after the other, each seeing what the others committed.
   */
  private takeItemIds(ids: readonly number[], cap: ItemCap | undefined): void {
    this.itemIdStatements ??= {
      has: this.db.prepare('SELECT 1 FROM item_ids WHERE item_id = ?').pluck(),
      add: this.db.prepare('INSERT INTO item_ids (item_id) VALUES (?)'),
      held: this.db.prepare("SELECT value FROM meta WHERE key = 'itemIds'").pluck(),
      count: this.db.prepare("INSERT INTO meta (key, value) VALUES ('itemIds', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value"),
    };
    const { has, add, held, count } = this.itemIdStatements;
    const fresh = new Set<number>();
    for (const id of ids) if (!fresh.has(id) && has.get(id) === undefined) fresh.add(id);
    if (fresh.size === 0) return;
    const before = (held.get() as number | undefined) ?? 0;
    if (cap !== undefined && before + fresh.size > cap.maxItems) throw new StoreFullError(fresh.size, before, cap.maxItems);
    for (const id of fresh) add.run(id);
    count.run(before + fresh.size);
  }

  /** Inside a write transaction, after an import's insertions: `source`'s item ids join item_ids, counted (imports take no cap). */
  private addItemIds(source: string): void {
    const added = this.db.prepare(`INSERT OR IGNORE INTO item_ids (item_id) SELECT item_id FROM ${source}`).run().changes;
    if (added > 0) this.setMeta('itemIds', this.meta('itemIds') + added);
  }

  /**
   * Inside a write transaction, after deletions (a replacing import, a prune): ids no stored event
   * or record names any more leave item_ids, and its count is made again. One scan of the events.
   */
  private recountItemIds(): void {
    this.db.exec('DELETE FROM item_ids WHERE item_id NOT IN (SELECT item_id FROM items) AND item_id NOT IN (SELECT item_id FROM events)');
    this.setMeta('itemIds', this.db.prepare('SELECT count(*) FROM item_ids').pluck().get() as number);
  }

  /**
   * After a prune: the ids neither an event nor a record names any more leave item_ids, and its
   * count goes down by as many. recountItemIds's scan of the events held the write lock, and so
   * every other process's writes, for as long as it took; the scan is made first, in a read
   * transaction (WAL lets writers go on beside it), and gives the candidates with the last rowid
   * it saw. Under the lock only the events since (past that rowid) and the records can name a
   * candidate again; the rest are deleted. A rowid is the largest one plus one, so rowids follow
   * commits as long as no event at the top is deleted: a prune keeps the newest, and a replacing
   * import, which may delete it, bumps the generation; then the whole recount is made under the
   * lock, as before. An id that became unnamed after the scan stays, counted, for the next prune.
   */
  private async dropUnnamedItemIds(): Promise<void> {
    const seen = this.db.transaction(() => ({
      generation: this.meta('generation'),
      last: (this.db.prepare('SELECT max(rowid) FROM events').pluck().get() as number | null) ?? 0,
      ids: this.db.prepare('SELECT item_id FROM item_ids WHERE item_id NOT IN (SELECT item_id FROM items) AND item_id NOT IN (SELECT item_id FROM events)').pluck().all() as number[],
    }))();
    if (seen.ids.length === 0) return;
    await this.write(() => {
      if (this.meta('generation') !== seen.generation) return this.recountItemIds();
      const named = new Set(this.db.prepare('SELECT item_id FROM events WHERE rowid > ?').pluck().all(seen.last) as number[]);
      const drop = this.db.prepare('DELETE FROM item_ids WHERE item_id = ? AND NOT EXISTS (SELECT 1 FROM items WHERE item_id = ?)');
      let dropped = 0;
      for (const id of seen.ids) if (!named.has(id)) dropped += drop.run(id, id).changes;
      if (dropped > 0) this.setMeta('itemIds', this.meta('itemIds') - dropped);
    });
  }

  /** Writes records under a new item sequence number (inside a write transaction). */
  private putItems(write: (insert: Statement, seq: number) => void): number {
    const seq = this.meta('itemSeq') + 1;
    write(this.db.prepare('INSERT OR REPLACE INTO items (item_id, record, seq) VALUES (?, ?, ?)'), seq);
    this.setMeta('itemSeq', seq);
    return seq;
  }

  async upsertItems(items: readonly ItemModel[], cap?: ItemCap): Promise<number> {
    return this.write(() => {
      this.takeItemIds(items.map((item) => item.itemId), cap);
      return this.putItems((insert, seq) => {
        for (const item of items) insert.run(item.itemId, JSON.stringify(toItemRecord(item)), seq);
      });
    });
  }

  eventsAfter(afterId: number, limit: number): Promise<EventRow[]> {
    return promised(() => this.readEventsAfter(afterId, limit));
  }

  itemsAfter(afterSeq: number): Promise<{ seq: number; records: string[] }> {
    return promised(() => {
      const rows = this.db.prepare('SELECT record, seq FROM items WHERE seq > ? ORDER BY seq').raw().all(afterSeq) as [string, number][];
      return { seq: rows.length === 0 ? afterSeq : rows[rows.length - 1]![1], records: rows.map((r) => r[0]) };
    });
  }

  snapshot(sink: SnapshotSink, options: { maxAgeMs?: number } = {}): Promise<StoreHead> {
    return promised(() => this.snapshotNow(sink, options.maxAgeMs ?? 0));
  }

  private snapshotNow(sink: SnapshotSink, maxAgeMs: number): StoreHead {
    // one read transaction: the records, the events and the head belong together
    this.db.exec('BEGIN');
    try {
      const head = this.headNow();
      for (const record of this.catalogRecords()) sink.record(record);
      const stored = `rowid <= ? AND ${STORED_EVENTS}`;
      const newest = maxAgeMs > 0 ? this.db.prepare(`SELECT max(time) FROM events WHERE ${stored}`).pluck().get(head.lastEventId) as number | null : null;
      const rows = (newest === null
        ? this.db.prepare(`SELECT ${EVENT_COLUMNS} FROM events WHERE ${stored} ORDER BY rowid`).raw().iterate(head.lastEventId)
        : this.db.prepare(`SELECT ${EVENT_COLUMNS} FROM events WHERE ${stored} AND time >= ? ORDER BY rowid`).raw().iterate(head.lastEventId, newest - maxAgeMs)) as IterableIterator<EventRow>;
      for (const row of rows) sink.event(row);
      return head;
    } finally {
      this.db.exec('COMMIT');
    }
  }

  beginImport(what: ImportRecord['what'], format: string, file: string, sha256: string): Promise<ImportSession> {
    return promised(() => this.beginImportNow(what, format, file, sha256));
  }

  private beginImportNow(what: ImportRecord['what'], format: string, file: string, sha256: string): ImportSession {
    this.staging();
    this.db.exec('DELETE FROM temp.staged_events; DELETE FROM temp.staged_items');
    const putStaged = this.db.prepare('INSERT OR REPLACE INTO temp.staged_items (item_id, record) VALUES (?, ?)');
    const stageItems = this.db.transaction((items: readonly ItemModel[]) => {
      for (const item of items) putStaged.run(item.itemId, JSON.stringify(toItemRecord(item)));
    });
    const stageEvents = this.db.transaction((events: readonly RecEvent[]) => this.stage(events));
    const startedAt = new Date().toISOString();
    return {
      addEvents: (events) => promised(() => stageEvents(events)),
      addItems: (items) => promised(() => stageItems(items)),
      finish: (records, skipped, options = {}) => this.write(() => {
        let removed = 0;
        if (options.replace === true && what === 'catalog') {
          removed = this.db.prepare("DELETE FROM imports WHERE what = 'catalog'").run().changes;
          this.db.exec('DELETE FROM items');
          this.setMeta('generation', this.meta('generation') + 1);
        } else if (options.replace === true) {
          removed = this.removeImportsOf(what, file, sha256);
          if (removed > 0) this.setMeta('generation', this.meta('generation') + 1);
        }
        const now = new Date().toISOString();
        const importId = Number(this.db
          .prepare('INSERT INTO imports (what, format, file, sha256, records, skipped, started_at, finished_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)')
          .run(what, format, file, sha256, records, skipped, startedAt, now).lastInsertRowid);
        if (removed > 0 || (options.replace === true && what === 'catalog')) this.recountItemIds();
        if (what === 'events') {
          this.addItemIds('temp.staged_events');
          this.moveStaged(importId);
        } else {
          this.putItems((_insert, seq) => {
            this.db.prepare('INSERT OR REPLACE INTO items (item_id, record, seq) SELECT item_id, record, ? FROM temp.staged_items').run(seq);
          });
          this.addItemIds('temp.staged_items');
          this.db.exec('DELETE FROM temp.staged_items');
        }
        return { importId, removed };
      }),
      abandon: () => promised(() => {
        if (this.db.inTransaction) this.db.exec('ROLLBACK');
        this.db.exec('DELETE FROM temp.staged_events; DELETE FROM temp.staged_items');
      }),
    };
  }

  /** Deletes earlier imports (and their events) of the same content or the same file path. */
  private removeImportsOf(what: ImportRecord['what'], file: string, sha256: string): number {
    const ids = this.importsNow().filter((i) => i.what === what && (i.file === file || i.sha256 === sha256)).map((i) => i.id);
    for (const id of ids) {
      this.db.prepare(DELETE_EVENTS_OF_IMPORT).run(id);
      this.db.prepare('DELETE FROM imports WHERE id = ?').run(id);
    }
    return ids.length;
  }

  /** Rows of unfinished imports of older versions, which wrote into `events` directly. */
  private deleteUnfinished(): void {
    const ids = (this.db.prepare('SELECT id FROM imports WHERE finished_at IS NULL').all() as { id: number }[]).map((r) => r.id);
    for (const id of ids) {
      this.db.prepare(DELETE_EVENTS_OF_IMPORT).run(id);
      this.db.prepare('DELETE FROM imports WHERE id = ?').run(id);
    }
  }

  /** The stored catalogue; every record goes through parseStoredRecord (parseItemRecord) again. */
  loadCatalog(): Catalog {
    const catalog = new Catalog();
    for (const record of this.catalogRecords()) catalog.add(parseStoredRecord(record));
    return catalog;
  }

  /** Appends the stored events to a log, in id order, keys as store ids (tests, tools). */
  loadEvents(log: EventLog): void {
    const rows = this.db
      .prepare(`SELECT kind, item_id, session, user, order_id, time FROM events WHERE ${STORED_EVENTS} ORDER BY rowid`)
      .raw()
      .iterate() as IterableIterator<[number, number, number | null, number | null, number | null, number]>;
    for (const [kind, item, session, user, order, time] of rows) {
      log.addKeys(kind, item, session ?? -1, user ?? -1, order ?? -1, time);
    }
  }
}
