import type { Statement } from 'better-sqlite3';
import { StoreFullError } from './dataFiles.js';
import type { ItemCap } from './liveStore.js';
import type { SqliteFile } from './sqliteFile.js';

/** item_ids and its count in meta 'itemIds': the distinct items every process's model holds (RECS_MAX_ITEMS). */
export class SqliteItemIds {
  constructor(private readonly file: SqliteFile) {}

  private itemIdStatements: { has: Statement; add: Statement; held: Statement; count: Statement } | null = null;

  /**
   * Inside a write transaction, before anything else of the write: the ids of `ids` new to
   * item_ids (named by no stored event or record: what every process's model holds, RECS_MAX_ITEMS)
   * join it, and its count in meta 'itemIds' goes up by them. Past `cap`, StoreFullError, nothing
   * written: the transaction holds the file's write lock, so processes sharing the file check one
   * after the other, each seeing what the others committed.
   */
  take(ids: readonly number[], cap: ItemCap | undefined): void {
    this.itemIdStatements ??= {
      has: this.file.db.prepare('SELECT 1 FROM item_ids WHERE item_id = ?').pluck(),
      add: this.file.db.prepare('INSERT INTO item_ids (item_id) VALUES (?)'),
      held: this.file.db.prepare("SELECT value FROM meta WHERE key = 'itemIds'").pluck(),
      count: this.file.db.prepare("INSERT INTO meta (key, value) VALUES ('itemIds', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value"),
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
  add(source: string): void {
    const added = this.file.db.prepare(`INSERT OR IGNORE INTO item_ids (item_id) SELECT item_id FROM ${source}`).run().changes;
    if (added > 0) this.file.setMeta('itemIds', this.file.meta('itemIds') + added);
  }

  /**
   * Inside a write transaction, after deletions (a replacing import, a prune): ids no stored event
   * or record names any more leave item_ids, and its count is made again. One scan of the events.
   */
  recount(): void {
    this.file.db.exec('DELETE FROM item_ids WHERE item_id NOT IN (SELECT item_id FROM items) AND item_id NOT IN (SELECT item_id FROM events)');
    this.file.setMeta('itemIds', this.file.db.prepare('SELECT count(*) FROM item_ids').pluck().get() as number);
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
  async dropUnnamed(): Promise<void> {
    const seen = this.file.db.transaction(() => ({
      generation: this.file.meta('generation'),
      last: (this.file.db.prepare('SELECT max(rowid) FROM events').pluck().get() as number | null) ?? 0,
      ids: this.file.db.prepare('SELECT item_id FROM item_ids WHERE item_id NOT IN (SELECT item_id FROM items) AND item_id NOT IN (SELECT item_id FROM events)').pluck().all() as number[],
    }))();
    if (seen.ids.length === 0) return;
    await this.file.write(() => {
      if (this.file.meta('generation') !== seen.generation) return this.recount();
      const named = new Set(this.file.db.prepare('SELECT item_id FROM events WHERE rowid > ?').pluck().all(seen.last) as number[]);
      const drop = this.file.db.prepare('DELETE FROM item_ids WHERE item_id = ? AND NOT EXISTS (SELECT 1 FROM items WHERE item_id = ?)');
      let dropped = 0;
      for (const id of seen.ids) if (!named.has(id)) dropped += drop.run(id, id).changes;
      if (dropped > 0) this.file.setMeta('itemIds', this.file.meta('itemIds') - dropped);
    });
  }
}
