import { afterAll, describe, expect, it } from 'vitest';
import { openPool } from '../../../src/backends/embedded/keys/postgresStore.js';
import { LearnerLock } from '../../../src/backends/embedded/learnerLock.js';
import { encodeList, publishedHashes, publishRows } from '../../../src/backends/embedded/publishedLists.js';
import { preparePublished } from '../../../src/backends/embedded/roles.js';
import { ServeRecs } from '../../../src/backends/embedded/serveRecs.js';
import { toRecommendationFilter } from '../../../src/model/recommendationFilter.js';
import type { RecommendationKind } from '../../../src/ports/backend.js';
import { seededEvents, startLearner, until } from '../../helpers/roles.js';
import { DATABASE_URL, dropSchema, testSchema } from '../../helpers/stores.js';

/** The learner's publisher and a serve replica in one process over a real PostgreSQL: the replica answers
 * what the model answers, catches up without notices, and only the lock's holder publishes. */
const ITEMS = 400;
const KINDS: RecommendationKind[] = ['POST_BROWSE', 'NEXT_BEST_PRODUCT'];
const events = (n: number, seed: number, t0?: number): ReturnType<typeof seededEvents> => seededEvents(ITEMS, n, seed, t0);

describe('published lists on PostgreSQL', () => {
  const cleanups: (() => Promise<unknown>)[] = [];
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
  });

  it('a serve replica answers the model\'s lists, follows them without notices, and only the lock\'s holder publishes', async () => {
    const { store, recs, pool, names, publisher, lock } = await startLearner(ITEMS, events(6000, 1), cleanups);
    expect(await until(() => publisher.stats.sweeps >= 1)).toBe(true);

    // a channel nobody notifies: the replica follows by its poll of the version alone
    const serve = new ServeRecs(pool, { connectionString: DATABASE_URL, names: { ...names, channel: 'recs_published_nobody' }, entries: 5000 });
    cleanups.push(() => serve.close());
    await serve.start();
    for (let anchor = 1; anchor <= ITEMS; anchor += 2) {
      for (const kind of KINDS) expect((await serve.recommend(kind, anchor)).entries).toEqual(recs.recommendNow(kind, anchor).entries);
    }
    await expect(serve.recommend('POST_BROWSE', 10_000)).rejects.toMatchObject({ code: 'NOT_FOUND' });

    // filters pick from the published candidates: the same list where enough of them pass
    const filters = [{ categoryPath: 'Dept1' }, { categoryPath: 'Dept1/Cat5' }, { brandNames: ['Acme'] }, { inStockOnly: true }, { maxPrice: 40 }, { excludeItemIds: [2, 3, 4] }];
    for (const input of filters) {
      const filter = toRecommendationFilter(input);
      let same = 0;
      let asked = 0;
      for (let anchor = 1; anchor <= ITEMS; anchor += 4) {
        for (const kind of KINDS) {
          asked++;
          const served = await serve.recommend(kind, anchor, undefined, filter);
          const model = recs.recommendNow(kind, anchor, filter);
          for (const [i, item] of served.items!.entries()) expect(filter === null || item.itemId === served.entries[i]!.itemId).toBe(true);
          if (JSON.stringify(served.entries.map((e) => e.itemId)) === JSON.stringify(model.entries.map((e) => e.itemId))) same++;
        }
      }
      expect({ input, same: Math.round((100 * same) / asked) }).toEqual({ input, same: 100 });
    }

    // new events, no notice heard: the replica's answers follow within its poll
    await store.appendEvents(events(400, 2, Date.now() - 60_000));
    await recs.poll();
    const changed = await until(async () => {
      for (let anchor = 1; anchor <= ITEMS; anchor += 7) {
        if (JSON.stringify((await serve.recommend('POST_BROWSE', anchor)).entries) !== JSON.stringify(recs.recommendNow('POST_BROWSE', anchor).entries)) return false;
      }
      return true;
    });
    expect(changed).toBe(true);
    expect((await serve.trending(null, 5)).entries).toEqual(recs.trendingNow(null, 5).entries);

    // a second learner stands by; a pid that holds no lock publishes nothing
    let second = false;
    const other = new LearnerLock({ connectionString: DATABASE_URL, lockKey: names.lockKey, retryMs: 100 }, { acquired: () => (second = true), lost: () => undefined, say: () => undefined });
    cleanups.push(() => other.close());
    other.start();
    await new Promise((r) => setTimeout(r, 500));
    expect(second).toBe(false);
    expect(await publishRows(pool, names, 1, [{ kind: 0, anchor: 1, hash: 0, bytes: encodeList({ top: [], deep: [] }) }], 0)).toBeNull();
    await lock.close();
    expect(await until(() => second, 5_000)).toBe(true);
  }, 120_000);

  it('a table of published lists in an older format (text) is replaced at start, so a learner publishes every list again', async () => {
    const schema = testSchema();
    cleanups.push(() => dropSchema(schema));
    const pool = openPool({ connectionString: DATABASE_URL, schema, max: 1 });
    cleanups.push(() => pool.end());
    await pool.query(`CREATE SCHEMA ${schema}`);
    await pool.query(`CREATE TABLE recs_published_lists (kind smallint NOT NULL, anchor bigint NOT NULL, version bigint NOT NULL, hash integer NOT NULL,
      list text NOT NULL, PRIMARY KEY (kind, anchor))`);
    await pool.query(`INSERT INTO recs_published_lists VALUES (0, 1, 1, 5, '{"t":[],"d":[]}')`);
    const columnType = async (): Promise<unknown> => (await pool.query(
      `SELECT data_type FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'recs_published_lists' AND column_name = 'list'`, [schema])).rows;
    await preparePublished(pool);
    expect(await columnType()).toEqual([{ data_type: 'bytea' }]);
    expect((await publishedHashes(pool)).map((m) => m.size)).toEqual([0, 0, 0, 0, 0]);
    // a table of this format is kept as it is by the next start
    await pool.query(`INSERT INTO recs_published_lists VALUES (0, 1, 1, 5, $1)`, [encodeList({ top: [], deep: [] })]);
    await preparePublished(pool);
    expect((await publishedHashes(pool))[0]!.get(1)).toBe(5);
  }, 30_000);
});
