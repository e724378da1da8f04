import { describe, it, expect } from 'vitest';
import { match } from '../helpers/matchers.js';
import { EmbeddedRecs } from '../../src/backends/embedded/recs.js';
import { isGatewayError } from '../../src/errors.js';
import { catalogOf, logOf, repeat } from './helpers.js';

describe('post-browse', () => {
  it('orders co-viewed items by score, with their evidence', async () => {
    // Each item in a category of its own, so that no same-category factor applies.
    const catalog = catalogOf(repeat(12, (i) => ({ id: i + 1, path: `Dept/Cat${i + 1}` })));
    // 2 is seen with 1 in 4 visits, 5 in 5 but it is everywhere, 3 in 2, 4 in 1.
    const log = logOf([...repeat(4, () => [1, 2, 5]), [1, 3, 5], [1, 3], [1, 4], ...repeat(20, () => [5, 6])]);
    // Item sets counted (no order, no discount): c / n(1), n(1) = 7.
    const byCount = await new EmbeddedRecs(catalog, log, { postBrowse: { damping: 0 } }).recommend('POST_BROWSE', 1);
    const coView = byCount.entries.filter((e) => e.source === 'CO_VIEW');
    expect(coView.map((e) => e.itemId)).toEqual([5, 2, 3, 4]);
    expect(coView.map((e) => e.evidence)).toEqual([5, 4, 2, 1]);
    expect(coView.map((e) => e.score)).toEqual([5 / 7, 4 / 7, 2 / 7, 1 / 7].map((x) => match.closeTo(x, 9)));
    // d = 0.3 discounts 5 for being everywhere: 4 / 4^0.3 = 2.64 > 5 / 25^0.3 = 1.90.
    const damped = await new EmbeddedRecs(catalog, log, { postBrowse: { damping: 0.3 } }).recommend('POST_BROWSE', 1);
    expect(damped.entries.slice(0, 2).map((e) => e.itemId)).toEqual([2, 5]);
    expect(damped.entries[0]!.score).toBeCloseTo(4 / Math.pow(7, 0.7) / Math.pow(4, 0.3), 6);
    for (let i = 1; i < coView.length; i++) expect(coView[i]!.score!).toBeLessThanOrEqual(coView[i - 1]!.score!);
    expect(byCount.entries.map((e) => e.rank)).toEqual(repeat(byCount.entries.length, (i) => i + 1));
    expect(byCount.items?.map((i) => i.itemId)).toEqual(byCount.entries.map((e) => e.itemId));
  });

  it('weighs a co-view by its order and distance in the visit', async () => {
    const catalog = catalogOf(repeat(40, (i) => ({ id: i + 1, path: `Dept/Cat${i + 1}` })));
    // Anchor 1: 7 comes right after it 3 times, 8 two steps after it 3 times, 9 right after it
    // twice, 3 right before it 3 times, 30 eleven steps after it once.
    const log = logOf([...repeat(3, () => [1, 7, 8]), ...repeat(2, () => [1, 9]), ...repeat(3, () => [3, 1]), [1, ...repeat(10, (i) => 20 + i), 30]]);
    const ranked = async (options: ConstructorParameters<typeof EmbeddedRecs>[2]): Promise<[number, number][]> =>
      (await new EmbeddedRecs(catalog, log, options).recommend('POST_BROWSE', 1)).entries
        .filter((e) => e.source === 'CO_VIEW' && [3, 7, 8, 9, 30].includes(e.itemId)).map((e) => [e.itemId, e.score!]);
    // Unordered, every pair counts 1: 7, 8 and 3 tie at 3 visits (ties go to the lower item id,
    // whatever order a process met them in), then 9.
    expect((await ranked({ postBrowse: { damping: 0 } })).map(([id]) => id)).toEqual([3, 7, 8, 9]);
    // The default: forward pairs weigh 1/distance, backward ones half that, at most 10 apart.
    // n(1) = 9 visits: 7 = 3/9, 9 = 2/9, 8 = 3 * 1/2 / 9, 3 = 3 * 0.5 / 9: 3's visits came a few
    // seconds later, but recency is kept to 1/4096 of a half-life (5 minutes of 14 days, see
    // recencyWeight), so they tie, and ties go to the lower item id.
    const byDefault = await ranked(undefined);
    expect(byDefault.map(([id]) => id)).toEqual([7, 9, 3, 8]);
    expect(byDefault.map(([, score]) => score)).toEqual([3 / 9, 2 / 9, 1.5 / 9, 1.5 / 9].map((x) => match.closeTo(x, 5)));
    // Sequential rules (forward only): the item viewed before the anchor is no evidence for it.
    const forward = await ranked({ postBrowse: { damping: 0, order: { window: 10, backward: 0, exponent: 1 } } });
    expect(forward.map(([id]) => id)).toEqual([7, 9, 8]);
    // 30 came 11 steps after 1: outside the default window, inside one of 11, at 1/11.
    const neighbour = (recs: EmbeddedRecs, id: number): number | undefined => {
      const { items, postBrowse } = recs.model;
      const a = items.indexOf(1);
      for (let j = postBrowse.start[a]!; j < postBrowse.start[a + 1]!; j++) if (items.idAt(postBrowse.item[j]!) === id) return postBrowse.score[j]!;
      return undefined;
    };
    expect(neighbour(new EmbeddedRecs(catalog, log), 30)).toBeUndefined();
    expect(neighbour(new EmbeddedRecs(catalog, log), 29)).toBeCloseTo(0.1 / 9, 5);
    expect(neighbour(new EmbeddedRecs(catalog, log, { postBrowse: { damping: 0, order: { window: 11, backward: 0.5, exponent: 1 } } }), 30)).toBeCloseTo(1 / 11 / 9, 5);
  });

  it('counts repeated views of one item as one position when asked', async () => {
    const catalog = catalogOf(repeat(12, (i) => ({ id: i + 1, path: `Dept/Cat${i + 1}` })));
    // 1 then 2 twice in a row then 3: with repeats collapsed, 3 is 2 steps after 1, not 3.
    const log = logOf([[1, 2, 2, 3]]);
    const score = async (collapseRepeats: boolean): Promise<number> =>
      (await new EmbeddedRecs(catalog, log, { postBrowse: { damping: 0, collapseRepeats, order: { window: 10, backward: 0, exponent: 1 } } }).recommend('POST_BROWSE', 1))
        .entries.find((e) => e.itemId === 3)!.score!;
    expect(await score(false)).toBeCloseTo(1 / 3, 6);
    expect(await score(true)).toBeCloseTo(1 / 2, 6);
  });

  it('returns at most 10 however much evidence there is', async () => {
    const catalog = catalogOf(repeat(40, (i) => ({ id: i + 1 })));
    const recs = new EmbeddedRecs(catalog, logOf([repeat(30, (i) => i + 1)]));
    const list = await recs.recommend('POST_BROWSE', 1);
    expect(list.entries).toHaveLength(10);
    expect(list.entries.every((e) => e.source === 'CO_VIEW')).toBe(true);
  });

  it('never returns the anchor nor its variants, and one item per family', async () => {
    const catalog = catalogOf([
      { id: 1, parent: 1, variants: [1, 11, 12] }, { id: 11, parent: 1, variants: [1, 11, 12] }, { id: 12, parent: 1 },
      { id: 2, parent: 2 }, { id: 3, parent: 2 }, { id: 4 }, { id: 13, variants: [1] },
    ]);
    const recs = new EmbeddedRecs(catalog, logOf(repeat(5, () => [1, 11, 12, 2, 3, 4, 13])));
    for (const anchor of [1, 11]) {
      const ids = (await recs.recommend('POST_BROWSE', anchor)).entries.map((e) => e.itemId);
      expect(ids).not.toContain(1);
      expect(ids).not.toContain(11);
      expect(ids).not.toContain(12);
      expect(ids).not.toContain(13);
      expect(ids.filter((id) => id === 2 || id === 3)).toHaveLength(1);
      expect(ids).toContain(4);
    }
  });

  it('puts in-stock items first, out-of-stock ones after', async () => {
    const catalog = catalogOf([
      { id: 1, stock: 'Not available' }, { id: 2, stock: 'Not available' }, { id: 3 }, { id: 4 }, ...repeat(10, (i) => ({ id: 20 + i, path: 'Other/Cat' })),
    ]);
    const recs = new EmbeddedRecs(catalog, logOf([...repeat(5, () => [1, 2]), [1, 3]]));
    const list = await recs.recommend('POST_BROWSE', 1);
    expect(list.entries).toHaveLength(10);
    expect(list.entries[0]).toMatchObject({ itemId: 3, source: 'CO_VIEW', evidence: 1 });
    // 2 has the strongest evidence but cannot be bought, so every in-stock item comes first.
    expect(list.entries.map((e) => e.itemId)).not.toContain(2);
    const few = new EmbeddedRecs(catalogOf([{ id: 1, stock: 'Not available' }, { id: 2, stock: 'Not available' }, { id: 3 }]), logOf([[1, 2], [1, 2], [1, 3]]));
    expect((await few.recommend('POST_BROWSE', 1)).entries.map((e) => e.itemId)).toEqual([3, 2]);
  });
});

describe('fallbacks', () => {
  it('fills an 11-item catalogue to 10 from category, then department, then popularity', async () => {
    const catalog = catalogOf([
      { id: 1, path: 'Home/Lamps' }, { id: 2, path: 'Home/Lamps' }, { id: 3, path: 'Home/Lamps' },
      { id: 4, path: 'Home/Rugs' }, { id: 5, path: 'Home/Rugs' },
      ...repeat(6, (i) => ({ id: 6 + i, path: 'Garden/Tools' })),
    ]);
    // 3 is more popular than 2 and 10 more than the other garden tools: popularity orders each tier.
    const log = logOf([[3], [3], [10], [10], [10]]);
    const recs = new EmbeddedRecs(catalog, log);
    for (const kind of ['POST_BROWSE', 'NEXT_BEST_PRODUCT'] as const) {
      const list = await recs.recommend(kind, 1);
      expect(list.entries.map((e) => [e.itemId, e.source])).toEqual([
        [3, 'CATEGORY'], [2, 'CATEGORY'], [4, 'DEPARTMENT'], [5, 'DEPARTMENT'],
        [10, 'POPULAR'], [6, 'POPULAR'], [7, 'POPULAR'], [8, 'POPULAR'], [9, 'POPULAR'], [11, 'POPULAR'],
      ]);
      expect(list.entries.every((e) => e.score === null && e.evidence === 0)).toBe(true);
    }
  });

  it('gives 10 when nearly the whole catalogue is the anchor\'s variants, in stock first', async () => {
    // 1,500 variants of the anchor fill its category, its department and the top of the popularity
    // list; the ten other items were never seen and five of them are out of stock.
    const catalog = catalogOf([
      ...repeat(1500, (i) => ({ id: 1 + i, parent: 1, path: 'Home/Lamps' })),
      ...repeat(10, (i) => ({ id: 2001 + i, path: 'Garden/Tools', stock: i % 2 === 0 ? 'Not available' : 'Available' })),
    ]);
    const log = logOf(repeat(1500, (i) => [1 + i]), repeat(1500, (i) => [1 + i]));
    const recs = new EmbeddedRecs(catalog, log);
    for (const kind of ['POST_BROWSE', 'NEXT_BEST_PRODUCT'] as const) {
      const list = await recs.recommend(kind, 7);
      expect(list.entries.map((e) => e.itemId).sort()).toEqual(repeat(10, (i) => 2001 + i));
      expect(list.entries.every((e) => e.source === 'POPULAR')).toBe(true);
      expect(list.items!.slice(0, 5).every((i) => i.stock === 'Available')).toBe(true);
      expect(list.items!.slice(5).every((i) => i.stock === 'Not available')).toBe(true);
    }
  });

  it('throws NOT_FOUND for an unknown anchor', async () => {
    const recs = new EmbeddedRecs(catalogOf([{ id: 1 }]), logOf([]));
    const error = await recs.recommend('POST_BROWSE', 99).catch((e: unknown) => e);
    expect(isGatewayError(error) && error.code).toBe('NOT_FOUND');
    expect((error as Error).message).toBe('No item with itemId 99');
  });

  it('getItems keeps the order and length of the ids, null for unknown', async () => {
    const recs = new EmbeddedRecs(catalogOf([{ id: 1 }, { id: 2 }]), logOf([]));
    expect((await recs.getItems([2, 7, 1])).map((i) => i?.itemId ?? null)).toEqual([2, null, 1]);
  });
});

describe('next-best-product', () => {
  it('prefers complements bought together over same-category items', async () => {
    const catalog = catalogOf([
      { id: 1, path: 'Tech/Phones' }, { id: 2, path: 'Tech/Phones' }, { id: 3, path: 'Tech/Cases' }, { id: 4, path: 'Tech/Chargers' },
      ...repeat(8, (i) => ({ id: 10 + i, path: 'Food/Snacks' })),
    ]);
    // 2 (another phone) and 3 (a case) are each bought with 1 three times: the case wins.
    const log = logOf([], [...repeat(3, () => [1, 2]), ...repeat(3, () => [1, 3]), [1, 4], [2, 3]]);
    const recs = new EmbeddedRecs(catalog, log);
    const list = await recs.recommend('NEXT_BEST_PRODUCT', 1);
    const coPurchase = list.entries.filter((e) => e.source === 'CO_PURCHASE');
    expect(coPurchase.map((e) => e.itemId).sort()).toEqual([2, 3, 4]);
    expect(coPurchase[0]).toMatchObject({ itemId: 3, evidence: 3 });
    expect(coPurchase.find((e) => e.itemId === 2)!.score!).toBeLessThan(coPurchase[0]!.score! * 0.6);
    expect(list.entries).toHaveLength(10);
  });

  it('with thin evidence and no categories, the popularity prior brings in the most bought items with a score and no evidence', async () => {
    // No categories: the prior is popularity.
    const catalog = catalogOf([{ id: 1, path: '' }, { id: 2, path: '' }, { id: 9, path: '' }, ...repeat(20, (i) => ({ id: 100 + i, path: '' }))]);
    // 1 was bought once, with 2; 9 is in 20 of the 21 orders.
    const log = logOf([], [[1, 2], ...repeat(20, (i) => [9, 100 + i])]);
    const entries = (await new EmbeddedRecs(catalog, log).recommend('NEXT_BEST_PRODUCT', 1)).entries;
    // (c + k n(b)/N) / (n(1)^0.7 n(b)^0.3) with k = 100, N = 21: one shared order is thin
    // evidence next to 9's 20 orders (9: 38.8, 2: 5.76); with thousands of orders the counts decide.
    expect(entries.slice(0, 2)).toMatchObject([{ itemId: 9, source: 'POPULAR', evidence: 0 }, { itemId: 2, source: 'CO_PURCHASE', evidence: 1 }]);
    expect(entries[0]!.score).toBeCloseTo((100 * 20) / 21 / Math.pow(20, 0.3), 6);
    expect(entries[1]!.score).toBeCloseTo(1 + 100 / 21, 6);
    const noPrior = await new EmbeddedRecs(catalog, log, { nextBest: { damping: 0.3, prior: 0 } }).recommend('NEXT_BEST_PRODUCT', 1);
    expect(noPrior.entries.filter((e) => e.score !== null).map((e) => e.itemId)).toEqual([2]);
  });

  it('fills an anchor never bought from the categories bought with its own, before its own category', async () => {
    const catalog = catalogOf([
      ...[1, 2, 3].map((id) => ({ id, path: 'Tech/Mobile/Phones' })),
      ...[10, 11, 12].map((id) => ({ id, path: 'Tech/Mobile/Cases' })),
      ...[20, 21].map((id) => ({ id, path: 'Tech/Mobile/Chargers' })),
      ...repeat(10, (i) => ({ id: 30 + i, path: 'Food/Snacks' })),
    ]);
    // Phones 2 and 3 go with cases and chargers (10 most, then 20); twice with each other, and the
    // snacks are bought more than anything but never with a phone. Phone 1 was never bought.
    const log = logOf([], [[2, 10], [2, 10, 20], [3, 10, 21], [3, 11], [2, 12, 20], [2, 3], [2, 3], ...repeat(30, (i) => [30 + (i % 10)])]);
    const list = await new EmbeddedRecs(catalog, log).recommend('NEXT_BEST_PRODUCT', 1);
    const path = (id: number): string => catalog.get(id)!.categoryPath!;
    // Every case and charger first, the strongest of each first; then the other phones.
    expect(list.entries.slice(0, 5).map((e) => path(e.itemId)).every((p) => p !== 'Tech/Mobile/Phones' && p !== 'Food/Snacks')).toBe(true);
    expect(list.entries.slice(0, 2).map((e) => e.itemId).sort()).toEqual([10, 20]);
    expect(list.entries.slice(0, 5).every((e) => e.source === 'CO_PURCHASE' && e.evidence === 0)).toBe(true);
    expect(list.entries.slice(5, 7)).toMatchObject([{ source: 'CATEGORY' }, { source: 'CATEGORY' }]);
    expect(list.entries.slice(5, 7).map((e) => e.itemId).sort()).toEqual([2, 3]);
  });
});
