import { afterAll, describe, expect, it } from 'vitest';
import { EmbeddedRecs } from '../../src/backends/embedded/recs.js';
import { parse } from 'graphql';
import { measureOperations } from '../../src/graphql/pipeline/limits.js';
import { parseCategoryPath, underCategory } from '../../src/model/itemLists.js';
import { DAY_MS, EventLog, trendingOf, TrendingScores } from '../../src/recommender/index.js';
import type { RecEvent } from '../../src/recommender/index.js';
import { catalogOf } from './helpers.js';

const NOW = Date.UTC(2026, 10, 20, 12);
const HOUR = 3_600_000;
const view = (itemId: number, time: number): RecEvent => ({ kind: 'view', session: `s${itemId}-${time}`, user: null, itemId, time, orderId: null });
const buy = (itemId: number, time: number): RecEvent => ({ kind: 'purchase', session: null, user: null, itemId, time, orderId: `o${itemId}-${time}` });
/** `n` views of an item, one an hour back from `from`. */
const views = (itemId: number, n: number, from: number): RecEvent[] => Array.from({ length: n }, (_, i) => view(itemId, from - i * HOUR));
const logOf = (events: RecEvent[]): EventLog => {
  const log = new EventLog();
  for (const e of events) log.add(e);
  return log;
};

const catalog = catalogOf([
  { id: 1 }, { id: 2 }, { id: 3, path: 'Home/Lamps' }, { id: 4 }, { id: 5, path: 'Home/Lampshades/Silk' }, { id: 7 }, { id: 8, path: 'Home/Lamps/Desk' },
]);

// Computed by hand with the rule: score = events in (now - 24 h, now] / (1 + events in (now - 28 d, now - 24 h] / 27).
const handMade = (): RecEvent[] => [
  view(9, NOW), // the newest event: "now", of an item without a record (left out however many)
  ...views(9, 9, NOW - HOUR),
  ...views(1, 6, NOW - HOUR), ...Array.from({ length: 54 }, (_, i) => view(1, NOW - 2 * DAY_MS - i * 11 * HOUR)), // 6 / (1 + 54/27) = 2
  ...views(2, 3, NOW - 2 * HOUR), // 3 / (1 + 0) = 3
  ...views(3, 8, NOW - HOUR), buy(3, NOW - 3 * HOUR), buy(3, NOW - 4 * HOUR), // purchases count alike: 10 recent
  ...Array.from({ length: 27 }, (_, i) => view(3, NOW - (i + 1.5) * DAY_MS)), // 10 / (1 + 27/27) = 5
  ...views(4, 2, NOW - HOUR), // fewer than 3 in the last day: left out
  ...views(5, 4, NOW - 5 * HOUR), ...views(5, 100, NOW - 30 * DAY_MS), // older than the window: 4 / 1 = 4
  ...views(7, 3, NOW - 21 * HOUR), view(7, NOW - DAY_MS), // exactly 24 h back is "before": 3 / (1 + 1/27)
  ...views(8, 3, NOW - DAY_MS - HOUR), // none in the last day
];

describe('trending', () => {
  it('ranks a hand-made log as the rule computed by hand says, "now" being its newest event', () => {
    const got = trendingOf(logOf(handMade()), catalog);
    expect(got.map((e) => e.itemId)).toEqual([3, 5, 2, 7, 1]);
    expect(got.map((e) => e.score)).toEqual([5, 4, 3, 3 / (1 + 1 / 27), 2]);
    expect(got.map((e) => e.recent)).toEqual([10, 4, 3, 3, 6]);
  });

  it('the same events in another order give the same list; ties go to more recent events, then the lower id', () => {
    const events = handMade().reverse();
    expect(trendingOf(logOf(events), catalog).map((e) => e.itemId)).toEqual([3, 5, 2, 7, 1]);
    const tied = trendingOf(logOf([...views(7, 3, NOW), ...views(2, 3, NOW), ...views(1, 4, NOW), ...views(1, 4, NOW - 3 * DAY_MS)]), catalog);
    // 1: 4 / (1 + 4/27) = 3.48..., above both 3s; 2 before 7 by id
    expect(tied.map((e) => e.itemId)).toEqual([1, 2, 7]);
  });

  it('a model window shorter than 28 days shortens the days before', () => {
    // window 7 days: 1 has 54 events spread over 27 days, of which those within (now - 7 d, now - 1 d] count, over 6 days
    const got = trendingOf(logOf(handMade()), catalog, 7 * DAY_MS);
    const before1 = handMade().filter((e) => e.itemId === 1 && e.time > NOW - 7 * DAY_MS && e.time <= NOW - DAY_MS).length;
    expect(got.find((e) => e.itemId === 1)!.score).toBe(6 / (1 + before1 / 6));
  });

  it('an empty log: an empty list', () => {
    expect(trendingOf(new EventLog(), catalog)).toEqual([]);
  });
});

describe('trending scores kept per model', () => {
  it('a short pass is done again at every change; a long one at most once every ten times it took', () => {
    const log = logOf(views(2, 3, NOW));
    let t = 0;
    const ticks: number[] = [];
    const scores = new TrendingScores(() => ticks.shift() ?? t);
    const ids = (model: object): number[] => scores.of(model, log, catalog, 0).map((e) => e.itemId);
    const [a, b, c, d] = [{}, {}, {}, {}];
    ticks.push(0, 0.5); // a pass of 0.5 ms
    expect(ids(a)).toEqual([2]);
    log.add(view(3, NOW));
    log.add(view(3, NOW));
    log.add(view(3, NOW));
    ticks.push(0.6, 5.6); // a change: done again at once, and this pass takes 5 ms
    expect(ids(b)).toEqual([2, 3]);
    for (let i = 0; i < 4; i++) log.add(view(4, NOW));
    t = 50; // 44.4 ms after it: under ten times 5 ms, the scores of b still
    expect(ids(c)).toEqual([2, 3]);
    t = 56;
    expect(ids(c)).toEqual([4, 2, 3]);
    // the same model: kept, however long ago
    t = 1e6;
    expect(ids(c)).toEqual([4, 2, 3]);
    // a new log (a reload) is passed over at once
    expect(scores.of(d, logOf(views(7, 3, NOW)), catalog, 0).map((e) => e.itemId)).toEqual([7]);
  });
});

describe('trending and popular through the embedded backend', () => {
  const recs = new EmbeddedRecs(catalog, logOf(handMade()));
  afterAll(() => recs.close());

  it('trending: by category (whole segments), cut to first, following new events', async () => {
    expect((await recs.trending(null, 2)).entries.map((e) => e.itemId)).toEqual([3, 5]);
    expect((await recs.trending('Home', 10)).entries.map((e) => e.itemId)).toEqual([3, 5]);
    expect((await recs.trending('Home/Lamps', 10)).entries.map((e) => e.itemId)).toEqual([3]);
    expect((await recs.trending('Home/Lamp', 10)).entries).toEqual([]);
    const list = await recs.trending(null, 10);
    expect(list.items!.map((i) => i.itemId)).toEqual(list.entries.map((e) => e.itemId));
    // 8 gets 12 views now: 12 / (1 + 3/27) = 10.8, first; "now" moves an hour on, which leaves the rest as they were
    recs.applyEvents(views(8, 12, NOW + HOUR));
    expect((await recs.trending(null, 3)).entries.map((e) => e.itemId)).toEqual([8, 3, 5]);
    expect((await recs.trending('Home/Lamps', 10)).entries.map((e) => e.itemId)).toEqual([8, 3]);
  });

  it('popular: most bought, or most viewed for POST_BROWSE, by category; only items with such events', async () => {
    const shop = new EmbeddedRecs(catalog, logOf([
      ...views(1, 5, NOW), buy(1, NOW), ...views(2, 2, NOW), buy(2, NOW), buy(2, NOW - 1), buy(5, NOW), buy(5, NOW - 1), ...views(8, 9, NOW), buy(9, NOW),
    ]));
    try {
      // bought: 2 and 5 twice (2 has more views), 1 once; 9 has no record
      expect((await shop.popular('NEXT_BEST_PRODUCT', null, 10)).entries).toEqual([{ itemId: 2, score: 2 }, { itemId: 5, score: 2 }, { itemId: 1, score: 1 }]);
      expect((await shop.popular('POST_BROWSE', null, 10)).entries).toEqual([{ itemId: 8, score: 9 }, { itemId: 1, score: 5 }, { itemId: 2, score: 2 }]);
      expect((await shop.popular('POST_BROWSE', 'Home', 10)).entries.map((e) => e.itemId)).toEqual([8]);
      expect((await shop.popular('NEXT_BEST_PRODUCT', 'Home', 1)).entries.map((e) => e.itemId)).toEqual([5]);
      expect((await shop.popular('NEXT_BEST_PRODUCT', 'Nowhere', 10)).entries).toEqual([]);
      shop.applyEvents([buy(8, NOW + 1), buy(8, NOW + 2), buy(8, NOW + 3)]);
      expect((await shop.popular('NEXT_BEST_PRODUCT', 'Home', 10)).entries.map((e) => e.itemId)).toEqual([8, 5]);
    } finally {
      await shop.close();
    }
  });

  it('first out of 1..50 is BAD_USER_INPUT; an empty shop answers empty lists', async () => {
    for (const first of [0, 51, 1000, -1, 1.5, Number.NaN]) {
      await expect(recs.trending(null, first)).rejects.toMatchObject({ extensions: { code: 'BAD_USER_INPUT' } });
      await expect(recs.popular('POST_BROWSE', null, first)).rejects.toMatchObject({ extensions: { code: 'BAD_USER_INPUT' } });
    }
    const empty = new EmbeddedRecs(catalog, new EventLog());
    try {
      expect(await empty.trending(null, 10)).toEqual({ entries: [], items: [] });
      expect(await empty.popular('NEXT_BEST_PRODUCT', null, 10)).toEqual({ entries: [], items: [] });
    } finally {
      await empty.close();
    }
  });
});

describe('categoryPath as asked for', () => {
  it('whole leading segments only', () => {
    expect(underCategory('Electronics/TV/4K', 'Electronics/TV')).toBe(true);
    expect(underCategory('Electronics/TV', 'Electronics/TV')).toBe(true);
    expect(underCategory('Electronics/TVs', 'Electronics/TV')).toBe(false);
    expect(underCategory(null, 'Electronics')).toBe(false);
  });

  it('outer slashes and spaces dropped; empty, too long or with control characters refused', () => {
    expect(parseCategoryPath(' /Home/Lamps/ ')).toBe('Home/Lamps');
    expect(parseCategoryPath(undefined)).toBeNull();
    expect(() => parseCategoryPath('Home//Lamps')).toThrow('categoryPath must not hold an empty segment (//)');
    for (const bad of ['', '/', '  ', 'Home\u0000', 'Home\nLamps', 'x'.repeat(1001), 'Home\u007f']) {
      let refused: unknown;
      try {
        parseCategoryPath(bad, 'category');
      } catch (error) {
        refused = error;
      }
      expect(refused, JSON.stringify(bad)).toMatchObject({ extensions: { code: 'BAD_USER_INPUT', field: 'category' } });
    }
  });
});

describe('what a trending or popular list costs a query', () => {
  it('its first, or 50 where first is a variable or left out', () => {
    const cost = (query: string): number => measureOperations(parse(query))[0]!.measure.cost;
    // the field itself, then its selection once an item
    expect(cost('{ trendingItems(first: 3) { name } }')).toBe(1 + 3);
    expect(cost('{ trendingItems(first: 50) { name } }')).toBe(1 + 50);
    expect(cost('query($n: Int) { popularItems(first: $n) { name } }')).toBe(cost('{ trendingItems(first: 50) { name } }'));
    expect(cost('{ popularItems { productRecommendations { name } } }')).toBeGreaterThan(50 * 10);
  });
});
