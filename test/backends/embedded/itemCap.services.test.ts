import Database from 'better-sqlite3';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { StoreFullError } from '../../../src/backends/embedded/dataFiles.js';
import { openRecsData } from '../../../src/backends/embedded/loadFromStore.js';
import type { EventRow, RecsDataStore, RecsSource } from '../../../src/backends/embedded/liveStore.js';
import { DB_FILE, type RecsStore } from '../../../src/backends/embedded/store.js';
import type { RecEvent } from '../../../src/recommender/index.js';
import { itemsFrom } from '../../helpers/liveEvents.js';
import { DATABASE_URL, recsStoreKinds } from '../../helpers/stores.js';

/**
 * The store's side of RECS_MAX_ITEMS (ItemCap): a write whose new item ids would take the items
 * the store holds past the cap is refused whole, inside its transaction, on both stores; writes
 * naming no new item always pass; imports count, deletions are counted out. Two processes on one
 * store are in maxItemsReplicas.processes.test.ts; here two store instances (two pools, two connections)
 * race on one store.
 */
const T = Date.UTC(2026, 0, 1);
const view = (itemId: number, session = 's', time = T, eventId: string | null = null): RecEvent => ({ kind: 'view', itemId, session, user: null, orderId: null, time, eventId });
const views = (ids: readonly number[], eventIds = false): RecEvent[] => ids.map((id) => view(id, `s-${id}`, T, eventIds ? `e-${id}` : null));
const itemsOf = (rows: readonly EventRow[]): number[] => rows.map((row) => row[2]);

/** The StoreFullError `write` fails with, or a failure of the test. */
async function refusal(write: Promise<unknown>): Promise<StoreFullError> {
  const error = await write.then(() => new Error('the write was kept'), (e: unknown) => e);
  expect(error).toBeInstanceOf(StoreFullError);
  return error as StoreFullError;
}

for (const kind of recsStoreKinds) {
  describe(`RECS_MAX_ITEMS in the ${kind.name} store`, () => {
    const disposals: (() => Promise<void>)[] = [];
    afterAll(async () => {
      for (const dispose of disposals.reverse()) await dispose();
    });
    const open = async (): Promise<{ source: RecsSource; store: RecsDataStore }> => {
      const fresh = kind.fresh('recs-itemcap');
      disposals.push(() => fresh.dispose());
      const store = (await openRecsData(fresh.source))!;
      // closed again where a test closed it first
      disposals.push(() => store.close().catch(() => undefined));
      return { source: fresh.source, store };
    };

    it('refuses a write whose new ids would pass the cap, whole; ids held pass whatever the cap', async () => {
      const { store } = await open();
      const cap = { maxItems: 5 };
      expect(itemsOf(await store.appendEvents(views([1, 2, 3, 3]), cap))).toEqual([1, 2, 3, 3]);
      await store.upsertItems(itemsFrom(3, 2), cap); // 3 held, 4 new: 4 items
      const before = await store.counts();
      expect(await refusal(store.appendEvents(views([5, 6, 1]), cap))).toMatchObject({ fresh: 2, held: 4, maxItems: 5 });
      expect(await refusal(store.upsertItems(itemsFrom(5, 2), cap))).toMatchObject({ fresh: 2, held: 4, maxItems: 5 });
      // with eventIds: none taken by the refused call, so the call sent again once there is room stores them
      expect(await refusal(store.appendEvents(views([7, 8], true), cap))).toMatchObject({ fresh: 2, held: 4 });
      expect(await store.counts()).toEqual(before);
      // below what it holds, a cap still lets items held take events and records
      expect(itemsOf(await store.appendEvents(views([1, 4]), { maxItems: 2 }))).toEqual([1, 4]);
      await store.upsertItems(itemsFrom(1, 1), { maxItems: 2 });
      // up to the cap exactly; without a cap (an import's way), past it
      expect(itemsOf(await store.appendEvents(views([5]), cap))).toEqual([5]);
      expect(itemsOf(await store.appendEvents(views([7, 8], true)))).toEqual([7, 8]);
      expect(await refusal(store.appendEvents(views([9]), { maxItems: 7 }))).toMatchObject({ fresh: 1, held: 7 });
      expect(itemsOf(await store.appendEvents(views([9]), { maxItems: 8 }))).toEqual([9]);
    });

    it('counts imported items, and counts out those a prune or a replacing import leaves no row of', async () => {
      const { store } = await open();
      const events = await store.beginImport('events', 'csv', 'old.csv', 'sha-old');
      await events.addEvents([view(10, 'a', T - 30 * 86_400_000), view(11, 'a', T - 30 * 86_400_000)]);
      await events.finish(2, 0);
      const catalog = await store.beginImport('catalog', 'jsonl', 'c.jsonl', 'sha-c');
      await catalog.addItems(itemsFrom(20, 2));
      await catalog.finish(2, 0);
      expect(await refusal(store.appendEvents([view(12, 'b', T)], { maxItems: 4 }))).toMatchObject({ held: 4 });
      await store.appendEvents([view(11, 'b', T)], { maxItems: 4 });
      // the old events go (all but the newest): item 10 is named by nothing now
      expect((await store.pruneEvents(86_400_000)).removed).toBe(2);
      expect(itemsOf(await store.appendEvents([view(12, 'b', T)], { maxItems: 4 }))).toEqual([12]);
      // a catalogue replaced: 20 and 21 go, 30 comes
      const replaced = await store.beginImport('catalog', 'jsonl', 'c2.jsonl', 'sha-c2');
      await replaced.addItems(itemsFrom(30, 1));
      await replaced.finish(1, 0, { replace: true });
      expect(await refusal(store.appendEvents([view(13, 'c', T), view(14, 'c', T)], { maxItems: 4 }))).toMatchObject({ fresh: 2, held: 3 });
    });

    it('a store of an earlier version, without the table, counts what it holds when opened', async () => {
      const { source, store } = await open();
      await store.appendEvents(views([1, 2]));
      await store.upsertItems(itemsFrom(2, 2));
      await store.close();
      if (source.kind === 'sqlite') {
        const db = new Database(join(source.dataDir, DB_FILE));
        db.exec("DROP TABLE item_ids; DELETE FROM meta WHERE key = 'itemIds'");
        db.close();
      } else {
        const client = new pg.Client({ connectionString: DATABASE_URL });
        await client.connect();
        await client.query(`DROP TABLE ${source.schema}.recs_item_ids; DELETE FROM ${source.schema}.recs_meta WHERE key = 'itemIds'`);
        await client.end();
      }
      const again = (await openRecsData(source))!;
      disposals.push(() => again.close());
      expect(await refusal(again.appendEvents(views([4]), { maxItems: 3 }))).toMatchObject({ fresh: 1, held: 3 });
    });

    it('writers racing on one store, each on a connection of its own, never pass it together', async () => {
      const { source } = await open();
      const writers = [(await openRecsData(source))!, (await openRecsData(source))!];
      for (const w of writers) disposals.push(() => w.close());
      const cap = { maxItems: 30 };
      // 2 writers x 20 calls of 3 new ids, 4 at a time each: room for 10 of the 40 calls
      const outcomes = await Promise.all(writers.map(async (writer, w) => {
        const results: ('kept' | 'refused')[] = [];
        for (let round = 0; round < 5; round++) {
          results.push(...await Promise.all(Array.from({ length: 4 }, async (_, k) => {
            const from = 1000 * (w + 1) + 10 * (4 * round + k);
            try {
              if (k % 2 === 0) await writer.appendEvents(views([from, from + 1, from + 2]), cap);
              else await writer.upsertItems(itemsFrom(from, 3), cap);
              return 'kept' as const;
            } catch (error) {
              if (error instanceof StoreFullError) return 'refused' as const;
              throw error;
            }
          })));
        }
        return results;
      }));
      expect(outcomes.flat().filter((o) => o === 'kept')).toHaveLength(10);
      const held = new Set<number>();
      await writers[0]!.snapshot({ record: (json) => held.add((JSON.parse(json) as { itemId: number }).itemId), event: (row) => held.add(row[2]) });
      expect(held.size).toBe(30);
    });

    it.skipIf(kind.name !== 'sqlite')('a group commit refuses the call past the cap alone, and keeps the others of its group', async () => {
      const { store } = await open();
      const sqlite = store as RecsStore;
      const commits = sqlite.groupCommits.commits;
      const cap = { maxItems: 3 };
      const answers = await Promise.allSettled([
        store.appendEvents(views([1]), cap), store.appendEvents(views([2, 3, 4]), cap), store.appendEvents(views([1, 2]), cap),
      ]);
      expect(answers.map((a) => a.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
      expect((answers[1] as PromiseRejectedResult).reason).toMatchObject({ fresh: 3, held: 1, maxItems: 3 });
      expect(sqlite.groupCommits.commits).toBe(commits + 1);
      expect(itemsOf(await store.eventsAfter(0, 10))).toEqual([1, 1, 2]);
    });
  });
}
