import { beforeAll, describe, expect, it } from 'vitest';
import { EmbeddedRecs } from '../../src/backends/embedded/recs.js';
import { openEmbeddedRecs } from '../../src/backends/embedded/openRecs.js';
import { isGatewayError } from '../../src/errors.js';
import { passesFilter, toRecommendationFilter } from '../../src/model/recommendationFilter.js';
import type { RecommendationFilterInput } from '../../src/model/recommendationFilter.js';
import type { ItemModel, RecommendationFilterModel, RecommendationKind } from '../../src/ports/backend.js';
import { Catalog } from '../../src/recommender/index.js';
import { logOf, repeat } from './helpers.js';

const filterOf = (input: RecommendationFilterInput): RecommendationFilterModel => toRecommendationFilter(input)!;

/**
 * A small shop: anchor 1 (Home/Kitchen/Pans) viewed with 2..9; 10..29 are never seen with it. Prices
 * are the id in dollars, brands alternate Acme/Zeta, every third item is out of stock, item 7 has no
 * price, and 20..29 sit in Garden/Hoses.
 */
function smallShop(): EmbeddedRecs {
  const catalog = new Catalog();
  catalog.addRecords(repeat(29, (i) => {
    const id = i + 1;
    return {
      itemId: id, parentItemId: id, name: `item ${id}`,
      categoryPath: id >= 20 ? 'Garden/Hoses' : id >= 10 ? 'Home/Kitchen/Knives' : 'Home/Kitchen/Pans',
      brandName: id % 2 === 0 ? 'Acme' : 'Zeta',
      stock: id % 3 === 0 ? 'Not available' : 'Available',
      ...(id === 7 ? {} : { salePrice: id }),
    };
  }));
  const log = logOf([...repeat(5, () => [1, 2, 3, 4, 5, 6, 7, 8, 9]), ...repeat(3, () => [20, 21, 22]), ...repeat(2, () => [10, 11])]);
  return new EmbeddedRecs(catalog, log);
}

const ids = async (recs: EmbeddedRecs, input: RecommendationFilterInput | null, kind: RecommendationKind = 'POST_BROWSE', anchor = 1): Promise<number[]> =>
  (await recs.recommend(kind, anchor, {}, input === null ? null : filterOf(input))).entries.map((e) => e.itemId);

describe('a filtered list on a hand-made shop', () => {
  const recs = smallShop();

  it('leaves out excluded items, and fills up to 10 from the category, department and popular items', async () => {
    // unfiltered, the in-stock neighbours come first and fills push 3, 6 and 9 (out of stock) out
    const plain = (await recs.recommend('POST_BROWSE', 1)).entries;
    expect(plain.filter((e) => e.source === 'CO_VIEW').map((e) => e.itemId).sort((a, b) => a - b)).toEqual([2, 4, 5, 7, 8]);
    const list = await recs.recommend('POST_BROWSE', 1, {}, filterOf({ excludeItemIds: [2, 3, 4, 5] }));
    expect(list.entries).toHaveLength(10);
    for (const id of [2, 3, 4, 5]) expect(list.entries.map((e) => e.itemId)).not.toContain(id);
    // of the neighbours left (6..9), those in stock (7, 8), then in-stock fills push 6 and 9 out
    expect(list.entries.filter((e) => e.source === 'CO_VIEW').map((e) => e.itemId).sort()).toEqual([7, 8]);
    expect(list.entries.some((e) => e.source !== 'CO_VIEW')).toBe(true);
    expect(list.filter?.excludeItemIds).toEqual([2, 3, 4, 5]);
    expect(list.entries.map((e) => e.rank)).toEqual(repeat(10, (i) => i + 1));
  });

  it('keeps to each condition alone', async () => {
    const item = (id: number): ItemModel => recs.catalog.get(id)!;
    const inStock = await ids(recs, { inStockOnly: true });
    expect(inStock).toHaveLength(10);
    expect(inStock.filter((id) => id % 3 === 0)).toEqual([]);
    const priced = await ids(recs, { minPrice: 5, maxPrice: 12.5 });
    // 5..12 but 7 (no price): 7 items, fewer than 10, all listed
    expect([...priced].sort((a, b) => a - b)).toEqual([5, 6, 8, 9, 10, 11, 12]);
    expect(await ids(recs, { categoryPath: 'Garden' })).toEqual(expect.arrayContaining([20, 21, 22]));
    expect((await ids(recs, { categoryPath: 'Garden' })).every((id) => item(id).categoryPath === 'Garden/Hoses')).toBe(true);
    // whole segments: Home/Kit is no category
    expect(await ids(recs, { categoryPath: 'Home/Kit' })).toEqual([]);
    const knives = await ids(recs, { categoryPath: '/Home/Kitchen/Knives/' });
    expect([...knives].sort((a, b) => a - b)).toEqual(repeat(10, (i) => 10 + i));
    const acme = await ids(recs, { brandNames: ['ACME'] });
    expect(acme).toHaveLength(10);
    expect(acme.every((id) => id % 2 === 0)).toBe(true);
  });

  it('keeps to every condition at once, even when fewer than 10 pass', async () => {
    const input = { excludeItemIds: [4], inStockOnly: true, minPrice: 2, maxPrice: 24, categoryPath: 'Home', brandNames: ['acme'] };
    const list = await ids(recs, input);
    // even, in stock (not a multiple of 3), 2..19 in Home, not 4: 2, 8, 10, 14, 16
    expect([...list].sort((a, b) => a - b)).toEqual([2, 8, 10, 14, 16]);
    // the neighbours first (2, 8), then the fills
    expect(list.slice(0, 2).sort((a, b) => a - b)).toEqual([2, 8]);
  });

  it('answers an empty list, not an error, when nothing passes', async () => {
    expect(await ids(recs, { brandNames: ['Nobody'] })).toEqual([]);
    expect(await ids(recs, { minPrice: 1000 })).toEqual([]);
    expect(await ids(recs, { categoryPath: 'Garden', brandNames: ['acme'], minPrice: 25 })).toEqual([26, 28]);
  });

  it('keeps what it found of a filter\'s conditions apart from its exclusions, and finds it again after a record changes', async () => {
    const shop = smallShop();
    const sorted = async (input: RecommendationFilterInput): Promise<number[]> => (await ids(shop, input)).sort((a, b) => a - b);
    const cheap = [2, 3, 4, 5, 6, 8, 9, 10, 11, 12];
    expect(await sorted({ maxPrice: 12.5 })).toEqual(cheap);
    expect(await sorted({ maxPrice: 12.5, excludeItemIds: [5, 10] })).toEqual([2, 3, 4, 6, 8, 9, 11, 12]);
    expect(await sorted({ maxPrice: 12.5, excludeItemIds: [2] })).toEqual(cheap.slice(1));
    expect(await sorted({ maxPrice: 12.5 })).toEqual(cheap);
    // a neighbour that costs too much now, and a far item that costs little
    shop.applyItems([{ ...shop.catalog.get(2)!, salePrice: 50 }, { ...shop.catalog.get(25)!, salePrice: 1 }]);
    expect(await sorted({ maxPrice: 12.5 })).toEqual([...cheap.slice(1), 25]);
    expect(await sorted({ minPrice: 40, categoryPath: 'Home' })).toEqual([2]);
  });

  it('still answers NOT_FOUND for an unknown anchor', async () => {
    const error = await recs.recommend('POST_BROWSE', 999, {}, filterOf({ inStockOnly: true })).catch((e: unknown) => e);
    expect(isGatewayError(error) && error.code).toBe('NOT_FOUND');
  });
});

describe('a careless client filtering a large shop', () => {
  // 50,000 items on one shelf but 12 on a rare one, priced at their id; a few visits only
  const catalog = new Catalog();
  catalog.addRecords(repeat(50_000, (i) => ({
    itemId: i + 1, parentItemId: i + 1, categoryPath: i < 12 ? 'Big/Rare' : 'Big/Shelf', brandName: i % 1000 === 999 ? 'Scarce' : 'Common', salePrice: i + 1,
  })));
  const recs = new EmbeddedRecs(catalog, logOf(repeat(5, () => [100, 101, 102])));

  it('fills from the filter\'s own category or brand wherever its items rank, in bounded time', async () => {
    const rare = await ids(recs, { categoryPath: 'Big/Rare' }, 'POST_BROWSE', 100);
    expect(rare.every((id) => id <= 12)).toBe(true);
    expect(rare).toHaveLength(10);
    // 50 items of the brand, spread over the whole shop: the brand's own list finds them
    const scarce = await ids(recs, { brandNames: ['scarce'], minPrice: 30_000 }, 'NEXT_BEST_PRODUCT', 100);
    expect(scarce).toHaveLength(10);
    expect(scarce.every((id) => id % 1000 === 0 && id >= 30_000)).toBe(true);
    const started = performance.now();
    for (let i = 0; i < 200; i++) await recs.recommend('POST_BROWSE', 1 + i * 97, {}, filterOf({ minPrice: 49_000 + i, inStockOnly: true }));
    expect(performance.now() - started).toBeLessThan(10_000);
  });

  it('walks on past the passing items it keeps when one family fills them', async () => {
    // 600 variants of one product rank first, then 20 products of their own, all passing
    const shop = new Catalog();
    shop.addRecords([
      ...repeat(600, (i) => ({ itemId: i + 1, parentItemId: 1, categoryPath: 'F/One', salePrice: 10 })),
      ...repeat(20, (i) => ({ itemId: 601 + i, parentItemId: 601 + i, categoryPath: 'F/One', salePrice: 10 })),
      { itemId: 700, parentItemId: 700, categoryPath: 'G/Other', salePrice: 99 },
    ]);
    const variants = new EmbeddedRecs(shop, logOf([[700, 701]]));
    const list = await ids(variants, { maxPrice: 10 }, 'POST_BROWSE', 700);
    expect(list).toHaveLength(10);
    expect(list.filter((id) => id <= 600)).toHaveLength(1);
    expect(list.filter((id) => id > 600).sort((a, b) => a - b)).toEqual(repeat(9, (i) => 601 + i));
  });

  it('looks at a bounded number of candidates: a price only the last of 50,000 pass may give a shorter list, never a failing item', async () => {
    const list = await ids(recs, { minPrice: 49_995 }, 'POST_BROWSE', 100);
    expect(list.length).toBeLessThanOrEqual(6);
    expect(list.every((id) => id >= 49_995)).toBe(true);
  });
});

describe('a filter as clients give it', () => {
  const refused = (input: RecommendationFilterInput): string => {
    try {
      toRecommendationFilter(input);
    } catch (error) {
      if (isGatewayError(error)) return `${error.code}: ${error.message}`;
      throw error;
    }
    return 'accepted';
  };

  it('is refused with BAD_USER_INPUT saying what is wrong', () => {
    expect(refused({ excludeItemIds: repeat(101, (i) => i + 1) })).toBe('BAD_USER_INPUT: At most 100 excludeItemIds, got 101');
    expect(refused({ minPrice: 20, maxPrice: 10 })).toBe('BAD_USER_INPUT: minPrice (20) must not exceed maxPrice (10)');
    expect(refused({ minPrice: -1 })).toMatch(/^BAD_USER_INPUT: minPrice must be a number of at least 0/);
    expect(refused({ maxPrice: Number.NaN })).toMatch(/^BAD_USER_INPUT: maxPrice/);
    expect(refused({ categoryPath: '' })).toMatch(/^BAD_USER_INPUT: categoryPath must name a category/);
    expect(refused({ categoryPath: ' // ' })).toMatch(/^BAD_USER_INPUT: categoryPath/);
    expect(refused({ brandNames: [' '] })).toMatch(/^BAD_USER_INPUT: Each of brandNames/);
    expect(refused({ excludeItemIds: repeat(100, (i) => i + 1) })).toBe('accepted');
  });

  it('has one key for one meaning, and none when it sets no condition', () => {
    expect(toRecommendationFilter({})).toBeNull();
    expect(toRecommendationFilter({ excludeItemIds: [], brandNames: [], inStockOnly: false })).toBeNull();
    expect(filterOf({ excludeItemIds: [3, 1, 3], brandNames: ['Acme', 'acme ', 'Zeta'] }).key)
      .toBe(filterOf({ excludeItemIds: [1, 3], brandNames: ['zeta', 'ACME'] }).key);
    expect(filterOf({ categoryPath: 'A/B/' }).key).toBe(filterOf({ categoryPath: 'A/B' }).key);
    expect(filterOf({ minPrice: 1 }).key).not.toBe(filterOf({ maxPrice: 1 }).key);
  });
});

describe('filters on the demo shop', () => {
  let recs: EmbeddedRecs;
  beforeAll(async () => {
    recs = await openEmbeddedRecs({ dataDir: null });
  }, 120_000);

  /** How many families other than the anchor's have an item passing the filter: the list holds min(10, that). */
  const passingFamilies = (anchor: ItemModel, filter: RecommendationFilterModel): number => {
    const families = new Set<number>();
    const anchorFamily = anchor.parentItemId ?? anchor.itemId;
    for (const item of recs.catalog.values()) {
      const family = item.parentItemId ?? item.itemId;
      if (family !== anchorFamily && passesFilter(filter, item.itemId, item)) families.add(family);
    }
    return families.size;
  };

  it('holds 10 items whenever 10 pass, each passing, for both kinds', async () => {
    const anchors = [...recs.catalog.values()].filter((_, i) => i % 997 === 0).slice(0, 8);
    const anchor0 = anchors[0]!;
    const department = anchor0.categoryPath!.split('/')[0]!;
    const filters = [
      { excludeItemIds: [] as number[], inStockOnly: true },
      { minPrice: 10, maxPrice: 40 },
      { categoryPath: 'Pantry/Breakfast' },
      { categoryPath: department, inStockOnly: true },
      { brandNames: ['Norvale', 'kestrel'] },
      { brandNames: ['Okkam'], categoryPath: 'Wardrobe', maxPrice: 60, inStockOnly: true },
      { minPrice: 300, categoryPath: 'Outdoor Living/Camping/Tents', brandNames: ['Sundew'] },
    ];
    for (const anchor of anchors) {
      for (const input of filters) {
        const filter = filterOf(input);
        for (const kind of ['POST_BROWSE', 'NEXT_BEST_PRODUCT'] as const) {
          const list = await recs.recommend(kind, anchor.itemId, {}, filter);
          for (const entry of list.entries) expect(passesFilter(filter, entry.itemId, recs.catalog.get(entry.itemId))).toBe(true);
          expect({ input, kind, length: list.entries.length }).toEqual({ input, kind, length: Math.min(10, passingFamilies(anchor, filter)) });
        }
      }
    }
  });

  it('gives an unfiltered lookup and a filter every item passes the same list', async () => {
    for (const anchor of [...recs.catalog.values()].filter((_, i) => i % 1499 === 0)) {
      for (const kind of ['POST_BROWSE', 'NEXT_BEST_PRODUCT'] as const) {
        const plain = (await recs.recommend(kind, anchor.itemId)).entries;
        expect((await recs.recommend(kind, anchor.itemId, {}, filterOf({ minPrice: 0 }))).entries).toEqual(plain);
      }
    }
  });
});
