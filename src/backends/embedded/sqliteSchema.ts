import type { Database as SqliteDatabase } from 'better-sqlite3';

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
export const EVENT_COLUMNS = 'rowid, kind, item_id, coalesce(session, -1), coalesce(user, -1), coalesce(order_id, -1), time';
/** The events that are the store's: API calls' (import 0) and finished imports'. */
export const STORED_EVENTS = '(import_id = 0 OR import_id IN (SELECT id FROM imports WHERE finished_at IS NOT NULL))';

/** Events of API calls have no import: import id 0. */
export const API_IMPORT_ID = 0;
export const ROWS_PER_INSERT = 100;
/** An import's events. events_by_import leaves API calls' events out (cheaper inserts); SQLite uses
 * a partial index only where the WHERE implies the index's, hence the second term. */
export const DELETE_EVENTS_OF_IMPORT = 'DELETE FROM events WHERE import_id = ? AND import_id <> 0';

/** Brings a file of an earlier version up to this version's schema. */
export function migrateSchema(db: SqliteDatabase): void {
  // one write transaction, so that replicas opening a fresh file together do not ALTER it twice;
  // none where the schema is current, so that a start never waits for a prune or an import's move
  if (!schemaIsCurrent(db)) db.transaction(() => {
    const hadItemIds = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'item_ids'").get() !== undefined;
    db.exec(SCHEMA);
    // item_ids made now, on a file of an earlier version: filled from its rows (SqliteItemIds.take)
    if (!hadItemIds) {
      const filled = db.prepare('INSERT OR IGNORE INTO item_ids (item_id) SELECT item_id FROM items UNION SELECT item_id FROM events').run().changes;
      db.prepare("INSERT INTO meta (key, value) VALUES ('itemIds', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value").run(filled);
    }
    const columns = db.prepare('PRAGMA table_info(items)').all() as { name: string }[];
    if (!columns.some((c) => c.name === 'seq')) {
      db.exec('ALTER TABLE items ADD COLUMN seq INTEGER NOT NULL DEFAULT 0');
    }
    db.exec('CREATE INDEX IF NOT EXISTS items_by_seq ON items (seq)');
    // an eventId's time, for prunes; null for the ids of a file of an earlier version, which are kept
    const keyColumns = db.prepare('PRAGMA table_info(keys)').all() as { name: string }[];
    if (!keyColumns.some((c) => c.name === 'time')) db.exec('ALTER TABLE keys ADD COLUMN time INTEGER');
    // events_by_import holds imported events only (DELETE_EVENTS_OF_IMPORT)
    const index = db.prepare("SELECT sql FROM sqlite_master WHERE type = 'index' AND name = 'events_by_import'").pluck().get() as string | undefined;
    if (index !== undefined && !/\bWHERE\b/i.test(index)) {
      db.exec('DROP INDEX events_by_import');
      db.exec(SCHEMA);
    }
  }).immediate();
}
