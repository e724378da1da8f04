import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuthorization } from '../../src/auth/authorization.js';
import { createRestBackend } from '../../src/backends/rest/index.js';
import type { RestBackend } from '../../src/backends/rest/index.js';
import { CachingRecsService } from '../../src/cache/cachingRecs.js';
import { MemoryCache } from '../../src/cache/memory.js';
import { parseItemRecord } from '../../src/model/itemRecord.js';
import { passesFilter, toRecommendationFilter } from '../../src/model/recommendationFilter.js';
import type { RecommendationFilterInput } from '../../src/model/recommendationFilter.js';
import type { ItemModel, RecommendationFilterModel } from '../../src/ports/backend.js';
import { useEmbeddedGateway } from '../helpers/gateway.js';
import { storeKinds } from '../helpers/stores.js';
import { FakeKeyService, FakeRecsService, mountRest } from './helpers.js';
import type { TestServer } from './helpers.js';

const alice = basicAuthorization('alice', 'alice-password');
const filterOf = (input: RecommendationFilterInput): RecommendationFilterModel => toRecommendationFilter(input)!;

describe('filters on the served /v1/postbrowse and /v1/nbp, embedded backend', () => {
  const gw = useEmbeddedGateway(storeKinds[0]!);
  let key: string;
  let anchor: number;
  let department: string;

  const get = async (path: string): Promise<{ status: number; body: unknown }> => {
    const response = await fetch(`${gw.url}${path}${path.includes('?') ? '&' : '?'}apiKey=${encodeURIComponent(key)}`);
    return { status: response.status, body: (await response.json()) };
  };
  const records = async (path: string): Promise<ItemModel[]> => {
    const answer = await get(path);
    expect(answer.status).toBe(200);
    if (!Array.isArray(answer.body)) return [];
    return answer.body.map((record) => parseItemRecord(record));
  };

  beforeAll(async () => {
    const created = await gw.gql<{ createApiKey: { key: string } }>('mutation { createApiKey(input: {}) { key } }', {}, { authorization: alice });
    key = created.body.data!.createApiKey.key;
    const lookup = await fetch(`${gw.url}/v1/items/31000005?apiKey=${encodeURIComponent(key)}`);
    const phone = parseItemRecord(await lookup.json());
    anchor = phone.itemId;
    department = phone.categoryPath!.split('/')[0]!;
  });

  it('keeps to each parameter alone and to all of them at once, on both interfaces', async () => {
    const plain = await records(`/v1/postbrowse?itemId=${anchor}`);
    expect(plain).toHaveLength(10);
    const brand = plain[0]!.brandName!;
    const cases: [string, RecommendationFilterInput][] = [
      [`exclude=${plain[0]!.itemId},${plain[1]!.itemId}`, { excludeItemIds: [plain[0]!.itemId, plain[1]!.itemId] }],
      [`exclude=${plain[0]!.itemId}&exclude=${plain[2]!.itemId}`, { excludeItemIds: [plain[0]!.itemId, plain[2]!.itemId] }],
      ['inStock=true', { inStockOnly: true }],
      ['minPrice=20&maxPrice=60.5', { minPrice: 20, maxPrice: 60.5 }],
      [`category=${encodeURIComponent(department)}`, { categoryPath: department }],
      [`brand=${encodeURIComponent(brand)}&brand=Kestrel`, { brandNames: [brand, 'Kestrel'] }],
      [`exclude=${plain[0]!.itemId}&inStock=true&minPrice=1&maxPrice=900&category=${encodeURIComponent(department)}&brand=norvale&brand=SUNDEW&brand=${encodeURIComponent(brand)}`,
        { excludeItemIds: [plain[0]!.itemId], inStockOnly: true, minPrice: 1, maxPrice: 900, categoryPath: department, brandNames: ['norvale', 'SUNDEW', brand] }],
    ];
    for (const [query, input] of cases) {
      for (const path of ['/v1/postbrowse', '/v1/nbp']) {
        const list = await records(`${path}?itemId=${anchor}&${query}`);
        expect({ path, query, length: list.length }).toEqual({ path, query, length: 10 });
        for (const item of list) expect(passesFilter(filterOf(input), item.itemId, item)).toBe(true);
      }
    }
  });

  it('fills from the filtered fills where few neighbours pass, and answers code 4022 where none does', async () => {
    const other = department === 'Pantry' ? 'Wardrobe' : 'Pantry';
    const list = await records(`/v1/postbrowse?itemId=${anchor}&category=${other}&inStock=true`);
    expect(list).toHaveLength(10);
    expect(list.every((item) => item.categoryPath!.startsWith(`${other}/`) && (item.stock ?? 'Available') === 'Available')).toBe(true);
    for (const query of ['brand=Nobody', 'minPrice=100000', `category=${encodeURIComponent(`${department}/No Such Group`)}`]) {
      expect(await get(`/v1/nbp?itemId=${anchor}&${query}`)).toEqual({ status: 200, body: { errors: [{ code: 4022, message: `No recommendations found for item ${anchor}` }] } });
    }
  });

  it('refuses bad values with the documented 400 body, code 4000, naming the parameter', async () => {
    const refused = async (query: string): Promise<string> => {
      const answer = await get(`/v1/postbrowse?itemId=${anchor}&${query}`);
      expect(answer.status).toBe(400);
      const { errors } = answer.body as { errors: { code: number; message: string }[] };
      expect(errors).toHaveLength(1);
      expect(errors[0]!.code).toBe(4000);
      return errors[0]!.message;
    };
    expect(await refused('minPrice=abc')).toBe('minPrice must be a number of at least 0, e.g. 19.99');
    expect(await refused('maxPrice=-3')).toMatch(/^maxPrice must be/);
    expect(await refused('maxPrice=Infinity')).toMatch(/^maxPrice must be/);
    expect(await refused('minPrice=50&maxPrice=10')).toBe('minPrice (50) must not exceed maxPrice (10)');
    expect(await refused('minPrice=1&minPrice=2')).toBe('minPrice must be given once');
    expect(await refused('category=')).toBe('category must name a category, e.g. Electronics/TV');
    expect(await refused('brand=')).toBe('brand must not be empty');
    expect(await refused('inStock=yes')).toBe('inStock must be true or false');
    expect(await refused(Array.from({ length: 101 }, (_, i) => `brand=b${i}`).join('&'))).toBe('at most 100 brand parameters');
    expect(await refused('exclude=12,abc')).toMatch(/^exclude must be comma-separated item ids/);
    expect(await refused(`exclude=${Array.from({ length: 101 }, (_, i) => 31_000_000 + i).join(',')}`)).toBe('at most 100 ids in exclude');
    // a careless client: thousands of ids, refused at the 101st, never looked up
    expect(await refused(`exclude=${Array.from({ length: 1000 }, (_, i) => 31_000_000 + i).join(',')}`)).toBe('at most 100 ids in exclude');
  });
});

describe('filters in REST mode, forwarded to the upstream and applied again', () => {
  const gw = useEmbeddedGateway(storeKinds[0]!);
  let rest: RestBackend;
  let fakeServer: TestServer;
  let plainUpstream: RestBackend;

  beforeAll(async () => {
    const created = await gw.gql<{ createApiKey: { key: string } }>('mutation { createApiKey(input: {}) { key } }', {}, { authorization: alice });
    rest = createRestBackend({ apiKeyServiceUrl: gw.url, recsServiceUrl: gw.url, recsApiKey: created.body.data!.createApiKey.key, authCacheTtlMs: 0 });
    // an upstream that knows no filters: FakeRecsService ignores them (anchor 1 has 12 candidates, 2..13)
    const keys = new FakeKeyService();
    fakeServer = await mountRest(keys, new FakeRecsService(parseItemRecord));
    const gatewayKey = await keys.createKey(await keys.authenticate(keys.basic('root')), { name: 'gateway' });
    plainUpstream = createRestBackend({ apiKeyServiceUrl: fakeServer.url, recsServiceUrl: fakeServer.url, recsApiKey: gatewayKey.key, authCacheTtlMs: 0 });
  });
  afterAll(async () => {
    await rest?.close();
    await plainUpstream?.close();
    await fakeServer?.close();
  });

  it('gets a full filtered list from a recs-gateway upstream', async () => {
    const filter = filterOf({ inStockOnly: true, maxPrice: 40, brandNames: ['Norvale', 'Kestrel', 'Sundew', 'Okkam'] });
    const list = await rest.recs.recommend('NEXT_BEST_PRODUCT', 31000005, {}, filter);
    expect(list.entries).toHaveLength(10);
    expect(list.items!.every((item) => passesFilter(filter, item.itemId, item))).toBe(true);
    expect(list.filter).toBe(filter);
  });

  it('filters an upstream’s unfiltered list after it arrives: fewer items then, never one failing', async () => {
    // the fake's items cost their id (+0.99 when odd): of 2..11, those of at most 6, but 3
    const filter = filterOf({ maxPrice: 6, excludeItemIds: [3] });
    const list = await plainUpstream.recs.recommend('POST_BROWSE', 1, {}, filter);
    expect(list.entries.map((e) => e.itemId)).toEqual([2, 4, 5, 6]);
    expect(list.entries.map((e) => e.rank)).toEqual([1, 2, 3, 4]);
    const request = fakeServer.requests.find((r) => r.url.startsWith('/v1/postbrowse'))!;
    expect(new URL(request.url, 'http://x').searchParams.getAll('maxPrice')).toEqual(['6']);
    expect(new URL(request.url, 'http://x').searchParams.getAll('exclude')).toEqual(['3']);
    // a price JavaScript would write with an exponent goes as a decimal the REST twins take
    await plainUpstream.recs.recommend('NEXT_BEST_PRODUCT', 1, {}, filterOf({ minPrice: 1e-7, maxPrice: 1e21 }));
    const priced = new URL(fakeServer.requests.filter((r) => r.url.startsWith('/v1/nbp')).at(-1)!.url, 'http://x').searchParams;
    expect([priced.get('minPrice'), priced.get('maxPrice')]).toEqual(['0.0000001', '1000000000000000000000']);
  });

  it('keeps filtered and unfiltered lists apart in the shared cache', async () => {
    const cached = new CachingRecsService(rest.recs, new MemoryCache());
    const filter = filterOf({ maxPrice: 100 });
    const plain = await cached.recommend('POST_BROWSE', 31000005);
    const filtered = await cached.recommend('POST_BROWSE', 31000005, {}, filter);
    const [plainAgain, filteredAgain] = [await cached.recommend('POST_BROWSE', 31000005), await cached.recommend('POST_BROWSE', 31000005, {}, filter)];
    expect(plainAgain.entries).toEqual(plain.entries);
    expect(filteredAgain.entries).toEqual(filtered.entries);
    expect(filteredAgain.filter).toBe(filter);
    expect(filtered.entries.map((e) => e.itemId)).not.toEqual(plain.entries.map((e) => e.itemId));
    const items = await cached.getItems(filteredAgain.entries.map((e) => e.itemId));
    expect(items.every((item) => item !== null && item.salePrice! <= 100)).toBe(true);
  });
});
