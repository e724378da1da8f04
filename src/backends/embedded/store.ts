import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import Database from 'better-sqlite3';
import type { Database as SqliteDatabase } from 'better-sqlite3';
import { parseStoredRecord, toItemRecord } from '../../model/itemRecord.js';
import type { ItemModel } from '../../ports/backend.js';
import { Catalog } from '../../recommender/index.js';
import { makeDataDir, preparePrivateFile, storeOpenError } from './dataFiles.js';
import type { EventLog, RecEvent } from '../../recommender/index.js';
import type { EventRow, ImportRecord, ImportSession, ItemCap, RecsDataStore, SnapshotSink, StoreHead } from './liveStore.js';
import { NS_EVENT, NS_SESSION, NS_USER, PRUNE_ROWS } from './liveStore.js';
import { promised } from '../../shared/promised.js';
import { SqliteAppender } from './sqliteAppend.js';
import { LOCK_RETRY_MS, LOCK_WAIT_MS, SqliteFile } from './sqliteFile.js';
import { SqliteImports } from './sqliteImports.js';
import { SqliteItemIds } from './sqliteItemIds.js';
import { EVENT_COLUMNS, migrateSchema, STORED_EVENTS } from './sqliteSchema.js';

export type { ImportRecord } from './liveStore.js';

/** The database file in DATA_DIR. */
export const DB_FILE = 'recs.db';

/** How long a prune leaves the write lock free after each transaction that deleted, for writers elsewhere. */
const PRUNE_PAUSE_MS = 30;

/** The busy timeout while a start opens the file: replicas starting together on a fresh DATA_DIR
 * wait for each other's schema transaction. Nothing else runs in the process yet. */
const OPEN_LOCK_WAIT_MS = 10_000;

export interface RecsStoreOptions {
  /** How long a write waits for another process's write lock before it fails with StoreBusyError; default LOCK_RETRY_MS. */
  lockRetryMs?: number;
}

/** DATA_DIR/recs.db (tables in sqliteSchema.ts): WAL, so that readers never wait for writers and
 * processes on one machine share it; synchronous=FULL, so that an acknowledged call survives a crash. */
export class RecsStore implements RecsDataStore {
  readonly where: string;
  readonly kind = 'sqlite';
  private readonly file: SqliteFile;
  private readonly itemIds: SqliteItemIds;
  private readonly appender: SqliteAppender;
  private readonly importer: SqliteImports;

  private constructor(readonly db: SqliteDatabase, readonly path: string, lockRetryMs = LOCK_RETRY_MS) {
    this.where = path;
    this.file = new SqliteFile(db, path, lockRetryMs);
    this.itemIds = new SqliteItemIds(this.file);
    this.appender = new SqliteAppender(this.file, this.itemIds);
    this.importer = new SqliteImports(this.file, this.itemIds);
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
      migrateSchema(db);
      const store = new RecsStore(db, path, options.lockRetryMs);
      // a read too waits out another process's last close (its checkpoint, synchronous=FULL)
      store.importer.deleteUnfinished();
      db.pragma(`busy_timeout = ${LOCK_WAIT_MS}`);
      return store;
    } catch (error) {
      db?.close();
      throw storeOpenError(path, error);
    }
  }

  /** A read-only connection (build workers, tests): no schema changes, no clean-up; null without a file. */
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

  headNow(): StoreHead {
    return {
      generation: this.file.meta('generation'),
      lastEventId: (this.db.prepare('SELECT max(rowid) FROM events').pluck().get() as number | null) ?? 0,
      lastItemSeq: this.file.meta('itemSeq'),
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

  catalogRecords(): IterableIterator<string> {
    return this.db.prepare('SELECT record FROM items').pluck().iterate() as IterableIterator<string>;
  }

  itemCount(): number {
    return (this.db.prepare('SELECT count(*) AS n FROM items').get() as { n: number }).n;
  }

  eventCount(): number {
    return (this.db.prepare('SELECT count(*) AS n FROM events').get() as { n: number }).n;
  }

  keyIds(sessionId: string | null, userId: string | null): Promise<{ session: number | null; user: number | null }> {
    return promised(() => {
      const find = this.db.prepare('SELECT id FROM keys WHERE ns = ? AND name = ?').pluck();
      const id = (ns: number, name: string | null): number | null => (name === null ? null : (find.get(ns, name) as number | undefined) ?? null);
      return { session: id(NS_SESSION, sessionId), user: id(NS_USER, userId) };
    });
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
      const changes = await this.file.write(() => prune.run(after, after + PRUNE_ROWS, last, cutoff).changes);
      removed += changes;
      // free for longer than a waiting write() looks again: writes elsewhere wait for one transaction, not many
      if (changes > 0) await sleep(PRUNE_PAUSE_MS);
    }
    const lastKey = (this.db.prepare('SELECT max(id) FROM keys').pluck().get() as number | null) ?? 0;
    const forget = this.db.prepare(`DELETE FROM keys WHERE id > ? AND id <= ? AND ns = ${NS_EVENT} AND time < ?`);
    let eventIds = 0;
    for (let after = 0; after < lastKey; after += PRUNE_ROWS) {
      const changes = await this.file.write(() => forget.run(after, after + PRUNE_ROWS, cutoff).changes);
      eventIds += changes;
      if (changes > 0) await sleep(PRUNE_PAUSE_MS);
    }
    // the items only the deleted events named no longer count against RECS_MAX_ITEMS
    if (removed > 0) await this.itemIds.dropUnnamed();
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
    return this.importer.list();
  }

  imports(): Promise<ImportRecord[]> {
    return promised(() => this.importsNow());
  }

  findImport(what: ImportRecord['what'], format: string, sha256: string): Promise<ImportRecord | undefined> {
    return promised(() => this.importsNow().find((i) => i.what === what && i.format === format && i.sha256 === sha256 && i.finishedAt !== null));
  }

  appendEvents(events: readonly RecEvent[], cap?: ItemCap): Promise<EventRow[]> {
    return this.appender.appendEvents(events, cap);
  }

  get groupCommits(): SqliteAppender['groupCommits'] {
    return this.appender.groupCommits;
  }

  async upsertItems(items: readonly ItemModel[], cap?: ItemCap): Promise<number> {
    return this.file.write(() => {
      this.itemIds.take(items.map((item) => item.itemId), cap);
      return this.file.putItems((insert, seq) => {
        for (const item of items) insert.run(item.itemId, JSON.stringify(toItemRecord(item)), seq);
      });
    });
  }

  eventsAfter(afterId: number, limit: number): Promise<EventRow[]> {
    return promised(() => this.file.readEventsAfter(afterId, limit));
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
    return promised(() => this.importer.begin(what, format, file, sha256));
  }

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