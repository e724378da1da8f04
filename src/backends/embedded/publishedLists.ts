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
  trending: { itemId: number; score: number | null }[];
  popular: Record<RecommendationKind, { itemId: number; score: number | null }[]>;
}

// Lists are derived from the events: a table of an older (text) format is dropped, and the learner, reading
// no hashes, publishes every list again.
const SCHEMA_SQL = `
DO $$ BEGIN
  IF EXISTS (SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema()
      AND table_name = 'recs_published_lists' AND column_name = 'list' AND data_type <> 'bytea') THEN
    DROP TABLE recs_published_lists;
  END IF;
END $$;
CREATE TABLE IF NOT EXISTS recs_published_lists (
  kind smallint NOT NULL, anchor bigint NOT NULL, version bigint NOT NULL, hash integer NOT NULL, list bytea NOT NULL,
  PRIMARY KEY (kind, anchor));
CREATE INDEX IF NOT EXISTS recs_published_by_version ON recs_published_lists (version);
`;

/** A list row's bytes: a flags byte (TOP_IS_PREFIX), the counts of top and deep (u16 each), then the entries
 * (top's unless they are deep's first, then deep's), each ENTRY_BYTES: itemId and score as f64 (exact as
 * the model has them), evidence as i32, the source's index in SOURCES (NULL_SCORE: no score). */
const HEADER_BYTES = 5;
const ENTRY_BYTES = 21;
const TOP_IS_PREFIX = 1;
/** After the entries, where the anchor has neighbours: their count (u32), then each item id and score as f64. */
const NEAR_BYTES = 16;
const NULL_SCORE = 0x80;

const sourceIndex = (source: RecommendationSource | undefined): number => Math.max(0, SOURCES.indexOf(source ?? 'POPULAR'));

function isPrefix(top: readonly RecommendationEntryModel[], deep: readonly RecommendationEntryModel[]): boolean {
  if (top.length > deep.length) return false;
  for (let i = 0; i < top.length; i++) {
    const a = top[i]!;
    const b = deep[i]!;
    if (a.itemId !== b.itemId || (a.score ?? null) !== (b.score ?? null) || (a.evidence ?? 0) !== (b.evidence ?? 0) || sourceIndex(a.source) !== sourceIndex(b.source)) return false;
  }
  return true;
}

export function encodeList(list: PublishedList): Buffer {
  const prefix = isPrefix(list.top, list.deep);
  const stored = prefix ? list.deep : [...list.top, ...list.deep];
  const near = list.anchored?.items.length ?? 0;
  const buf = Buffer.allocUnsafe(HEADER_BYTES + stored.length * ENTRY_BYTES + (near > 0 ? 4 + near * NEAR_BYTES : 0));
  buf.writeUInt8(prefix ? TOP_IS_PREFIX : 0, 0);
  buf.writeUInt16LE(list.top.length, 1);
  buf.writeUInt16LE(list.deep.length, 3);
  let at = HEADER_BYTES;
  for (const e of stored) {
    buf.writeDoubleLE(e.itemId, at);
    buf.writeDoubleLE(e.score ?? 0, at + 8);
    buf.writeInt32LE(e.evidence ?? 0, at + 16);
    buf.writeUInt8(sourceIndex(e.source) | (e.score == null ? NULL_SCORE : 0), at + 20);
    at += ENTRY_BYTES;
  }
  if (near > 0) {
    const { items, scores } = list.anchored!;
    buf.writeUInt32LE(near, at);
    at += 4;
    for (let i = 0; i < near; i++, at += NEAR_BYTES) {
      buf.writeDoubleLE(items[i]!, at);
      buf.writeDoubleLE(scores[i]!, at + 8);
    }
  }
  return buf;
}

function entryAt(buf: Buffer, at: number, rank: number): RecommendationEntryModel {
  const source = buf.readUInt8(at + 20);
  return {
    rank,
    itemId: buf.readDoubleLE(at),
    score: source & NULL_SCORE ? null : buf.readDoubleLE(at + 8),
    evidence: buf.readInt32LE(at + 16),
    source: SOURCES[source & ~NULL_SCORE] ?? 'POPULAR',
  };
}

/** A list row read as it is asked for: a request shows the top ten, a filter walks the deep candidates,
 * recommendedForYou sums the neighbours; each part is decoded once, when first read. */
class DecodedList implements PublishedList {
  private topList?: RecommendationEntryModel[];
  private deepList?: RecommendationEntryModel[];
  private near?: AnchoredList | null;

  constructor(private readonly buf: Buffer) {}

  private get prefix(): boolean {
    return (this.buf.readUInt8(0) & TOP_IS_PREFIX) !== 0;
  }

  private get deepAt(): number {
    return HEADER_BYTES + (this.prefix ? 0 : this.buf.readUInt16LE(1) * ENTRY_BYTES);
  }

  get top(): RecommendationEntryModel[] {
    return (this.topList ??= this.entries(HEADER_BYTES, this.buf.readUInt16LE(1)));
  }

  get deep(): RecommendationEntryModel[] {
    return (this.deepList ??= this.entries(this.deepAt, this.buf.readUInt16LE(3)));
  }

  get anchored(): AnchoredList | undefined {
    if (this.near === undefined) {
      let at = this.deepAt + this.buf.readUInt16LE(3) * ENTRY_BYTES;
      this.near = null;
      if (at < this.buf.length) {
        const count = this.buf.readUInt32LE(at);
        at += 4;
        const items = new Float64Array(count);
        const scores = new Float64Array(count);
        for (let i = 0; i < count; i++, at += NEAR_BYTES) {
          items[i] = this.buf.readDoubleLE(at);
          scores[i] = this.buf.readDoubleLE(at + 8);
        }
        this.near = { items, scores };
      }
    }
    return this.near ?? undefined;
  }

  private entries(at: number, length: number): RecommendationEntryModel[] {
    return Array.from({ length }, (_, i) => entryAt(this.buf, at + i * ENTRY_BYTES, i + 1));
  }
}

export function decodeList(buf: Buffer): PublishedList {
  return new DecodedList(buf);
}

/** A category path's row anchor: 48 bits of its digest (the row holds the path, so a clash is seen). */
export function pathAnchor(path: string): number {
  return createHash('sha256').update(path).digest().readUIntBE(0, 6);
}

export function encodeCategory(path: string, itemIds: readonly number[]): Buffer {
  return Buffer.from(JSON.stringify({ p: path, ids: itemIds }));
}

/** The popular items under `path` as fill candidates; none where the row is another path's. */
export function decodeCategory(buf: Buffer, path: string): PublishedList {
  const { p, ids } = JSON.parse(buf.toString()) as { p: string; ids: number[] };
  return { top: [], deep: [], ids: p === path ? ids : [] };
}

export function encodeRankings(rankings: PublishedRankings): Buffer {
  return Buffer.from(JSON.stringify(rankings));
}

export function decodeRankings(buf: Buffer): PublishedRankings {
  return JSON.parse(buf.toString()) as PublishedRankings;
}

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;
const f64 = new Float64Array(1);
const f64Words = new Int32Array(f64.buffer);
const mixNumber = (h: number, n: number): number => {
  f64[0] = n;
  return Math.imul(Math.imul(h ^ f64Words[0]!, FNV_PRIME) ^ f64Words[1]!, FNV_PRIME);
};

/** FNV-1a over what a list row stores (its entries' fields, not their bytes): tells a list that changed
 * from one that did not before it is encoded, and without keeping it. */
export function listHash(list: PublishedList): number {
  let h = mixNumber(FNV_OFFSET, list.top.length);
  for (const entries of [list.top, list.deep]) {
    h = mixNumber(h, entries.length);
    for (const e of entries) {
      h = mixNumber(mixNumber(h, e.itemId), e.score ?? NaN);
      h = mixNumber(mixNumber(h, e.evidence ?? 0), sourceIndex(e.source));
    }
  }
  const near = list.anchored;
  if (near !== undefined) for (let i = 0; i < near.items.length; i++) h = mixNumber(mixNumber(h, near.items[i]!), near.scores[i]!);
  return h | 0;
}

/** FNV-1a over a row's bytes (category paths, rankings: a few rows). */
export function bytesHash(buf: Buffer): number {
  let h = FNV_OFFSET;
  for (let i = 0; i < buf.length; i++) h = Math.imul(h ^ buf[i]!, FNV_PRIME);
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
  bytes: Buffer;
}

/** Writes rows under a new version in one transaction, with the learner's heartbeat (unless not `current`:
 * its sweeps fail) and a NOTIFY sent at commit; nothing when `lockPid`'s session no longer holds the learner
 * lock (a learner that lost it must not write over its successor's lists). The version, or null. */
export async function publishRows(pool: pg.Pool, names: { lockKey: string; channel: string }, lockPid: number, rows: readonly ListRow[], eventId: number, current = true): Promise<number | null> {
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
      // the rows' bytes as one parameter (sent as binary), cut in the statement: an array of bytea goes as hex text
      const starts: number[] = [];
      let at = 1;
      for (const r of rows) {
        starts.push(at);
        at += r.bytes.length;
      }
      await client.query(
        `INSERT INTO recs_published_lists (kind, anchor, version, hash, list)
         SELECT k, a, $5, h, substring($4::bytea FROM s FOR n) FROM unnest($1::smallint[], $2::bigint[], $3::integer[], $6::integer[], $7::integer[]) AS r(k, a, h, s, n)
         ON CONFLICT (kind, anchor) DO UPDATE SET version = excluded.version, hash = excluded.hash, list = excluded.list`,
        [rows.map((r) => r.kind), rows.map((r) => r.anchor), rows.map((r) => r.hash), Buffer.concat(rows.map((r) => r.bytes)), version, starts, rows.map((r) => r.bytes.length)]);
    }
    await client.query(
      `INSERT INTO recs_meta (key, value) SELECT * FROM (VALUES ('publishedAt', $1::bigint), ('publishedEventId', $2::bigint)) v(key, value)
       WHERE $3 OR key <> 'publishedAt' ON CONFLICT (key) DO UPDATE SET value = excluded.value`, [Date.now(), eventId, current]);
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

/** The store's newest event id: how far the model is behind it. */
export async function newestEventId(pool: pg.Pool): Promise<number> {
  const result = await pool.query({ text: 'SELECT max(id) FROM recs_events', rowMode: 'array' });
  return Number((result.rows[0] as [string | null])[0] ?? 0);
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

export async function readRows(pool: pg.Pool, keys: readonly { kind: number; anchor: number }[]): Promise<Map<string, Buffer>> {
  const result = await pool.query({
    text: `SELECT p.kind, p.anchor, p.list FROM unnest($1::smallint[], $2::bigint[]) AS k(kind, anchor)
           JOIN recs_published_lists p ON p.kind = k.kind AND p.anchor = k.anchor`,
    values: [keys.map((k) => k.kind), keys.map((k) => k.anchor)],
    rowMode: 'array',
  });
  const found = new Map<string, Buffer>();
  for (const [kind, anchor, list] of result.rows as [number, string, Buffer][]) found.set(`${kind}:${anchor}`, list);
  return found;
}
