import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPool } from '../../../src/backends/embedded/keys/postgresStore.js';
import type { RecsDataStore } from '../../../src/backends/embedded/liveStore.js';
import { openRecsData } from '../../../src/backends/embedded/loadFromStore.js';
import { encodeList, listHash, publishRows, type PublishedList } from '../../../src/backends/embedded/publishedLists.js';
import { preparePublished } from '../../../src/backends/embedded/roles.js';
import { ServeRecs } from '../../../src/backends/embedded/serveRecs.js';
import { parseItemRecord } from '../../../src/model/itemRecord.js';
import { DATABASE_URL, dropSchema, testSchema } from '../../helpers/stores.js';

/** A serve replica's cache as a sync changes it, over a real PostgreSQL: held lists and records take their new
 * value in one query a sync, so a request after a publish costs no round trip; a read under way across a sync
 * keeps nothing the sync changed. Lists are published by hand, under the learner lock held by a session here. */
const ITEMS = 40;
const record = (id: number, name = `item ${id}`): ReturnType<typeof parseItemRecord> => parseItemRecord({ itemId: id, name, salePrice: id, stock: 'Available' });
/** A list of five neighbours of `anchor`, turned by `shift`: the same items in another order. */
const listOf = (anchor: number, shift: number): PublishedList => {
  const ids = [1, 2, 3, 4, 5].map((k) => 1 + ((anchor + ((k + shift) % 5)) % ITEMS));
  const entries = ids.map((itemId, i) => ({ rank: i + 1, itemId, score: 10 - i, evidence: 3, source: 'CO_VIEW' as const }));
  return { top: entries, deep: entries };
};

/** Calls `seen` with the text of each query on `pool` once its result is in, before its caller has it; the function returned ends it. */
function watch(pool: pg.Pool, seen: (text: string) => Promise<void> | void): () => void {
  const original = Object.getOwnPropertyDescriptor(pool, 'query');
  const call = pg.Pool.prototype.query.bind(pool) as (config: string | pg.QueryConfig, values?: unknown[]) => Promise<unknown>;
  pool.query = (async (config: string | pg.QueryConfig, values?: unknown[]) => {
    const result = await call(config, values);
    await seen(typeof config === 'string' ? config : config.text);
    return result;
  }) as unknown as typeof pool.query;
  return () => {
    if (original === undefined) delete (pool as { query?: unknown }).query;
    else Object.defineProperty(pool, 'query', original);
  };
}

describe('a serve replica follows the published lists in place', () => {
  const schema = testSchema();
  let store: RecsDataStore;
  let pool: pg.Pool;
  let locker: pg.Client;
  let names: { lockKey: string; channel: string };
  let pid: number;
  const cleanups: (() => Promise<unknown>)[] = [];
  let stop = (): void => undefined;

  const publish = async (anchors: readonly number[], shift: number): Promise<void> => {
    const rows = anchors.map((anchor) => ({ kind: 0, anchor, hash: listHash(listOf(anchor, shift)), bytes: encodeList(listOf(anchor, shift)) }));
    expect(await publishRows(pool, names, pid, rows, 0)).toBeGreaterThan(0);
  };
  /** Calls of `pool.query` that read list rows or records, counted until `stop`. */
  const countReads = (): { lists: number; records: number } => {
    const counted = { lists: 0, records: 0 };
    stop = watch(pool, (text) => {
      if (text.includes('JOIN recs_published_lists')) counted.lists++;
      if (text.startsWith('SELECT item_id, record FROM recs_items WHERE item_id')) counted.records++;
    });
    return counted;
  };
  const newReplica = async (): Promise<ServeRecs> => {
    // a channel nobody notifies: the test syncs by hand
    const serve = new ServeRecs(pool, { connectionString: DATABASE_URL, names: { ...names, channel: 'recs_published_nobody' } });
    cleanups.push(() => serve.close());
    await serve.start();
    return serve;
  };

  beforeAll(async () => {
    store = (await openRecsData({ kind: 'postgres', connectionString: DATABASE_URL, schema }))!;
    await store.upsertItems(Array.from({ length: ITEMS }, (_, i) => record(i + 1)));
    pool = openPool({ connectionString: DATABASE_URL, schema, max: 4 });
    names = await preparePublished(pool);
    locker = new pg.Client({ connectionString: DATABASE_URL });
    await locker.connect();
    const { rows } = await locker.query<{ pid: number }>('SELECT pg_advisory_lock($1::bigint), pg_backend_pid() AS pid', [names.lockKey]);
    pid = rows[0]!.pid;
    await publish(Array.from({ length: ITEMS }, (_, i) => i + 1), 0);
  });
  afterAll(async () => {
    stop();
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
    await locker?.end().catch(() => undefined);
    await pool?.end().catch(() => undefined);
    await store?.close().catch(() => undefined);
    await dropSchema(schema);
  });

  it('reads the lists it holds that a publish changed in one query at the sync; a request after it reads nothing', async () => {
    const serve = await newReplica();
    const held = Array.from({ length: 20 }, (_, i) => i + 1);
    for (const anchor of held) expect((await serve.recommend('POST_BROWSE', anchor)).entries.map((e) => e.itemId)).toEqual(listOf(anchor, 0).top.map((e) => e.itemId));

    await publish(held, 2);
    const reads = countReads();
    await serve.sync();
    expect(reads).toEqual({ lists: 1, records: 0 });
    for (const anchor of held) expect((await serve.recommend('POST_BROWSE', anchor)).entries.map((e) => e.itemId)).toEqual(listOf(anchor, 2).top.map((e) => e.itemId));
    expect(reads).toEqual({ lists: 1, records: 0 });
    // the response cache's recheck sees the new lists without a round trip too
    expect(serve.now.recommend('POST_BROWSE', 7).entries.map((e) => e.itemId)).toEqual(listOf(7, 2).top.map((e) => e.itemId));
    stop();

    // a record changed by another replica: the held one takes its new value at the sync
    await store.upsertItems([record(3, 'renamed three')]);
    const again = countReads();
    await serve.sync();
    expect(again.records).toBe(1);
    expect((await serve.getItems([3]))[0]!.name).toBe('renamed three');
    expect(again.records).toBe(1);
    stop();

    // events' items without a record, as a batch's answer counts them: from the records held, a new one seen at the sync
    expect(await serve.countWithoutRecord([1, 2, 500, 501])).toBe(2);
    await store.upsertItems([record(500)]);
    await serve.sync();
    expect(await serve.countWithoutRecord([1, 2, 500, 501])).toBe(1);
  }, 30_000);

  it('a read under way across a sync keeps nothing the sync changed, and the misses of one turn share a query', async () => {
    const serve = await newReplica();
    // the row read for anchor 30 arrives only once the publish and the sync are done: it is the older list
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let listReads = 0;
    stop = watch(pool, async (text) => {
      if (text.includes('JOIN recs_published_lists') && listReads++ === 0) await gate;
    });
    const slow = serve.list('POST_BROWSE', 30);
    await new Promise((r) => setTimeout(r, 50));
    await publish([30], 4);
    await serve.sync();
    release();
    expect((await slow).top.map((e) => e.itemId)).toEqual(listOf(30, 0).top.map((e) => e.itemId));
    // the older list was not kept: the next ask reads the new one
    expect((await serve.list('POST_BROWSE', 30)).top.map((e) => e.itemId)).toEqual(listOf(30, 4).top.map((e) => e.itemId));
    stop();

    const reads = countReads();
    const anchors = [31, 32, 33, 34, 35, 36];
    const lists = await Promise.all(anchors.map((anchor) => serve.recommend('POST_BROWSE', anchor)));
    expect(lists.map((l) => l.entries.length)).toEqual(anchors.map(() => 5));
    expect(reads.lists).toBe(1);
    stop();
  }, 30_000);
});
