import type { Statement } from 'better-sqlite3';
import type { ItemModel } from '../../ports/backend.js';
import { toItemRecord } from '../../model/itemRecord.js';
import { promised } from '../../shared/promised.js';
import type { RecEvent } from '../../recommender/index.js';
import { KIND_PURCHASE, KIND_VIEW } from '../../recommender/index.js';
import type { ImportRecord, ImportSession } from './liveStore.js';
import type { SqliteFile } from './sqliteFile.js';
import type { SqliteItemIds } from './sqliteItemIds.js';
import { DELETE_EVENTS_OF_IMPORT, ROWS_PER_INSERT } from './sqliteSchema.js';

const STAGING = `
CREATE TEMP TABLE IF NOT EXISTS staged_events (kind INTEGER NOT NULL, item_id INTEGER NOT NULL, session TEXT, user TEXT, order_id TEXT, time INTEGER NOT NULL);
CREATE TEMP TABLE IF NOT EXISTS staged_items (item_id INTEGER PRIMARY KEY, record TEXT NOT NULL);
`;

/** Imports into recs.db: staged in temporary tables, moved in one write transaction. */
export class SqliteImports {
  private stagingReady = false;

  constructor(private readonly file: SqliteFile, private readonly itemIds: SqliteItemIds) {}

  list(): ImportRecord[] {
    return this.file.db.prepare('SELECT id, what, format, file, sha256, records, skipped, finished_at AS finishedAt FROM imports ORDER BY id').all() as ImportRecord[];
  }

  begin(what: ImportRecord['what'], format: string, file: string, sha256: string): ImportSession {
    this.staging();
    this.file.db.exec('DELETE FROM temp.staged_events; DELETE FROM temp.staged_items');
    const putStaged = this.file.db.prepare('INSERT OR REPLACE INTO temp.staged_items (item_id, record) VALUES (?, ?)');
    const stageItems = this.file.db.transaction((items: readonly ItemModel[]) => {
      for (const item of items) putStaged.run(item.itemId, JSON.stringify(toItemRecord(item)));
    });
    const stageEvents = this.file.db.transaction((events: readonly RecEvent[]) => this.stage(events));
    const startedAt = new Date().toISOString();
    return {
      addEvents: (events) => promised(() => stageEvents(events)),
      addItems: (items) => promised(() => stageItems(items)),
      finish: (records, skipped, options = {}) => this.file.write(() => {
        let removed = 0;
        if (options.replace === true && what === 'catalog') {
          removed = this.file.db.prepare("DELETE FROM imports WHERE what = 'catalog'").run().changes;
          this.file.db.exec('DELETE FROM items');
          this.file.setMeta('generation', this.file.meta('generation') + 1);
        } else if (options.replace === true) {
          removed = this.removeImportsOf(what, file, sha256);
          if (removed > 0) this.file.setMeta('generation', this.file.meta('generation') + 1);
        }
        const now = new Date().toISOString();
        const importId = Number(this.file.db
          .prepare('INSERT INTO imports (what, format, file, sha256, records, skipped, started_at, finished_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)')
          .run(what, format, file, sha256, records, skipped, startedAt, now).lastInsertRowid);
        if (removed > 0 || (options.replace === true && what === 'catalog')) this.itemIds.recount();
        if (what === 'events') {
          this.itemIds.add('temp.staged_events');
          this.moveStaged(importId);
        } else {
          this.file.putItems((_insert, seq) => {
            this.file.db.prepare('INSERT OR REPLACE INTO items (item_id, record, seq) SELECT item_id, record, ? FROM temp.staged_items').run(seq);
          });
          this.itemIds.add('temp.staged_items');
          this.file.db.exec('DELETE FROM temp.staged_items');
        }
        return { importId, removed };
      }),
      abandon: () => promised(() => {
        if (this.file.db.inTransaction) this.file.db.exec('ROLLBACK');
        this.file.db.exec('DELETE FROM temp.staged_events; DELETE FROM temp.staged_items');
      }),
    };
  }

  /** Deletes earlier imports (and their events) of the same content or the same file path. */
  private removeImportsOf(what: ImportRecord['what'], file: string, sha256: string): number {
    const ids = this.list().filter((i) => i.what === what && (i.file === file || i.sha256 === sha256)).map((i) => i.id);
    for (const id of ids) {
      this.file.db.prepare(DELETE_EVENTS_OF_IMPORT).run(id);
      this.file.db.prepare('DELETE FROM imports WHERE id = ?').run(id);
    }
    return ids.length;
  }

  /** Rows of unfinished imports of older versions, which wrote into `events` directly. */
  deleteUnfinished(): void {
    const ids = (this.file.db.prepare('SELECT id FROM imports WHERE finished_at IS NULL').all() as { id: number }[]).map((r) => r.id);
    for (const id of ids) {
      this.file.db.prepare(DELETE_EVENTS_OF_IMPORT).run(id);
      this.file.db.prepare('DELETE FROM imports WHERE id = ?').run(id);
    }
  }

  private staging(): void {
    if (this.stagingReady) return;
    this.file.db.exec(STAGING);
    this.stagingReady = true;
  }

  private stageStatements = new Map<number, Statement>();

  /** Writes events, their keys still names, to the temporary staging table (no lock on recs.db). */
  private stage(events: readonly RecEvent[]): void {
    this.staging();
    const statement = (rows: number): Statement => {
      let s = this.stageStatements.get(rows);
      if (s === undefined) {
        s = this.file.db.prepare(`INSERT INTO temp.staged_events (kind, item_id, session, user, order_id, time) VALUES ${Array(rows).fill('(?, ?, ?, ?, ?, ?)').join(', ')}`);
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
    this.file.db.exec(`
      INSERT OR IGNORE INTO keys (ns, name) SELECT 0, session FROM temp.staged_events WHERE session IS NOT NULL;
      INSERT OR IGNORE INTO keys (ns, name) SELECT 1, user FROM temp.staged_events WHERE user IS NOT NULL;
      INSERT OR IGNORE INTO keys (ns, name) SELECT 2, order_id FROM temp.staged_events WHERE order_id IS NOT NULL;`);
    this.file.db.prepare(`
      INSERT INTO events (import_id, kind, item_id, session, user, order_id, time)
      SELECT ?, s.kind, s.item_id, ks.id, ku.id, ko.id, s.time FROM temp.staged_events s
      LEFT JOIN keys ks ON ks.ns = 0 AND ks.name = s.session
      LEFT JOIN keys ku ON ku.ns = 1 AND ku.name = s.user
      LEFT JOIN keys ko ON ko.ns = 2 AND ko.name = s.order_id
      ORDER BY s.rowid`).run(importId);
    this.file.db.exec('DELETE FROM temp.staged_events');
  }
}
