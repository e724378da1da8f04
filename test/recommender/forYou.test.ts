import { describe, expect, it } from 'vitest';
import { EmbeddedRecs } from '../../src/backends/embedded/recs.js';
import { toRecommendationFilter } from '../../src/model/recommendationFilter.js';
import { toShopper } from '../../src/model/shopper.js';
import type { ForYouListModel, ShopperModel } from '../../src/ports/backend.js';
import { Catalog, EventLog, KIND_PURCHASE, KIND_VIEW, ShopperHistories } from '../../src/recommender/index.js';
import type { RecEvent } from '../../src/recommender/index.js';
import { repeat } from './helpers.js';

// recommendedForYou's function on hand-made sessions. Post-browse's default has d = 0, so a neighbour's score is its
// co-views over the anchor's views: scaled to the anchor's best, 1 -> 2 (3 sessions) is 1 and 1 -> 5 (1 session) 1/3.

const T0 = 1_700_000_000_000;
let t = T0;
const view = (session: string | null, itemId: number, user: string | null = null): RecEvent => ({ kind: 'view', session, user, itemId, time: (t += 1000), orderId: null });

/** Items 1..20 in Home (2..20 priced 2*id; 6 a variant of 2), 21..24 in Garden; 12 out of stock. */
function catalogue(): Catalog {
  const catalog = new Catalog();
  catalog.addRecords([
    ...repeat(20, (i) => i + 1).map((id) => ({
      itemId: id, parentItemId: id === 6 ? 2 : id, name: `item ${id}`, categoryPath: 'Home/Lamps', salePrice: 2 * id, stock: id === 12 ? 'Not available' : 'Available',
    })),
    ...[21, 22, 23, 24].map((id) => ({ itemId: id, name: `item ${id}`, categoryPath: 'Garden/Tools', salePrice: 5, stock: 'Available' })),
  ]);
  return catalog;
}

/** Three sessions co-view 1 then 2, three 3 then 4, one 1 then 5; 10 viewed in many, then 11, 13, 14 ... less. */
function shop(): EmbeddedRecs {
  const log = new EventLog();
  t = T0;
  let s = 0;
  for (const pair of [[1, 2], [1, 2], [1, 2], [3, 4], [3, 4], [3, 4], [1, 5]]) for (const item of pair) log.add(view(`past${s++ >> 1}`, item));
  for (const [item, n] of [[10, 9], [21, 8], [11, 7], [13, 6], [14, 5], [15, 4], [22, 3], [16, 2]] as const) for (let i = 0; i < n; i++) log.add(view(`pop${item}-${i}`, item));
  return new EmbeddedRecs(catalogue(), log);
}

const ids = (list: ForYouListModel): number[] => list.entries.map((e) => e.itemId);
const shopper = (sessionId: string | null, userId: string | null = null): ShopperModel => ({ sessionId, userId });

describe('recommendedForYou on hand-made sessions', () => {
  it('sums the latest items\' lists, the newest weighing more, saying which item brought each', () => {
    const recs = shop();
    recs.applyEvents([view('me', 3), view('me', 1)]);
    const list = recs.forYouNow(shopper('me'), 10);
    // 2: 1 (from 1, newest); 4: 1/2 (from 3); 5: 1/3 (from 1); then the most viewed, none of 1 and 3
    expect(ids(list).slice(0, 3)).toEqual([2, 4, 5]);
    expect(list.entries.slice(0, 3).map((e) => [e.because, e.source])).toEqual([[1, 'CO_VIEW'], [3, 'CO_VIEW'], [1, 'CO_VIEW']]);
    expect(list.entries[0]!.score).toBeCloseTo(1, 6);
    expect(list.entries[1]!.score).toBeCloseTo(0.5, 6);
    expect(list.entries[2]!.score).toBeCloseTo(1 / 3, 6);
    expect(list.entries.slice(3).every((e) => e.source === 'POPULAR' && e.because === null && e.score === null)).toBe(true);
    expect(ids(list).slice(3, 6)).toEqual([10, 21, 11]);
    expect(list.entries.map((e) => e.rank)).toEqual(repeat(10, (i) => i + 1));

    // the other way round: 3 is the newest, so 4 leads and 5 (1/2 * 1/3) falls behind 2 (1/2)
    recs.applyEvents([view('you', 1), view('you', 3)]);
    expect(ids(recs.forYouNow(shopper('you'), 3))).toEqual([4, 2, 5]);
  });

  it('leaves out what the shopper viewed or bought, and its family', () => {
    const recs = shop();
    recs.applyEvents([view('me', 1), { kind: 'purchase', session: 'me', user: null, itemId: 10, time: (t += 1000), orderId: 'o1' }, view('me', 5)]);
    const list = ids(recs.forYouNow(shopper('me'), 10));
    // 2 is not seen, but 6 is its variant: one of the family at most; 1, 5 and 10 never
    expect(list[0]).toBe(2);
    for (const seen of [1, 5, 10, 6]) expect(list).not.toContain(seen);
    expect(list).toHaveLength(10);
  });

  it('a shopper without events gets the popular items, filtered', () => {
    const recs = shop();
    expect(ids(recs.forYouNow(shopper('nobody'), 3))).toEqual([10, 21, 11]);
    const garden = ids(recs.forYouNow(shopper(null, 'stranger'), 10, toRecommendationFilter({ categoryPath: 'Garden' })));
    expect(garden.slice(0, 2)).toEqual([21, 22]);
    expect(garden.every((id) => id >= 21)).toBe(true);
  });

  it('a filter: the list keeps first while enough pass, fewer when fewer do, none is an empty list', () => {
    const recs = shop();
    recs.applyEvents([view('me', 3), view('me', 1)]);
    // priced at most 20: Home's 2..10 but 6 (the family of 2), and Garden's; then popular fills, 12 never (out of stock)
    const cheap = recs.forYouNow(shopper('me'), 10, toRecommendationFilter({ maxPrice: 20, inStockOnly: true }));
    expect(ids(cheap)).toEqual([2, 4, 5, 10, 21, 22, 7, 8, 9, 23]);
    const few = recs.forYouNow(shopper('me'), 10, toRecommendationFilter({ excludeItemIds: [2], categoryPath: 'Home', minPrice: 8, maxPrice: 10 }));
    expect(ids(few)).toEqual([4, 5]);
    expect(few.entries.map((e) => e.rank)).toEqual([1, 2]);
    expect(ids(recs.forYouNow(shopper('me'), 10, toRecommendationFilter({ categoryPath: 'Kitchen' })))).toEqual([]);
    // 24 items but the two seen and 6, of 2's family
    expect(ids(recs.forYouNow(shopper('me'), 25))).toHaveLength(21);
  });

  it('follows new events at once, and merges a session with its user', () => {
    const recs = shop();
    expect(ids(recs.forYouNow(shopper('late'), 2))).toEqual([10, 21]);
    recs.applyEvents([view('late', 3, 'ann')]);
    expect(ids(recs.forYouNow(shopper('late'), 1))).toEqual([4]);
    recs.applyEvents([view('other', 1, 'ann')]);
    // the user's events are both sessions': 1 is the newest
    expect(ids(recs.forYouNow(shopper(null, 'ann'), 2))).toEqual([2, 4]);
    expect(ids(recs.forYouNow(shopper('late', 'ann'), 2))).toEqual([2, 4]);
  });

  it('refuses a shopper it cannot name, without echoing the id', () => {
    const bad = (run: () => unknown): { code: unknown; message: string } => {
      try {
        run();
      } catch (error) {
        return { code: (error as { extensions?: { code?: unknown } }).extensions?.code, message: (error as Error).message };
      }
      throw new Error('not refused');
    };
    expect(bad(() => toShopper(null, undefined)).code).toBe('BAD_USER_INPUT');
    const huge = 'x'.repeat(201);
    const refused = bad(() => toShopper(huge, huge));
    expect(refused.code).toBe('BAD_USER_INPUT');
    expect(refused.message).not.toContain('xxxx');
    expect(bad(() => toShopper('', null)).code).toBe('BAD_USER_INPUT');
    expect(bad(() => shop().forYouNow(shopper('me'), 51)).code).toBe('BAD_USER_INPUT');
    expect(bad(() => shop().forYouNow(shopper('me'), 0)).code).toBe('BAD_USER_INPUT');
  });
});

describe('ShopperHistories', () => {
  it('keeps the latest events of the latest shoppers, bounded both ways, as a walk of the log gives them', () => {
    const events: RecEvent[] = [];
    t = T0;
    for (let s = 0; s < 5; s++) for (let i = 0; i < 6; i++) events.push(view(`s${s}`, 100 * s + i, s % 2 === 0 ? `u${s}` : null));
    const live = new ShopperHistories(4, 3);
    live.add(events);
    const log = new EventLog();
    for (const e of events) log.add(e);
    const walked = ShopperHistories.fromLog(log, -Infinity, 4, 3);
    for (const histories of [live, walked]) {
      expect(histories.size).toBe(4);
      // live: s4 and u4, s3, u2 are the latest four; s2 went with s0, s1 and u0
      expect(histories.history('s4', null, -Infinity).map((e) => e.itemId)).toEqual([403, 404, 405]);
      // the walk stops where the fourth was found (s2, at its latest event); the live index dropped s2 for u2
      expect(histories.history('s2', 'u2', -Infinity).map((e) => e.itemId)).toEqual(histories === live ? [203, 204, 205] : [205]);
      expect(histories.history('s1', null, -Infinity)).toEqual([]);
      expect(histories.history('s3', null, events[events.length - 8]!.time).map((e) => e.kind)).toEqual([KIND_VIEW, KIND_VIEW]);
    }
    live.add([{ kind: 'purchase', session: 's1', user: null, itemId: 7, time: t + 1, orderId: null }]);
    expect(live.history('s1', null, -Infinity)).toEqual([{ itemId: 7, kind: KIND_PURCHASE, time: t + 1 }]);
    expect(live.size).toBe(4);
  });

  it('keeps events of one time in store order, walked or added (a probe saw a restart reorder them)', () => {
    const same: RecEvent[] = [7, 8, 9, 10, 11, 12].map((itemId) => ({ kind: 'purchase', session: null, user: 'xsame', itemId, time: T0, orderId: `o${itemId}` }));
    const live = new ShopperHistories();
    live.add(same);
    const log = new EventLog();
    for (const e of same) log.add(e);
    const walked = ShopperHistories.fromLog(log, -Infinity);
    expect(walked.history(null, 'xsame', -Infinity)).toEqual(live.history(null, 'xsame', -Infinity));
    expect(walked.history(null, 'xsame', -Infinity).map((e) => e.itemId)).toEqual([7, 8, 9, 10, 11, 12]);
  });
});
