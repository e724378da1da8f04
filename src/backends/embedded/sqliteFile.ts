import type { Database as SqliteDatabase, Statement } from 'better-sqlite3';
import { setTimeout as sleep } from 'node:timers/promises';
import { StoreBusyError } from './dataFiles.js';
import type { EventRow } from './liveStore.js';
import { EVENT_COLUMNS } from './sqliteSchema.js';

/** SQLite's busy timeout, short: a statement waits with the event loop blocked (writes retry on timers instead). */
export const LOCK_WAIT_MS = 50;
/** Default of RecsStoreOptions.lockRetryMs: long enough for another process's import to finish its move. */
export const LOCK_RETRY_MS = 60_000;

const isBusy = (error: unknown): boolean => /^SQLITE_BUSY/.test((error as { code?: string } | null)?.code ?? '');

/** A connection to recs.db with what every part of the store writes through: the write lock, the meta counters. */
export class SqliteFile {
  private readonly noBusyWait: Statement;
  private readonly busyWait: Statement;

  constructor(readonly db: SqliteDatabase, readonly path: string, private readonly lockRetryMs = LOCK_RETRY_MS) {
    this.noBusyWait = db.prepare('PRAGMA busy_timeout = 0');
    this.busyWait = db.prepare(`PRAGMA busy_timeout = ${LOCK_WAIT_MS}`);
  }

  meta(key: string): number {
    try {
      return (this.db.prepare('SELECT value FROM meta WHERE key = ?').pluck().get(key) as number | undefined) ?? 0;
    } catch {
      return 0; // a read-only connection to a file of an older version, without the table
    }
  }

  setMeta(key: string, value: number): void {
    this.db.prepare('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value').run(key, value);
  }

  /** Runs `body` in one write transaction; while another process holds the lock, retries on timers
   * (not SQLite's busy handler, which sleeps on the event loop); StoreBusyError past lockRetryMs. */
  async write<T>(body: () => T): Promise<T> {
    const deadline = Date.now() + this.lockRetryMs;
    for (let attempt = 0; ; attempt++) {
      try {
        this.beginImmediateNow();
      } catch (error) {
        if (!isBusy(error)) throw error;
        if (Date.now() > deadline) {
          throw new StoreBusyError(`another process has held the write lock of ${this.path} for over ${Math.round(this.lockRetryMs / 1000)} s`, { cause: error });
        }
        // as often as SQLite's own busy handler looks
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

  private beginImmediateNow(): void {
    this.noBusyWait.get();
    try {
      this.db.exec('BEGIN IMMEDIATE');
    } finally {
      this.busyWait.get();
    }
  }

  readEventsAfter(afterId: number, limit: number): EventRow[] {
    return this.db
      .prepare(`SELECT ${EVENT_COLUMNS} FROM events WHERE rowid > ? ORDER BY rowid LIMIT ?`)
      .raw()
      .all(afterId, limit) as EventRow[];
  }

  /** Writes records under a new item sequence number (inside a write transaction). */
  putItems(write: (insert: Statement, seq: number) => void): number {
    const seq = this.meta('itemSeq') + 1;
    write(this.db.prepare('INSERT OR REPLACE INTO items (item_id, record, seq) VALUES (?, ?, ?)'), seq);
    this.setMeta('itemSeq', seq);
    return seq;
  }
}
