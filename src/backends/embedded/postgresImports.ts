import type pg from 'pg';
import { toItemRecord } from '../../model/itemRecord.js';
import type { ItemModel } from '../../ports/backend.js';
import type { ImportRecord, ImportSession } from './liveStore.js';
import { columns, insertEventsSql, UNNEST_EVENTS } from './postgresAppend.js';
import { addItemIds, recountItemIds } from './postgresItemIds.js';
import { bumpMeta } from './postgresWrites.js';

/** Ids and records for unnest; the last record of an id sent twice wins (ON CONFLICT cannot touch a row twice). */
export function itemColumns(items: readonly ItemModel[]): [number[], string[]] {
  const byId = new Map<number, string>();
  for (const item of items) byId.set(item.itemId, JSON.stringify(toItemRecord(item)));
  return [[...byId.keys()], [...byId.values()]];
}

/** Staged in temporary tables of one connection of its own; moved under the write lock by finish. */
export async function beginImport(pool: pg.Pool, lockKey: () => Promise<string>, what: ImportRecord['what'], format: string, file: string, sha256: string): Promise<ImportSession> {
  const lock = await lockKey();
  const client = await pool.connect();
  let released = false;
  const release = (): void => {
    if (!released) client.release();
    released = true;
  };
  try {
    await client.query(`
      CREATE TEMP TABLE IF NOT EXISTS staged_events (kind smallint, item bigint, s text, u text, o text, t bigint, n bigserial);
      CREATE TEMP TABLE IF NOT EXISTS staged_items (item_id bigint PRIMARY KEY, record text NOT NULL);
      TRUNCATE staged_events, staged_items;`);
  } catch (error) {
    release();
    throw error;
  }
  const startedAt = new Date();
  const [keysSql, insertSql] = insertEventsSql('staged_events e', '$1');
  return {
    addEvents: async (events) => {
      if (events.length === 0) return;
      await client.query('INSERT INTO staged_events (kind, item, s, u, o, t) SELECT kind, item, s, u, o, t FROM ' + UNNEST_EVENTS + ' ORDER BY n', columns(events));
    },
    addItems: async (items) => {
      if (items.length === 0) return;
      await client.query(
        `INSERT INTO staged_items (item_id, record) SELECT id, record FROM unnest($1::bigint[], $2::text[]) AS r(id, record)
         ON CONFLICT (item_id) DO UPDATE SET record = excluded.record`,
        itemColumns(items));
    },
    finish: async (records, skipped, options = {}) => {
      try {
        await client.query('BEGIN');
        await client.query('SELECT pg_advisory_xact_lock($1)', [lock]);
        let removed = 0;
        if (options.replace === true && what === 'catalog') {
          removed = (await client.query("DELETE FROM recs_imports WHERE what = 'catalog'")).rowCount ?? 0;
          await client.query('DELETE FROM recs_items');
          await bumpMeta(client, 'generation');
        } else if (options.replace === true) {
          const { rows } = await client.query<{ id: string }>('DELETE FROM recs_imports WHERE what = $1 AND (file = $2 OR sha256 = $3) RETURNING id', [what, file, sha256]);
          removed = rows.length;
          if (removed > 0) {
            await client.query('DELETE FROM recs_events WHERE import_id = ANY($1::bigint[])', [rows.map((r) => r.id)]);
            await bumpMeta(client, 'generation');
          }
        }
        const { rows } = await client.query<{ id: string }>(
          'INSERT INTO recs_imports (what, format, file, sha256, records, skipped, started_at, finished_at) VALUES ($1, $2, $3, $4, $5, $6, $7, now()) RETURNING id',
          [what, format, file, sha256, records, skipped, startedAt]);
        const importId = Number(rows[0]!.id);
        if (removed > 0 || (options.replace === true && what === 'catalog')) await recountItemIds(client);
        if (what === 'events') {
          await client.query(keysSql!);
          await client.query(insertSql!, [importId]);
          await addItemIds(client, 'staged_events', 'item');
        } else {
          const seq = await bumpMeta(client, 'itemSeq');
          await client.query(
            `INSERT INTO recs_items (item_id, record, seq) SELECT item_id, record, $1 FROM staged_items
             ON CONFLICT (item_id) DO UPDATE SET record = excluded.record, seq = excluded.seq`, [seq]);
          await addItemIds(client, 'staged_items', 'item_id');
        }
        await client.query('COMMIT');
        return { importId, removed };
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw error;
      } finally {
        await client.query('DROP TABLE IF EXISTS staged_events, staged_items').catch(() => undefined);
        release();
      }
    },
    abandon: async () => {
      if (released) return;
      await client.query('ROLLBACK').catch(() => undefined);
      await client.query('DROP TABLE IF EXISTS staged_events, staged_items').catch(() => undefined);
      release();
    },
  };
}
