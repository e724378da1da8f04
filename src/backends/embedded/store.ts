import { existsSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { Database as SqliteDatabase, Statement } from 'better-sqlite3';
import { parseItemRecord, toItemRecord } from '../../ports/itemRecord.js';
import type { ItemModel } from '../../ports/backend.js';
import { Catalog } from './catalog.js';
import { makeDataDir, preparePrivateFile, storeOpenError } from './dataFiles.js';
import type { EventLog, RecEvent } from './events/event.js';
import { KIND_PURCHASE, KIND_VIEW } from './events/event.js';

/** The database file in DATA_DIR. */
export const DB_FILE = 'recs.db';

/** One import as recorded in the `imports` table. */
export interface ImportRecord {
  id: number;
  what: 'events' | 'catalog';
  format: string;
  file: string;
  sha256: string;
  records: number;
  skipped: number;
  finishedAt: string | null;
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS items (item_id INTEGER PRIMARY KEY, record TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS imports (
  id INTEGER PRIMARY KEY, what TEXT NOT NULL, format TEXT NOT NULL, file TEXT NOT NULL, sha256 TEXT NOT NULL,
  records INTEGER NOT NULL DEFAULT 0, skipped INTEGER NOT NULL DEFAULT 0, started_at TEXT NOT NULL, finished_at TEXT);
CREATE TABLE IF NOT EXISTS keys (id INTEGER PRIMARY KEY, ns INTEGER NOT NULL, name TEXT NOT NULL, UNIQUE (ns, name));
CREATE TABLE IF NOT EXISTS events (
  import_id INTEGER NOT NULL, kind INTEGER NOT NULL, item_id INTEGER NOT NULL,
  session INTEGER, user INTEGER, order_id INTEGER, time INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS events_by_import ON events (import_id);
`;

const NS_SESSION = 0;
const NS_USER = 1;
const NS_ORDER = 2;
const BATCH = 20_000;
const ROWS_PER_INSERT = 100;

/**
 * DATA_DIR/recs.db, the embedded backend's SQLite database (WAL, so `serve` can read while an
 * import writes):
 * - `items`: the catalogue, one JSON record (recommendations.md shape) per item id; re-importing
 *   an item replaces it.
 * - `events`: one row per view (kind 0) or purchase (kind 1), all integers: item id, session,
 *   user and order as ids of `keys` (the names as the source file spelled them), time in ms.
 * - `imports`: every imported file with its SHA-256. Importing content already imported (same
 *   SHA-256, kind and format) is skipped, so running an import twice never doubles events;
 *   `replace` first deletes earlier imports of the same content or the same path, which is how
 *   an updated export of a file replaces the old one. An import is one transaction (beginImport),
 *   so a failed one leaves nothing; rows of an unfinished import from older versions are ignored
 *   on load and deleted on the next open.
 */
export class RecsStore {
  private constructor(readonly db: SqliteDatabase, readonly path: string) {}

  /** Opens (creating DATA_DIR 0700 and the file 0600 when missing); StoreOpenError when it cannot. */
  static open(dataDir: string): RecsStore {
    makeDataDir(dataDir);
    const path = join(dataDir, DB_FILE);
    let db: SqliteDatabase | undefined;
    try {
      preparePrivateFile(path);
      db = new Database(path);
      // a damaged file or a file of another kind fails here, not at the open
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = NORMAL');
      db.exec(SCHEMA);
      const store = new RecsStore(db, path);
      store.deleteUnfinished();
      return store;
    } catch (error) {
      db?.close();
      throw storeOpenError(path, error);
    }
  }

  /**
   * A read-only connection (serve's reloads): no schema changes and, above all, no clean-up of
   * unfinished imports, which would delete the rows of an import that is running right now.
   * Null when there is no database yet.
   */
  static openReadOnly(dataDir: string): RecsStore | null {
    const path = join(dataDir, DB_FILE);
    if (!existsSync(path)) return null;
    return new RecsStore(new Database(path, { readonly: true, fileMustExist: true }), path);
  }

  close(): void {
    this.abandonImport();
    this.db.close();
  }

  /**
   * Changes whenever an import finishes or is removed (and with `--replace` of the catalogue):
   * a query on the small `imports` table, cheap enough to poll every few seconds.
   */
  importsVersion(): string {
    const row = this.db.prepare("SELECT count(*) AS n, max(id) AS id, max(finished_at) AS at FROM imports WHERE finished_at IS NOT NULL").get() as { n: number; id: number | null; at: string | null };
    return `${row.n}:${row.id ?? 0}:${row.at ?? ''}`;
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

  imports(): ImportRecord[] {
    return (this.db.prepare('SELECT id, what, format, file, sha256, records, skipped, finished_at AS finishedAt FROM imports ORDER BY id').all() as ImportRecord[]);
  }

  /** A finished import of the same content, if any. */
  findImport(what: ImportRecord['what'], format: string, sha256: string): ImportRecord | undefined {
    return this.imports().find((i) => i.what === what && i.format === format && i.sha256 === sha256 && i.finishedAt !== null);
  }

  /** Deletes earlier imports (and their events) of the same content or the same file path. */
  removeImportsOf(what: ImportRecord['what'], file: string, sha256: string): number {
    const ids = this.imports().filter((i) => i.what === what && (i.file === file || i.sha256 === sha256)).map((i) => i.id);
    this.db.transaction(() => {
      for (const id of ids) {
        this.db.prepare('DELETE FROM events WHERE import_id = ?').run(id);
        this.db.prepare('DELETE FROM imports WHERE id = ?').run(id);
      }
    })();
    return ids.length;
  }

  /** Empties the catalogue (import catalog --replace). */
  clearCatalog(): void {
    this.db.transaction(() => {
      this.db.exec('DELETE FROM items');
      this.db.prepare("DELETE FROM imports WHERE what = 'catalog'").run();
    })();
  }

  /**
   * Starts an import: one write transaction (BEGIN IMMEDIATE) until finishImport commits it or
   * abandonImport rolls it back, so an import that fails or is killed half way leaves nothing
   * behind, neither rows nor a record saying it was done, and running it again imports it. The
   * writers' batches are savepoints inside it. A second import meanwhile waits for this one (up to
   * the busy timeout) rather than interleaving with it.
   *
   * `replace` first empties the catalogue (a catalog import) or deletes earlier imports of the same
   * content or path (events), inside the same transaction: a failed replacement keeps the old data.
   */
  beginImport(what: ImportRecord['what'], format: string, file: string, sha256: string, options: { replace?: boolean } = {}): { importId: number; removed: number } {
    this.db.exec('BEGIN IMMEDIATE');
    try {
      let removed = 0;
      if (options.replace === true && what === 'catalog') this.clearCatalog();
      else if (options.replace === true) removed = this.removeImportsOf(what, file, sha256);
      const result = this.db
        .prepare('INSERT INTO imports (what, format, file, sha256, started_at) VALUES (?, ?, ?, ?, ?)')
        .run(what, format, file, sha256, new Date().toISOString());
      return { importId: Number(result.lastInsertRowid), removed };
    } catch (error) {
      this.abandonImport();
      throw error;
    }
  }

  /** Records the import as done and commits everything it wrote. */
  finishImport(id: number, records: number, skipped: number): void {
    this.db.prepare('UPDATE imports SET records = ?, skipped = ?, finished_at = ? WHERE id = ?').run(records, skipped, new Date().toISOString(), id);
    this.db.exec('COMMIT');
  }

  /** Undoes the import begun (its rows, its record, and a --replace's deletions); nothing when none is under way. */
  abandonImport(): void {
    if (this.db.inTransaction) this.db.exec('ROLLBACK');
  }

  private deleteUnfinished(): void {
    const ids = (this.db.prepare('SELECT id FROM imports WHERE finished_at IS NULL').all() as { id: number }[]).map((r) => r.id);
    for (const id of ids) {
      this.db.prepare('DELETE FROM events WHERE import_id = ?').run(id);
      this.db.prepare('DELETE FROM imports WHERE id = ?').run(id);
    }
  }

  /** A writer of items in batched transactions; call flush() at the end. */
  itemWriter(): { add(item: ItemModel): void; flush(): void } {
    const insert = this.db.prepare('INSERT OR REPLACE INTO items (item_id, record) VALUES (?, ?)');
    let pending: ItemModel[] = [];
    const write = this.db.transaction((items: ItemModel[]) => {
      for (const item of items) insert.run(item.itemId, JSON.stringify(toItemRecord(item)));
    });
    return {
      add: (item) => {
        pending.push(item);
        if (pending.length >= BATCH) { write(pending); pending = []; }
      },
      flush: () => { write(pending); pending = []; },
    };
  }

  /** A writer of events for an import, in batched transactions; call flush() at the end. */
  eventWriter(importId: number): { add(event: RecEvent): void; flush(): void } {
    const names = [new Map<string, number>(), new Map<string, number>(), new Map<string, number>()];
    for (const row of this.db.prepare('SELECT id, ns, name FROM keys').iterate() as IterableIterator<{ id: number; ns: number; name: string }>) {
      names[row.ns]!.set(row.name, row.id);
    }
    let nextKey = ((this.db.prepare('SELECT max(id) AS m FROM keys').get() as { m: number | null }).m ?? -1) + 1;
    const insertKey = this.db.prepare('INSERT INTO keys (id, ns, name) VALUES (?, ?, ?)');
    // Many rows a statement: one call into SQLite per 100 events instead of per event halves the
    // cost of an import (1M events: about 3.5 s of inserts down to under 2 s).
    const rowSql = '(?, ?, ?, ?, ?, ?, ?)';
    const insertSql = (rows: number): string => `INSERT INTO events (import_id, kind, item_id, session, user, order_id, time) VALUES ${Array(rows).fill(rowSql).join(', ')}`;
    const insertMany: Statement = this.db.prepare(insertSql(ROWS_PER_INSERT));
    let newKeys: [number, number, string][] = [];
    let pending: RecEvent[] = [];
    const keyOf = (ns: number, name: string | null): number | null => {
      if (name === null) return null;
      let id = names[ns]!.get(name);
      if (id === undefined) {
        id = nextKey++;
        names[ns]!.set(name, id);
        newKeys.push([id, ns, name]);
      }
      return id;
    };
    const values: (number | null)[] = [];
    // Keys are named while the events are written, so the batch's new keys go in the same transaction.
    const write = this.db.transaction((events: RecEvent[]) => {
      for (let from = 0; from < events.length; from += ROWS_PER_INSERT) {
        const rows = Math.min(ROWS_PER_INSERT, events.length - from);
        values.length = 0;
        for (let i = from; i < from + rows; i++) {
          const e = events[i]!;
          values.push(
            importId, e.kind === 'purchase' ? KIND_PURCHASE : KIND_VIEW, e.itemId,
            keyOf(NS_SESSION, e.session), keyOf(NS_USER, e.user), keyOf(NS_ORDER, e.orderId), Math.round(e.time),
          );
        }
        (rows === ROWS_PER_INSERT ? insertMany : this.db.prepare(insertSql(rows))).run(values);
      }
      for (const k of newKeys) insertKey.run(...k);
      newKeys = [];
    });
    const flush = (): void => {
      const batch = pending;
      pending = [];
      write(batch);
    };
    return {
      add: (event) => {
        pending.push(event);
        if (pending.length >= BATCH) flush();
      },
      flush,
    };
  }

  /** The stored catalogue; every record goes through parseItemRecord again. */
  loadCatalog(): Catalog {
    const catalog = new Catalog();
    for (const record of this.catalogRecords()) catalog.add(parseItemRecord(JSON.parse(record)));
    return catalog;
  }

  /** Appends the stored events of finished imports to a log, in import and file order. */
  loadEvents(log: EventLog): void {
    const rows = this.db
      .prepare('SELECT kind, item_id, session, user, order_id, time FROM events WHERE import_id IN (SELECT id FROM imports WHERE finished_at IS NOT NULL) ORDER BY rowid')
      .raw()
      .iterate() as IterableIterator<[number, number, number | null, number | null, number | null, number]>;
    for (const [kind, item, session, user, order, time] of rows) {
      log.addKeys(kind, item, session ?? -1, user ?? -1, order ?? -1, time);
    }
  }
}
