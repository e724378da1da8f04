import type { Statement } from 'better-sqlite3';
import type { RecEvent } from '../../recommender/index.js';
import { KIND_PURCHASE, KIND_VIEW } from '../../recommender/index.js';
import { StoreBusyError, StoreFullError } from './dataFiles.js';
import type { EventRow, ItemCap } from './liveStore.js';
import { NS_EVENT, NS_ORDER, NS_SESSION, NS_USER } from './liveStore.js';
import type { SqliteFile } from './sqliteFile.js';
import type { SqliteItemIds } from './sqliteItemIds.js';
import { API_IMPORT_ID, ROWS_PER_INSERT } from './sqliteSchema.js';

/** API calls' events into recs.db: group commits, key names, eventIds taken. */
export class SqliteAppender {
  constructor(private readonly file: SqliteFile, private readonly itemIds: SqliteItemIds) {}

  private appendStatements = new Map<number, Statement>();
  private appendKeyStatements: { lastRow: Statement; find: Statement; name: Statement } | null = null;

  /** appendNow's lookups, prepared once: better-sqlite3's prepare parses the SQL anew each time. */
  private appendKeys(): { lastRow: Statement; find: Statement; name: Statement } {
    this.appendKeyStatements ??= {
      lastRow: this.file.db.prepare('SELECT max(rowid) FROM events').pluck(),
      find: this.file.db.prepare('SELECT id FROM keys WHERE ns = ? AND name = ?').pluck(),
      name: this.file.db.prepare('INSERT INTO keys (ns, name) VALUES (?, ?)'),
    };
    return this.appendKeyStatements;
  }
  private appending: { events: readonly RecEvent[]; cap: ItemCap | undefined; resolve: (rows: EventRow[]) => void; reject: (error: unknown) => void }[] = [];

  /** A call's events, committed durably before the promise resolves. The calls of one turn of the
   * event loop share one transaction after it, and so its fsync, the cost of synchronous=FULL. */
  appendEvents(events: readonly RecEvent[], cap?: ItemCap): Promise<EventRow[]> {
    if (events.length === 0) return Promise.resolve([]);
    return new Promise((resolve, reject) => {
      this.appending.push({ events, cap, resolve, reject });
      if (this.appending.length === 1) setImmediate(() => void this.commitAppends());
    });
  }

  readonly groupCommits = { commits: 0, calls: 0 };

  private async commitAppends(): Promise<void> {
    const group = this.appending;
    this.appending = [];
    let rows: (EventRow[] | StoreFullError)[];
    try {
      // a call past the cap is refused alone, before it writes anything: the others are kept
      rows = await this.file.write(() => group.map((call) => {
        try {
          return this.appendNow(call.events, call.cap);
        } catch (error) {
          if (error instanceof StoreFullError) return error;
          throw error;
        }
      }));
    } catch (error) {
      // each call alone, so that one call's failure is only its own (a lock held elsewhere is everyone's)
      if (group.length === 1 || error instanceof StoreBusyError) for (const call of group) call.reject(error);
      else for (const call of group) this.file.write(() => this.appendNow(call.events, call.cap)).then(call.resolve, call.reject);
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

  /** A call's events, inside a write transaction, not read back: under the write lock the rows take
   * the ids after the largest, in order (checked), so they are answered from what was written. */
  private appendNow(all: readonly RecEvent[], cap?: ItemCap): EventRow[] {
    this.itemIds.take(all.map((e) => e.itemId), cap);
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
        st = this.file.db.prepare(`INSERT INTO events (import_id, kind, item_id, session, user, order_id, time) VALUES ${Array(n).fill(`(${API_IMPORT_ID}, ?, ?, ?, ?, ?, ?)`).join(', ')}`);
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
    return last === before + rows.length ? rows : this.file.readEventsAfter(before, events.length);
  }

  /** The events whose eventId is new, their ids taken in the rows' transaction: with the rows or not at all. */
  private withoutDuplicates(events: readonly RecEvent[]): readonly RecEvent[] {
    if (!events.some((e) => e.eventId != null)) return events;
    const take = this.file.db.prepare(`INSERT OR IGNORE INTO keys (ns, name, time) VALUES (${NS_EVENT}, ?, ?)`);
    return events.filter((e) => e.eventId == null || take.run(e.eventId, Math.round(e.time)).changes === 1);
  }
}
