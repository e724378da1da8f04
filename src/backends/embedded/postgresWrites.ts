import type pg from 'pg';
import { StoreBusyError, StoreFullError } from './dataFiles.js';

const LOCK_NOT_AVAILABLE = '55P03';

/** The SQL state recs_item_room raises (ours: PostgreSQL's classes are digits and capitals, and none is RM). */
export const PAST_ITEM_CAP = 'RMI01';

/** A write's failure as the gateway answers it: a lock wait StoreBusyError (503), the cap's refusal StoreFullError (400). */
export async function busyOnLockTimeout<T>(write: Promise<T>): Promise<T> {
  try {
    return await write;
  } catch (error) {
    const { code, detail } = error as { code?: unknown; detail?: unknown };
    if (code === PAST_ITEM_CAP && typeof detail === 'string') {
      const [held, fresh, maxItems] = detail.split(' ').map(Number);
      throw new StoreFullError(fresh!, held!, maxItems!);
    }
    if (code !== LOCK_NOT_AVAILABLE) throw error;
    throw new StoreBusyError('another process has held the PostgreSQL store\'s write lock for longer than the request may wait', { cause: error });
  }
}

export async function inTransaction<T>(pool: pg.Pool, body: (client: pg.PoolClient) => Promise<T>, begin = 'BEGIN'): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query(begin);
    const result = await body(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}

export async function bumpMeta(client: pg.PoolClient, key: string): Promise<number> {
  const { rows } = await client.query<{ value: string }>(
    'INSERT INTO recs_meta (key, value) VALUES ($1, 1) ON CONFLICT (key) DO UPDATE SET value = recs_meta.value + 1 RETURNING value', [key]);
  return Number(rows[0]!.value);
}
