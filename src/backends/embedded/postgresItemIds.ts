import type pg from 'pg';
import { inTransaction } from './postgresWrites.js';

/**
 * The CTEs `fresh` (the ids of `ids` new to recs_item_ids, added) and `room` (one row, once the
 * count is raised by them; recs_item_room's error past `cap`), for a write that joins `room`.
 * Inside a statement that takes WRITE_LOCK, `source` is its lock CTE: the ids are then added under
 * it. New ids are found by the primary key's conflicts and the count raised with an upsert, both
 * of which see the rows other writers committed after the statement's snapshot (taken before it
 * waited for the lock), as a select would not.
 */
export function itemRoomCtes(ids: string, cap: string, source = ''): string {
  return `fresh AS (INSERT INTO recs_item_ids (item_id) SELECT DISTINCT id FROM ${source}unnest(${ids}::bigint[]) AS f(id) ON CONFLICT DO NOTHING RETURNING 1),
    room AS (INSERT INTO recs_meta (key, value) SELECT 'itemIds', count(*) FROM fresh ON CONFLICT (key) DO UPDATE SET value = recs_meta.value + excluded.value
      RETURNING recs_item_room(value, (SELECT count(*) FROM fresh), ${cap}::bigint))`;
}

/** Inside a transaction holding WRITE_LOCK: the ids of `source`'s `column` join recs_item_ids, counted (imports: no cap). */
export async function addItemIds(client: pg.PoolClient, source: string, column: string): Promise<void> {
  await client.query(`WITH fresh AS (INSERT INTO recs_item_ids (item_id) SELECT DISTINCT ${column} FROM ${source} ON CONFLICT DO NOTHING RETURNING 1)
    INSERT INTO recs_meta (key, value) SELECT 'itemIds', count(*) FROM fresh ON CONFLICT (key) DO UPDATE SET value = recs_meta.value + excluded.value`);
}

/**
 * Inside a transaction holding WRITE_LOCK (taken by an earlier statement, so this one's snapshot
 * sees every write): ids neither an event nor a record names any more leave recs_item_ids, and
 * the count is made again. After deletions (a replacing import, a prune); one scan of the events.
 */
export async function recountItemIds(client: pg.PoolClient): Promise<void> {
  await client.query(`
    DELETE FROM recs_item_ids i WHERE NOT EXISTS (SELECT 1 FROM recs_items r WHERE r.item_id = i.item_id)
      AND NOT EXISTS (SELECT 1 FROM recs_events e WHERE e.item_id = i.item_id);
    INSERT INTO recs_meta (key, value) SELECT 'itemIds', count(*) FROM recs_item_ids ON CONFLICT (key) DO UPDATE SET value = excluded.value;`);
}

/**
 * After a prune: the ids neither an event nor a record names any more leave recs_item_ids, and
 * its count goes down by as many. Under WRITE_LOCK, recountItemIds's scan of the events (0.66 s
 * for 3 million) held every other replica's writes for as long; the scan is made first, without
 * the lock, and gives the candidates with the last event id its snapshot saw. Under the lock
 * only the writes since can have named a candidate again: events are given ids in the order
 * they commit (WRITE_LOCK), so those are the events past that id, read by their primary key,
 * and the records (by theirs). A candidate either names is kept; the rest are deleted, and the
 * count lowered by the rows deleted. An id that became unnamed after the scan (another prune)
 * stays, counted, for that prune to drop.
 */
export async function dropUnnamedItemIds(pool: pg.Pool, lockKey: () => Promise<string>): Promise<void> {
  const { rows } = await pool.query<{ last: string | null; ids: string[] }>(
    `SELECT (SELECT max(id) FROM recs_events) AS last, ARRAY(SELECT item_id FROM recs_item_ids i
       WHERE NOT EXISTS (SELECT 1 FROM recs_items r WHERE r.item_id = i.item_id)
         AND NOT EXISTS (SELECT 1 FROM recs_events e WHERE e.item_id = i.item_id)) AS ids`);
  const { last, ids } = rows[0]!;
  if (ids.length === 0) return;
  const lock = await lockKey();
  await inTransaction(pool, async (client) => {
    await client.query('SELECT pg_advisory_xact_lock($1)', [lock]);
    // a statement of its own, after the lock: its snapshot has every write that went before
    await client.query(
      `WITH gone AS (DELETE FROM recs_item_ids i WHERE i.item_id = ANY($1::bigint[])
         AND NOT EXISTS (SELECT 1 FROM recs_items r WHERE r.item_id = i.item_id)
         AND NOT EXISTS (SELECT 1 FROM recs_events e WHERE e.id > $2 AND e.item_id = i.item_id) RETURNING 1)
       UPDATE recs_meta SET value = value - (SELECT count(*) FROM gone) WHERE key = 'itemIds'`,
      [ids, last ?? 0]);
  });
}
