import { afterAll, describe, expect, it } from 'vitest';
import { ServeRecs } from '../../../src/backends/embedded/serveRecs.js';
import { parseItemRecord } from '../../../src/model/itemRecord.js';
import { toRecommendationFilter } from '../../../src/model/recommendationFilter.js';
import type { ForYouListModel, RecommendationFilterModel, ShopperModel } from '../../../src/ports/backend.js';
import type { RecEvent } from '../../../src/recommender/index.js';
import { seededEvents, startLearner, until } from '../../helpers/roles.js';
import { DATABASE_URL } from '../../helpers/stores.js';

/** recommendedForYou on a serve replica (no model) against the learner's own answer, over a real PostgreSQL: the
 * shopper's events from the store, the lists as published, the same function; cold shoppers, filters, freshness. */
const ITEMS = 300;

let t = Date.now() - 600_000;
const view = (session: string | null, itemId: number, user: string | null = null): RecEvent => ({ kind: 'view', itemId, session, user, orderId: null, time: (t += 1000) });
const buy = (session: string | null, itemId: number, user: string | null = null): RecEvent => ({ kind: 'purchase', itemId, session, user, orderId: `o${t}`, time: (t += 1000) });

const brief = (list: ForYouListModel): string => JSON.stringify(list.entries.map((e) => [e.itemId, e.source, e.because, e.score]));

describe('recommendedForYou on a serve replica', () => {
  const cleanups: (() => Promise<unknown>)[] = [];
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
  });

  it('gives the learner\'s list for the same events: sessions, users, cold shoppers, filters, and within seconds of an event', async () => {
    // hand-made shoppers: a session, a session with its user, a user alone (bought), and one of many items
    const { store, recs, pool, names, publisher } = await startLearner(ITEMS, [...seededEvents(ITEMS, 5000, 1), ...[
      view('h1', 5), view('h1', 9), view('h1', 13),
      view('h2', 7, 'uh2'), buy('h2', 7, 'uh2'), view('h2', 20, 'uh2'), view('h2b', 33, 'uh2'),
      buy(null, 40, 'uh3'), buy(null, 41, 'uh3'),
      ...Array.from({ length: 40 }, (_, i) => view('h4', 1 + ((i * 37) % ITEMS))),
      // past the window (RECS_EVENTS_MAX_AGE_DAYS' 90): 50 is no anchor and may be listed
      { ...view('old', 50), time: Date.now() - 100 * 86_400_000 }, view('old', 13),
    ]], cleanups, 90);
    // variants: a seen item's family is left out
    await store.upsertItems([34, 35, 36].map((id) => parseItemRecord({ itemId: id, parentItemId: 33, name: `variant ${id}`, categoryPath: 'Dept1/Cat13', salePrice: 5, stock: 'Available' })));
    await recs.poll();
    expect(await until(() => publisher.stats.sweeps >= 1)).toBe(true);
    const serve = new ServeRecs(pool, { connectionString: DATABASE_URL, names, entries: 5000, maxAgeMs: 90 * 86_400_000 });
    cleanups.push(() => serve.close());
    await serve.start();

    const shoppers: ShopperModel[] = [
      { sessionId: 'h1', userId: null }, { sessionId: 'h2', userId: null }, { sessionId: null, userId: 'uh2' }, { sessionId: 'h2', userId: 'uh2' },
      { sessionId: null, userId: 'uh3' }, { sessionId: 'h4', userId: null }, { sessionId: 'old', userId: null }, { sessionId: 's1-10', userId: null }, { sessionId: 's1-4000', userId: 'u3' },
    ];
    const filters: (RecommendationFilterModel | null)[] = [null, ...[
      { inStockOnly: true }, { categoryPath: 'Dept1' }, { categoryPath: 'Dept2/Cat6' }, { brandNames: ['Acme'] }, { maxPrice: 40 }, { excludeItemIds: [2, 3, 4, 10, 11] },
    ].map((input) => toRecommendationFilter(input))];
    // settled: the learner has published what its model holds (a sweep after the last change)
    const same = async (shopper: ShopperModel, first: number, filter: RecommendationFilterModel | null): Promise<boolean> =>
      brief(await serve.forYou(shopper, first, undefined, filter)) === brief(await recs.forYou(shopper, first, undefined, filter));
    expect(await until(async () => {
      for (const shopper of shoppers) if (!(await same(shopper, 10, null))) return false;
      return true;
    }, 20_000)).toBe(true);
    for (const shopper of shoppers) {
      for (const filter of filters) {
        for (const first of [3, 10, 40]) {
          const served = await serve.forYou(shopper, first, undefined, filter);
          expect({ shopper, filter: filter?.key, first, list: brief(served) }).toEqual({ shopper, filter: filter?.key, first, list: brief(await recs.forYou(shopper, first, undefined, filter)) });
          expect(served.items!.map((item) => item.itemId)).toEqual(served.entries.map((e) => e.itemId));
        }
      }
    }
    // the hand-made ones are not all popular fill: the published lists were summed
    const h2 = await serve.forYou({ sessionId: 'h2', userId: 'uh2' }, 10);
    expect(h2.entries.filter((e) => e.source === 'CO_VIEW' && [20, 33].includes(e.because!)).length).toBeGreaterThan(2);
    expect(h2.entries.map((e) => e.itemId).filter((id) => [33, 34, 35, 36].includes(id))).toEqual([]);
    expect(h2.entries.map((e) => e.itemId)).not.toContain(20);

    expect((await serve.forYou({ sessionId: 'old', userId: null }, 40)).entries.filter((e) => e.because === 50)).toEqual([]);
    expect((await serve.forYou({ sessionId: 'old', userId: null }, 40)).entries.filter((e) => e.because === 13).length).toBeGreaterThan(0);

    // a shopper with no events, or a name never seen: the popular items, as the learner gives them
    for (const shopper of [{ sessionId: 'nobody', userId: null }, { sessionId: 'nobody', userId: 'nobody' }]) {
      const cold = await serve.forYou(shopper, 10);
      expect(cold.entries).toHaveLength(10);
      expect(cold.entries.every((e) => e.source === 'POPULAR' && e.because === null)).toBe(true);
      expect(brief(cold)).toBe(brief(await recs.forYou(shopper, 10)));
    }
    await expect(serve.forYou({ sessionId: 'h1', userId: null }, 0)).rejects.toMatchObject({ code: 'BAD_USER_INPUT' });

    // an event stored elsewhere (another replica): the item is left out at once, its list summed once published
    const before = await serve.forYou({ sessionId: 'h1', userId: null }, 10);
    const next = before.entries.find((e) => e.source !== 'POPULAR')!.itemId;
    await store.appendEvents([view('h1', next)]);
    expect((await serve.forYou({ sessionId: 'h1', userId: null }, 10)).entries.map((e) => e.itemId)).not.toContain(next);
    const started = Date.now();
    expect(await until(async () => (await recs.forYou({ sessionId: 'h1', userId: null }, 10)).entries.every((e) => e.itemId !== next) && await same({ sessionId: 'h1', userId: null }, 10, null), 5_000)).toBe(true);
    expect(Date.now() - started).toBeLessThan(5_000);
  }, 120_000);
});
