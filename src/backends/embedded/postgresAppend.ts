import type pg from 'pg';
import type { RecEvent } from '../../recommender/index.js';
import { KIND_PURCHASE, KIND_VIEW } from '../../recommender/index.js';
import type { EventRow, ItemCap } from './liveStore.js';
import { NS_EVENT, NS_ORDER, NS_SESSION, NS_USER, withoutRepeatedIds } from './liveStore.js';
import { itemRoomCtes } from './postgresItemIds.js';
import { busyOnLockTimeout } from './postgresWrites.js';

/** A page of events as one bytea, EVENT_BYTES a row (EventRow's fields: int2 kind, int8 the others): seven
 * numbers of text a row cost a follower more to parse than to apply. */
const EVENT_BYTES = 50;
const PACKED_EVENT = `int8send(id) || int2send(kind) || int8send(item_id) || int8send(coalesce(session, -1))
  || int8send(coalesce(user_id, -1)) || int8send(coalesce(order_id, -1)) || int8send(time)`;

export interface EventPageKeep {
  upTo?: number;
  from?: number;
}

export const eventPageQuery = (afterId: number, limit: number, keep: EventPageKeep): { text: string; values: number[] } => ({
  text: `SELECT string_agg(${PACKED_EVENT}, ''::bytea ORDER BY id) FILTER (WHERE id <= $3 AND time >= $4), max(id)
         FROM (SELECT * FROM recs_events WHERE id > $1 ORDER BY id LIMIT $2) e`,
  values: [afterId, limit, keep.upTo ?? Number.MAX_SAFE_INTEGER, keep.from ?? Number.MIN_SAFE_INTEGER],
});

/** The `limit` events after `afterId` in store order, those up to `upTo` and from `from` kept, and the last id
 * looked at (null: none after). Only `id > $1` bounds the scan: with a range in it too, a planner whose
 * statistics lag a bulk append scans the whole range for every page (1.4 s a page at 10M events, not 12 ms). */
export async function readEventPage(client: pg.Pool | pg.PoolClient, afterId: number, limit: number, keep: EventPageKeep = {}): Promise<{ rows: EventRow[]; lastId: number | null }> {
  const result = await client.query({ ...eventPageQuery(afterId, limit, keep), rowMode: 'array' });
  const [packed, last] = (result.rows[0] as [Buffer | null, string | null] | undefined) ?? [null, null];
  const lastId = last === null ? null : Number(last);
  if (packed === null) return { rows: [], lastId };
  const int8 = (at: number): number => packed.readInt32BE(at) * 0x1_0000_0000 + packed.readUInt32BE(at + 4);
  const rows: EventRow[] = new Array<EventRow>(packed.length / EVENT_BYTES);
  for (let i = 0, at = 0; at < packed.length; i++, at += EVENT_BYTES) {
    rows[i] = [int8(at), packed.readInt16BE(at + 8), int8(at + 10), int8(at + 18), int8(at + 26), int8(at + 34), int8(at + 42)];
  }
  return { rows, lastId };
}

/** The event ids an insert returned (its first column), ascending. */
function idsOf(rows: readonly (readonly (string | null)[])[]): number[] {
  const ids: number[] = [];
  for (const row of rows) if (row[0] !== null) ids.push(Number(row[0]));
  return ids.sort((a, b) => a - b);
}

/** The events' columns as arrays, for unnest: one round trip a batch whatever its size. */
export function columns(events: readonly RecEvent[]): [number[], number[], (string | null)[], (string | null)[], (string | null)[], number[]] {
  const kind: number[] = [];
  const item: number[] = [];
  const session: (string | null)[] = [];
  const user: (string | null)[] = [];
  const order: (string | null)[] = [];
  const time: number[] = [];
  for (const e of events) {
    kind.push(e.kind === 'purchase' ? KIND_PURCHASE : KIND_VIEW);
    item.push(e.itemId);
    session.push(e.session);
    user.push(e.user);
    order.push(e.orderId);
    time.push(Math.round(e.time));
  }
  return [kind, item, session, user, order, time];
}

export const UNNEST_EVENTS = 'unnest($1::smallint[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::bigint[]) WITH ORDINALITY AS e(kind, item, s, u, o, t, n)';

export function insertEventsSql(source: string, importIdParam: string): string[] {
  return [
    `INSERT INTO recs_keys (ns, name)
       SELECT DISTINCT ns, name FROM (SELECT 0 AS ns, s AS name FROM ${source} UNION ALL SELECT 1, u FROM ${source} UNION ALL SELECT 2, o FROM ${source}) k
       WHERE name IS NOT NULL ORDER BY ns, name ON CONFLICT DO NOTHING`,
    `INSERT INTO recs_events (import_id, kind, item_id, session, user_id, order_id, time)
       SELECT ${importIdParam}, e.kind, e.item, ks.id, ku.id, ko.id, e.t FROM ${source}
       LEFT JOIN recs_keys ks ON ks.ns = 0 AND ks.name = e.s
       LEFT JOIN recs_keys ku ON ku.ns = 1 AND ku.name = e.u
       LEFT JOIN recs_keys ko ON ko.ns = 2 AND ko.name = e.o
       ORDER BY e.n`,
  ];
}

function unnamed(ids: readonly Map<string, number>[]): [number[], string[]] {
  const ns: number[] = [];
  const names: string[] = [];
  ids.forEach((m, n) => {
    for (const [name, id] of m) {
      if (id >= 0) continue;
      ns.push(n);
      names.push(name);
    }
  });
  return [ns, names];
}

/** Two round trips: the keys named first, without the write lock; then one statement takes the
 * lock, inserts and commits, so that the lock is never held across a round trip. */
export async function appendEvents(pool: pg.Pool, lockKey: () => Promise<string>, all: readonly RecEvent[], cap?: ItemCap): Promise<EventRow[]> {
  const events = withoutRepeatedIds(all);
  if (events.length === 0) return [];
  const ids = await busyOnLockTimeout(nameKeys(pool, events));
  const key = (n: number, name: string | null): number => (name === null ? -1 : ids[n]!.get(name)!);
  const kinds = events.map((e) => (e.kind === 'purchase' ? KIND_PURCHASE : KIND_VIEW));
  const sessions = events.map((e) => key(NS_SESSION, e.session));
  const users = events.map((e) => key(NS_USER, e.user));
  const orders = events.map((e) => key(NS_ORDER, e.orderId));
  const times = events.map((e) => Math.round(e.time));
  const orNull = (id: number): number | null => (id < 0 ? null : id);
  const values = [kinds, events.map((e) => e.itemId), sessions.map(orNull), users.map(orNull), orders.map(orNull), times, await lockKey(), cap?.maxItems ?? null];
  const rows = (inserted: number[], kept: (i: number) => boolean): EventRow[] => {
    const stored: EventRow[] = [];
    for (let i = 0; i < events.length; i++) {
      if (kept(i)) stored.push([inserted[stored.length]!, kinds[i]!, events[i]!.itemId, sessions[i]!, users[i]!, orders[i]!, times[i]!]);
    }
    return stored;
  };
  // Joined with `lock` before the column default runs, the ids are taken under WRITE_LOCK, in
  // order. Only the ids come back: reading the rows back costs more than writing them.
  if (!events.some((e) => e.eventId != null)) {
    const result = await busyOnLockTimeout(pool.query({
      text: `WITH lock AS MATERIALIZED (SELECT pg_advisory_xact_lock($7)),
             ${itemRoomCtes('$2', '$8', 'lock, ')}
             INSERT INTO recs_events (import_id, kind, item_id, session, user_id, order_id, time)
             SELECT 0, kind, item, s, u, o, t FROM lock, room, unnest($1::smallint[], $2::bigint[], $3::bigint[], $4::bigint[], $5::bigint[], $6::bigint[])
               WITH ORDINALITY AS e(kind, item, s, u, o, t, n) ORDER BY n
             RETURNING id`,
      values,
      rowMode: 'array',
    }));
    return rows(idsOf(result.rows as [string | null, string | null][]), () => true);
  }
  // With eventIds, taken in the same statement: the unique index sees another writer's, so two
  // replicas store an event once. Kept events come back as positions: a name is not always read back as sent.
  const result = await busyOnLockTimeout(pool.query({
    text: `WITH lock AS MATERIALIZED (SELECT pg_advisory_xact_lock($7)),
           ${itemRoomCtes('$2', '$8', 'lock, ')},
           taken AS (
             INSERT INTO recs_keys (ns, name, time) SELECT ${NS_EVENT}, name, t FROM lock, unnest($9::text[], $6::bigint[]) AS c(name, t)
             WHERE name IS NOT NULL ON CONFLICT DO NOTHING RETURNING name),
           stored AS (
             INSERT INTO recs_events (import_id, kind, item_id, session, user_id, order_id, time)
             SELECT 0, kind, item, s, u, o, t FROM lock, room, unnest($1::smallint[], $2::bigint[], $3::bigint[], $4::bigint[], $5::bigint[], $6::bigint[], $9::text[])
               WITH ORDINALITY AS e(kind, item, s, u, o, t, eid, n)
             WHERE eid IS NULL OR eid IN (SELECT name FROM taken) ORDER BY n
             RETURNING id)
           SELECT id::text, NULL FROM stored
           UNION ALL SELECT NULL, n::text FROM unnest($9::text[]) WITH ORDINALITY AS k(eid, n) WHERE eid IN (SELECT name FROM taken)`,
    values: [...values, events.map((e) => e.eventId ?? null)],
    rowMode: 'array',
  }));
  const taken = new Set<number>();
  for (const [, position] of result.rows as [string | null, string | null][]) if (position !== null) taken.add(Number(position) - 1);
  return rows(idsOf(result.rows as [string | null, string | null][]), (i) => events[i]!.eventId == null || taken.has(i));
}

/** The key ids of the batch's names per namespace, new ones added, committed on their own: no
 * follower reads a name, so one named for a batch that then fails is harmless. */
async function nameKeys(pool: pg.Pool, events: readonly RecEvent[]): Promise<Map<string, number>[]> {
  const ids = [new Map<string, number>(), new Map<string, number>(), new Map<string, number>()];
  for (const e of events) {
    if (e.session !== null) ids[NS_SESSION]!.set(e.session, -1);
    if (e.user !== null) ids[NS_USER]!.set(e.user, -1);
    if (e.orderId !== null) ids[NS_ORDER]!.set(e.orderId, -1);
  }
  const [ns, names] = unnamed(ids);
  if (names.length === 0) return ids;
  // a name another writer commits meanwhile is neither inserted nor seen: read again after
  const named = await pool.query({
    text: `WITH names AS (SELECT * FROM unnest($1::smallint[], $2::text[]) AS n(ns, name)),
             ins AS (INSERT INTO recs_keys (ns, name) SELECT ns, name FROM names ORDER BY ns, name ON CONFLICT DO NOTHING RETURNING id, ns, name)
           SELECT id, ns, name FROM ins
           UNION ALL SELECT (SELECT k.id FROM recs_keys k WHERE k.ns = n.ns AND k.name = n.name), n.ns, n.name FROM names n`,
    values: [ns, names],
    rowMode: 'array',
  });
  for (const [id, n, name] of named.rows as [string | null, number, string][]) if (id !== null) ids[n]!.set(name, Number(id));
  const left = unnamed(ids);
  if (left[1].length > 0) {
    const again = await pool.query({
      text: 'SELECT (SELECT k.id FROM recs_keys k WHERE k.ns = n.ns AND k.name = n.name), n.ns, n.name FROM unnest($1::smallint[], $2::text[]) AS n(ns, name)',
      values: left,
      rowMode: 'array',
    });
    for (const [id, n, name] of again.rows as [string | null, number, string][]) {
      if (id === null) throw new Error(`recs_keys has no row for a name just added (namespace ${n})`);
      ids[n]!.set(name, Number(id));
    }
  }
  return ids;
}
