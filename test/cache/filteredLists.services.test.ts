import { afterAll, describe, expect, it } from 'vitest';
import { EmbeddedRecs } from '../../src/backends/embedded/recs.js';
import { CachingRecsService } from '../../src/cache/cachingRecs.js';
import { RedisCache } from '../../src/cache/redis.js';
import { toRecommendationFilter } from '../../src/model/recommendationFilter.js';
import type { CallOptions, RecommendationFilterModel, RecommendationKind, RecsService } from '../../src/ports/backend.js';
import { Catalog } from '../../src/recommender/index.js';
import { drainPrefix, REDIS_URL, testPrefix } from '../helpers/redis.js';
import { logOf, repeat } from '../recommender/helpers.js';

/**
 * REST mode's shared cache with filters, on real Redis, with two processes' worth of caches: a
 * filtered list is kept under its canonical filter, so no process answers a filtered ask with the
 * unfiltered list or the reverse, and a filter spelt another way finds the same entry.
 */
describe('filtered lists in the shared Redis cache', () => {
  const prefix = testPrefix();
  const caches: RedisCache[] = [];
  afterAll(async () => {
    await Promise.all(caches.map((cache) => cache.close()));
    await drainPrefix(prefix);
  });

  // the upstream: 30 items priced at their id, anchor 1 viewed with 2..12; it counts the lists it is asked for
  const catalog = new Catalog();
  catalog.addRecords(repeat(30, (i) => ({ itemId: i + 1, parentItemId: i + 1, categoryPath: 'A/B', salePrice: i + 1 })));
  const embedded = new EmbeddedRecs(catalog, logOf(repeat(3, () => repeat(12, (i) => i + 1))));
  const asked: (string | null)[] = [];
  const upstream: RecsService = {
    getItems: (ids, options) => embedded.getItems(ids, options),
    recommend: (kind: RecommendationKind, anchorId: number, options?: CallOptions, filter?: RecommendationFilterModel | null) => {
      asked.push(filter?.key ?? null);
      return embedded.recommend(kind, anchorId, options, filter);
    },
  };
  const processCache = async (): Promise<CachingRecsService> => {
    const cache = new RedisCache({ url: REDIS_URL, keyPrefix: prefix, commandTimeoutMs: 10_000 });
    caches.push(cache);
    await expect.poll(() => cache.check(), { timeout: 5000 }).toBe('ok');
    return new CachingRecsService(upstream, cache);
  };

  it('keeps a filtered list apart from the unfiltered one, across processes', async () => {
    const [a, b] = [await processCache(), await processCache()];
    const cheap = toRecommendationFilter({ maxPrice: 6, excludeItemIds: [3] })!;
    const filtered = await a.recommend('POST_BROWSE', 1, {}, cheap);
    expect(filtered.entries.map((e) => e.itemId).sort((x, y) => x - y)).toEqual([2, 4, 5, 6]);
    await a.flushed();
    expect(asked).toEqual([cheap.key]);

    // the other process: the same filter, spelt another way, from Redis
    const again = await b.recommend('POST_BROWSE', 1, {}, toRecommendationFilter({ excludeItemIds: [3, 3], maxPrice: 6, brandNames: [] }));
    expect(again.entries).toEqual(filtered.entries);
    expect(asked).toHaveLength(1);

    // unfiltered: never the filtered entry
    const plain = await b.recommend('POST_BROWSE', 1);
    expect(asked).toEqual([cheap.key, null]);
    expect(plain.entries).toHaveLength(10);
    expect(plain.entries.map((e) => e.itemId)).toContain(3);
    await b.flushed();

    // and the reverse: a new filter is asked for, not answered from the unfiltered entry
    const other = toRecommendationFilter({ minPrice: 20 })!;
    const dear = await a.recommend('POST_BROWSE', 1, {}, other);
    expect(asked).toEqual([cheap.key, null, other.key]);
    expect(dear.entries.every((e) => e.itemId >= 20)).toBe(true);
  });
});
