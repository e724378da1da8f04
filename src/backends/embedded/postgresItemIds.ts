import type pg from 'pg';
import { inTransaction } from './postgresWrites.js';

/** CTEs adding the new ids of `ids` and raising the count (past `cap`, recs_item_room fails): by
 * conflicts and an upsert, which see rows committed after the statement's snapshot, as a select would not. */
export function itemRoomCtes(ids: string, cap: string, source = ''): string {
  return `fresh AS (INSERT INTO recs_item_ids (item_id) SELECT DISTINCT id FROM ${source}unnest(${ids}::bigint[]) AS f(id) ON CONFLICT DO NOTHING RETURNING 1),
    room AS (INSERT INTO recs_meta (key, value) SELECT 'itemIds', count(*) FROM fresh ON CONFLICT (key) DO UPDATE SET value = recs_meta.value + excluded.value
      RETURNING recs_item_room(value, (SELECT count(*) FROM fresh), ${cap}::bigint))`;
}

/** Under WRITE_LOCK: the ids of `source`'s `column` join recs_item_ids (imports take no cap). */
export async function addItemIds(client: pg.PoolClient, source: string, column: string): Promise<void> {
  await client.query(`WITH fresh AS (INSERT INTO recs_item_ids (item_id) SELECT DISTINCT ${column} FROM ${source} ON CONFLICT DO NOTHING RETURNING 1)
    INSERT INTO recs_meta (key, value) SELECT 'itemIds', count(*) FROM fresh ON CONFLICT (key) DO UPDATE SET value = recs_meta.value + excluded.value`);
}

/** After deletions, under WRITE_LOCK taken by an earlier statement (so that this one sees every write). */
export async function recountItemIds(client: pg.PoolClient): Promise<void> {
  await client.query(`
    DELETE FROM recs_item_ids i WHERE NOT EXISTS (SELECT 1 FROM recs_items r WHERE r.item_id = i.item_id)
      AND NOT EXISTS (SELECT 1 FROM recs_events e WHERE e.item_id = i.item_id);
    INSERT INTO recs_meta (key, value) SELECT 'itemIds', count(*) FROM recs_item_ids ON CONFLICT (key) DO UPDATE SET value = excluded.value;`);
}

/** After a prune, as recountItemIds, but the scan made first without the lock, so that other
 * replicas' writes do not wait for it; under the lock only events past its last id can name a candidate again. */
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
