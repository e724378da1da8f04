import type { Statement } from 'better-sqlite3';
import { StoreFullError } from './dataFiles.js';
import type { ItemCap } from './liveStore.js';
import type { SqliteFile } from './sqliteFile.js';

/** item_ids and its count in meta 'itemIds': the distinct items every process's model holds (RECS_MAX_ITEMS). */
export class SqliteItemIds {
  constructor(private readonly file: SqliteFile) {}

  private itemIdStatements: { has: Statement; add: Statement; held: Statement; count: Statement } | null = null;

  /** First in a write transaction: the new ids join item_ids, or past `cap` StoreFullError. Under
   * the write lock, processes sharing the file check one after the other, seeing each other's. */
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

  /** After an import's insertions: `source`'s item ids join item_ids (imports take no cap). */
  add(source: string): void {
    const added = this.file.db.prepare(`INSERT OR IGNORE INTO item_ids (item_id) SELECT item_id FROM ${source}`).run().changes;
    if (added > 0) this.file.setMeta('itemIds', this.file.meta('itemIds') + added);
  }

  /** After deletions: ids no stored event or record names leave item_ids. One scan of the events. */
  recount(): void {
    this.file.db.exec('DELETE FROM item_ids WHERE item_id NOT IN (SELECT item_id FROM items) AND item_id NOT IN (SELECT item_id FROM events)');
    this.file.setMeta('itemIds', this.file.db.prepare('SELECT count(*) FROM item_ids').pluck().get() as number);
  }

  /** After a prune, as recount, but the scan made first in a read transaction, so that other
   * processes' writes do not wait for it; under the lock only events since its last rowid can name
   * a candidate again (rowids follow commits while a prune keeps the newest event). */
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
