import { describe, it, expect } from 'vitest';
import { EmbeddedRecs } from '../../src/backends/embedded/recs.js';
import { isGatewayError } from '../../src/errors.js';
import { catalogOf, logOf, repeat } from './helpers.js';

describe('post-browse', () => {
  it('orders co-viewed items by score, with their evidence', async () => {
    const catalog = catalogOf(repeat(12, (i) => ({ id: i + 1 })));
    // 2 is seen with 1 in 4 visits, 5 in 5 but it is everywhere, 3 in 2, 4 in 1: shrunk cosine
    // 4/sqrt(7*4)*4/6 = 0.504, 5/sqrt(7*25)*5/7 = 0.270, 2/sqrt(7*2)*2/4 = 0.267, 1/sqrt(7)*1/3 = 0.126.
    const log = logOf([...repeat(4, () => [1, 2, 5]), [1, 3, 5], [1, 3], [1, 4], ...repeat(20, () => [5, 6])]);
    const recs = new EmbeddedRecs(catalog, log, { postBrowse: { weighting: 'cosine' } });
    const list = await recs.recommend('POST_BROWSE', 1);
    const coView = list.entries.filter((e) => e.source === 'CO_VIEW');
    expect(coView.map((e) => e.itemId)).toEqual([2, 5, 3, 4]);
    expect(coView.map((e) => e.evidence)).toEqual([4, 5, 2, 1]);
    expect(coView[0]!.score).toBeCloseTo(0.504, 3);
    const byCount = await new EmbeddedRecs(catalog, log, { postBrowse: { weighting: 'count' } }).recommend('POST_BROWSE', 1);
    expect(byCount.entries.slice(0, 4).map((e) => [e.itemId, e.score])).toEqual([[5, 5], [2, 4], [3, 2], [4, 1]]);
    // The default (damped, d = 0.3) discounts 5 for being everywhere: 4 / 4^0.3 = 2.64 > 5 / 25^0.3 = 1.90.
    const byDefault = await new EmbeddedRecs(catalog, log).recommend('POST_BROWSE', 1);
    expect(byDefault.entries.slice(0, 2).map((e) => e.itemId)).toEqual([2, 5]);
    expect(byDefault.entries[0]!.score).toBeCloseTo(4 / Math.pow(7, 0.7) / Math.pow(4, 0.3), 6);
    for (let i = 1; i < coView.length; i++) expect(coView[i]!.score!).toBeLessThanOrEqual(coView[i - 1]!.score!);
    expect(list.entries.map((e) => e.rank)).toEqual(repeat(list.entries.length, (i) => i + 1));
    expect(list.items?.map((i) => i.itemId)).toEqual(list.entries.map((e) => e.itemId));
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

  it('with thin evidence, the popularity prior brings in the most bought items with a score and no evidence', async () => {
    const catalog = catalogOf([{ id: 1, path: 'A/B' }, { id: 2, path: 'C/D' }, { id: 9, path: 'E/F' }, ...repeat(20, (i) => ({ id: 100 + i, path: 'G/H' }))]);
    // 1 was bought once, with 2; 9 is in 20 of the 21 orders.
    const log = logOf([], [[1, 2], ...repeat(20, (i) => [9, 100 + i])]);
    const entries = (await new EmbeddedRecs(catalog, log).recommend('NEXT_BEST_PRODUCT', 1)).entries;
    // (c + k n(b)/N) / (n(1)^0.7 n(b)^0.3) with k = 100, N = 21: one shared order is thin evidence
    // next to 9's 20 orders (9: 38.8, 2: 5.76); with thousands of orders the counts would decide.
    expect(entries.slice(0, 2)).toMatchObject([{ itemId: 9, source: 'POPULAR', evidence: 0 }, { itemId: 2, source: 'CO_PURCHASE', evidence: 1 }]);
    expect(entries[0]!.score).toBeCloseTo((100 * 20) / 21 / Math.pow(20, 0.3), 6);
    expect(entries[1]!.score).toBeCloseTo(1 + 100 / 21, 6);
    const noPrior = await new EmbeddedRecs(catalog, log, { nextBest: { weighting: 'damped', damping: 0.3, prior: 0 } }).recommend('NEXT_BEST_PRODUCT', 1);
    expect(noPrior.entries.filter((e) => e.score !== null).map((e) => e.itemId)).toEqual([2]);
  });
});
