import { createHash } from 'node:crypto';
import type pg from 'pg';
import type { RecommendationEntryModel, RecommendationKind, RecommendationSource } from '../../ports/backend.js';
import type { AnchoredList } from '../../recommender/index.js';

/** Row kinds of recs_published_lists: the two list kinds by anchor, and the shop's rankings (anchor 0). */
export const LIST_KINDS: readonly RecommendationKind[] = ['POST_BROWSE', 'NEXT_BEST_PRODUCT'];
export const RANKINGS_KIND = 2;
/** Kinds of the popular items under a category path (a list kind's index added), for filters naming one. */
export const CATEGORY_KIND = 3;
const SOURCES: readonly RecommendationSource[] = ['CO_VIEW', 'CO_PURCHASE', 'CATEGORY', 'DEPARTMENT', 'POPULAR', 'UPSTREAM'];

/** One stored entry: [itemId, score (null for a fill), evidence, source's index in SOURCES]. */
type StoredEntry = [number, number | null, number, number];

/** A published list: the exact unfiltered answer (`top`), and the `deep` candidates a filter is applied to. */
export interface PublishedList {
  top: RecommendationEntryModel[];
  deep: RecommendationEntryModel[];
  /** A category path's row: its item ids by popularity (top and deep are empty). */
  ids?: readonly number[];
  /** The anchor's neighbour list as the model holds it, which recommendedForYou sums; absent where it has none. */
  anchored?: AnchoredList;
}

/** The shop's rankings as published: trending and popular of each kind, deep enough for a category's share. */
export interface PublishedRankings {
  trending: { itemId: number; score: number }[];
  popular: Record<RecommendationKind, { itemId: number; score: number }[]>;
}

const SCHEMA_SQL = `
CREATE TABLE IF NOT EXISTS recs_published_lists (
  kind smallint NOT NULL, anchor bigint NOT NULL, version bigint NOT NULL, hash integer NOT NULL, list text NOT NULL,
  PRIMARY KEY (kind, anchor));
CREATE INDEX IF NOT EXISTS recs_published_by_version ON recs_published_lists (version);
`;

const toStored = (e: RecommendationEntryModel): StoredEntry => [e.itemId, e.score ?? null, e.evidence ?? 0, Math.max(0, SOURCES.indexOf(e.source ?? 'POPULAR'))];
const fromStored = ([itemId, score, evidence, source]: StoredEntry, rank: number): RecommendationEntryModel =>
  ({ rank, itemId, score, evidence, source: SOURCES[source] ?? 'POPULAR' });

export function encodeList(list: PublishedList): string {
  const near = list.anchored === undefined || list.anchored.items.length === 0 ? {} : { n: [Array.from(list.anchored.items), Array.from(list.anchored.scores)] };
  return JSON.stringify({ t: list.top.map(toStored), d: list.deep.map(toStored), ...near });
}

export function decodeList(text: string): PublishedList {
  const { t, d, n } = JSON.parse(text) as { t: StoredEntry[]; d: StoredEntry[]; n?: [number[], number[]] };
  const list: PublishedList = { top: t.map((e, i) => fromStored(e, i + 1)), deep: d.map((e, i) => fromStored(e, i + 1)) };
  if (n !== undefined) list.anchored = { items: n[0], scores: n[1] };
  return list;
}

/** A category path's row anchor: 48 bits of its digest (the row holds the path, so a clash is seen). */
export function pathAnchor(path: string): number {
  return createHash('sha256').update(path).digest().readUIntBE(0, 6);
}

export function encodeCategory(path: string, itemIds: readonly number[]): string {
  return JSON.stringify({ p: path, ids: itemIds });
}

/** The popular items under `path` as fill candidates; none where the row is another path's. */
export function decodeCategory(text: string, path: string): PublishedList {
  const { p, ids } = JSON.parse(text) as { p: string; ids: number[] };
  return { top: [], deep: [], ids: p === path ? ids : [] };
}

/** FNV-1a over the stored text: tells a list that changed from one that did not, without keeping it. */
export function listHash(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h | 0;
}

/** The learner lock's key and the notice channel of the store in `schema`: another schema's learners and replicas are another shop's. */
export function roleNames(schema: string | null): { lockKey: string; channel: string } {
  const digest = createHash('sha256').update(`recs-gateway learner\0${schema ?? 'public'}`).digest();
  // positive, so pg_locks' classid and objid put it together again without a sign to mend
  const lockKey = (digest.readBigUInt64BE(0) & 0x3fff_ffff_ffff_ffffn).toString();
  return { lockKey, channel: `recs_published_${digest.subarray(8, 14).toString('hex')}` };
}

export async function migratePublished(client: pg.Pool | pg.PoolClient): Promise<void> {
  await client.query(SCHEMA_SQL);
}

/** What every replica reads of the publisher: the newest version, when the learner last said the lists
 * were current, the last event they reflect, the items' sequence, and whether a learner holds the lock. */
export interface PublishState {
  version: number;
  publishedAt: number | null;
  publishedEventId: number;
  itemSeq: number;
  learnerActive: boolean;
}

export async function readPublishState(pool: pg.Pool, lockKey: string): Promise<PublishState> {
  const { rows } = await pool.query<{ key: string; value: string }>(
    `SELECT key, value FROM recs_meta WHERE key IN ('publishSeq', 'publishedAt', 'publishedEventId', 'itemSeq')
     UNION ALL SELECT 'learners', count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1
       AND ((classid::bigint << 32) | objid::bigint) = $1::bigint`, [lockKey]);
  const meta = new Map(rows.map((r) => [r.key, Number(r.value)]));
  return {
    version: meta.get('publishSeq') ?? 0,
    publishedAt: meta.get('publishedAt') ?? null,
    publishedEventId: meta.get('publishedEventId') ?? 0,
    itemSeq: meta.get('itemSeq') ?? 0,
    learnerActive: (meta.get('learners') ?? 0) > 0,
  };
}

/** One row to publish: `anchor` 0 with RANKINGS_KIND for the rankings. */
export interface ListRow {
  kind: number;
  anchor: number;
  hash: number;
  text: string;
}

/** Writes rows under a new version in one transaction, with the learner's heartbeat and a NOTIFY sent at
 * commit; nothing when `lockPid`'s session no longer holds the learner lock (a learner that lost it
 * and does not know yet must not write over its successor's lists). The version, or null. */
export async function publishRows(pool: pg.Pool, names: { lockKey: string; channel: string }, lockPid: number, rows: readonly ListRow[], eventId: number): Promise<number | null> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const { rows: held } = await client.query(
      `SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1 AND pid = $2
         AND ((classid::bigint << 32) | objid::bigint) = $1::bigint`, [names.lockKey, lockPid]);
    if (held.length === 0) {
      await client.query('ROLLBACK');
      return null;
    }
    let version: number | null = null;
    if (rows.length > 0) {
      const { rows: [bumped] } = await client.query<{ value: string }>(
        `INSERT INTO recs_meta (key, value) VALUES ('publishSeq', 1) ON CONFLICT (key) DO UPDATE SET value = recs_meta.value + 1 RETURNING value`);
      version = Number(bumped!.value);
      await client.query(
        `INSERT INTO recs_published_lists (kind, anchor, version, hash, list)
         SELECT k, a, $5, h, l FROM unnest($1::smallint[], $2::bigint[], $3::integer[], $4::text[]) AS r(k, a, h, l)
         ON CONFLICT (kind, anchor) DO UPDATE SET version = excluded.version, hash = excluded.hash, list = excluded.list`,
        [rows.map((r) => r.kind), rows.map((r) => r.anchor), rows.map((r) => r.hash), rows.map((r) => r.text), version]);
    }
    await client.query(
      `INSERT INTO recs_meta (key, value) VALUES ('publishedAt', $1), ('publishedEventId', $2)
       ON CONFLICT (key) DO UPDATE SET value = excluded.value`, [Date.now(), eventId]);
    if (version !== null) await client.query('SELECT pg_notify($1, $2)', [names.channel, String(version)]);
    await client.query('COMMIT');
    return version ?? 0;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}

/** The hashes of what is published by kind, then anchor, so a learner taking over publishes only what differs. */
export async function publishedHashes(pool: pg.Pool): Promise<Map<number, number>[]> {
  const result = await pool.query({ text: 'SELECT kind, anchor, hash FROM recs_published_lists', rowMode: 'array' });
  const hashes = Array.from({ length: CATEGORY_KIND + LIST_KINDS.length }, () => new Map<number, number>());
  for (const [kind, anchor, hash] of result.rows as [number, string, number][]) hashes[kind]?.set(Number(anchor), hash);
  return hashes;
}

/** The items the events after `afterId` up to `upToId` name: their lists change first. */
export async function itemsOfEvents(pool: pg.Pool, afterId: number, upToId: number): Promise<number[]> {
  const result = await pool.query({ text: 'SELECT DISTINCT item_id FROM recs_events WHERE id > $1 AND id <= $2', values: [afterId, upToId], rowMode: 'array' });
  return (result.rows as [string][]).map(([id]) => Number(id));
}

/** The rows published after `version` (at most `limit`): what a replica drops from its cache. */
export async function changedSince(pool: pg.Pool, version: number, limit: number): Promise<{ kind: number; anchor: number }[]> {
  const result = await pool.query({ text: 'SELECT kind, anchor FROM recs_published_lists WHERE version > $1 LIMIT $2', values: [version, limit], rowMode: 'array' });
  return (result.rows as [number, string][]).map(([kind, anchor]) => ({ kind, anchor: Number(anchor) }));
}

export async function readRows(pool: pg.Pool, keys: readonly { kind: number; anchor: number }[]): Promise<Map<string, string>> {
  const result = await pool.query({
    text: `SELECT p.kind, p.anchor, p.list FROM unnest($1::smallint[], $2::bigint[]) AS k(kind, anchor)
           JOIN recs_published_lists p ON p.kind = k.kind AND p.anchor = k.anchor`,
    values: [keys.map((k) => k.kind), keys.map((k) => k.anchor)],
    rowMode: 'array',
  });
  const found = new Map<string, string>();
  for (const [kind, anchor, list] of result.rows as [number, string, string][]) found.set(`${kind}:${anchor}`, list);
  return found;
}
