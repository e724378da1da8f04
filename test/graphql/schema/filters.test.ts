import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuthorization } from '../../../src/auth/authorization.js';
import type { EmbeddedRecs } from '../../../src/backends/embedded/recs.js';
import { passesFilter, toRecommendationFilter } from '../../../src/model/recommendationFilter.js';
import type { RecommendationFilterInput } from '../../../src/model/recommendationFilter.js';
import type { Backend, ItemModel } from '../../../src/ports/backend.js';
import { codeOf, embeddedWithUsers, startTestGateway, type GraphQLResponse, type TestGateway } from '../../helpers/gateway.js';
import { storeKinds } from '../../helpers/stores.js';

const alice = { authorization: basicAuthorization('alice', 'alice-password') };

const CONNECTION = `query($id: ItemId!, $kind: RecommendationKind!, $first: Int, $f: RecommendationFilter) {
  recommendations(itemId: $id, kind: $kind, first: $first, filter: $f) { edges { rank source node { itemId salePrice stock categoryPath brandName } } }
}`;
const LISTS = `query($id: ItemId!, $f: RecommendationFilter) {
  postBrowsedProducts(itemId: $id, filter: $f) { itemId }
  productRecommendations(itemId: $id, filter: $f) { itemId }
  item(itemId: $id) {
    postBrowsedProducts(filter: $f) { itemId }
    productRecommendations(filter: $f) { itemId }
    recommendations(kind: POST_BROWSE, filter: $f) { nodes { itemId } }
  }
}`;

type Edge = { rank: number; source: string; node: ItemModel };
type Connection = { recommendations: { edges: Edge[] } };
/** A hit carries Age (how long the answer has been kept); an answer from the pipeline does not. */
const isHit = (response: GraphQLResponse): boolean => response.headers.get('age') !== null;

describe('filters on the GraphQL lists, embedded backend', () => {
  let gw: TestGateway;
  let dispose: () => Promise<void>;
  let recs: EmbeddedRecs;
  let anchor: ItemModel;

  beforeAll(async () => {
    const opened = await storeKinds[0]!.open();
    dispose = opened.dispose;
    const backend: Backend = await embeddedWithUsers(opened.store);
    recs = backend.recs as EmbeddedRecs;
    // an anchor with a full post-browse list of its own neighbours
    anchor = [...recs.catalog.values()].find((item) => recs.recommendNow('POST_BROWSE', item.itemId).entries.filter((e) => e.source === 'CO_VIEW').length >= 10)!;
    gw = await startTestGateway(backend);
  }, 120_000);
  afterAll(async () => {
    await gw.stop().catch(() => undefined);
    await dispose();
  });

  const edges = async (f: RecommendationFilterInput | null, kind = 'POST_BROWSE', first = 10): Promise<Edge[]> => {
    const response = await gw.gql<Connection>(CONNECTION, { id: anchor.itemId, kind, first, f }, alice);
    expect(response.body.errors).toBeUndefined();
    return response.body.data!.recommendations.edges;
  };
  const passing = (f: RecommendationFilterInput, list: Edge[]): boolean =>
    list.every((e) => passesFilter(toRecommendationFilter(f)!, e.node.itemId, recs.catalog.get(e.node.itemId)));

  it('keeps to each condition alone and all together, on both kinds', async () => {
    const unfiltered = await edges(null);
    const department = anchor.categoryPath!.split('/')[0]!;
    const filters: RecommendationFilterInput[] = [
      { excludeItemIds: unfiltered.slice(0, 3).map((e) => e.node.itemId) },
      { inStockOnly: true },
      { minPrice: 10, maxPrice: 50 },
      { categoryPath: department },
      { brandNames: [unfiltered[0]!.node.brandName!] },
      { excludeItemIds: [unfiltered[0]!.node.itemId], inStockOnly: true, minPrice: 1, maxPrice: 500, categoryPath: department, brandNames: ['norvale', 'Kestrel', 'Sundew'] },
    ];
    for (const f of filters) {
      for (const kind of ['POST_BROWSE', 'NEXT_BEST_PRODUCT']) {
        const list = await edges(f, kind);
        expect(list).toHaveLength(10);
        expect(passing(f, list)).toBe(true);
        expect(list.map((e) => e.rank)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
      }
    }
    const excluded = await edges(filters[0]!);
    for (const e of unfiltered.slice(0, 3)) expect(excluded.map((x) => x.node.itemId)).not.toContain(e.node.itemId);
    expect((await edges({ inStockOnly: true }, 'POST_BROWSE', 3)).length).toBe(3);
  });

  it('takes the filter on Query and on Item alike', async () => {
    const f = { maxPrice: 30, inStockOnly: true };
    const response = await gw.gql<Record<string, { itemId: number }[]> & { item: Record<string, unknown> }>(LISTS, { id: anchor.itemId, f }, alice);
    expect(response.body.errors).toBeUndefined();
    const data = response.body.data!;
    const item = data.item as { postBrowsedProducts: { itemId: number }[]; productRecommendations: { itemId: number }[]; recommendations: { nodes: { itemId: number }[] } };
    expect(item.postBrowsedProducts).toEqual(data.postBrowsedProducts);
    expect(item.productRecommendations).toEqual(data.productRecommendations);
    expect(item.recommendations.nodes).toEqual(data.postBrowsedProducts);
    for (const { itemId } of [...data.postBrowsedProducts!, ...data.productRecommendations!]) {
      const record = recs.catalog.get(itemId)!;
      expect(record.salePrice!).toBeLessThanOrEqual(30);
      expect(record.stock ?? 'Available').toBe('Available');
    }
  });

  it('tells lists apart by filter within one request', async () => {
    const query = `query($id: ItemId!) {
      a: postBrowsedProducts(itemId: $id, filter: { inStockOnly: true, maxPrice: 30 }) { itemId }
      b: postBrowsedProducts(itemId: $id) { itemId }
      c: postBrowsedProducts(itemId: $id, filter: { maxPrice: 30, inStockOnly: true, excludeItemIds: [] }) { itemId }
      d: postBrowsedProducts(itemId: $id, filter: {}) { itemId }
    }`;
    const response = await gw.gql<Record<'a' | 'b' | 'c' | 'd', { itemId: number }[]>>(query, { id: anchor.itemId }, alice);
    expect(response.body.errors).toBeUndefined();
    const { a, b, c, d } = response.body.data!;
    const plain = (await edges(null)).map((e) => e.node.itemId);
    expect(b.map((i) => i.itemId)).toEqual(plain);
    expect(d).toEqual(b);
    expect(c).toEqual(a);
    expect(a).not.toEqual(b);
    expect(a.every(({ itemId }) => recs.catalog.get(itemId)!.salePrice! <= 30)).toBe(true);
  });

  it('fills a list whose neighbours mostly fail from the filtered fills, and answers [] when nothing passes', async () => {
    // the anchor's neighbours are viewed in its own department: another one leaves few of them, if any
    const department = anchor.categoryPath!.split('/')[0]!;
    const other = [...recs.catalog.values()].map((item) => item.categoryPath!.split('/')[0]!).find((d) => d !== department)!;
    const f = { categoryPath: other, minPrice: 5, excludeItemIds: [anchor.itemId + 1] };
    const list = await edges(f);
    expect(list).toHaveLength(10);
    expect(list.filter((e) => e.source === 'CO_VIEW').length).toBeLessThan(10);
    expect(list.some((e) => ['CATEGORY', 'DEPARTMENT', 'POPULAR'].includes(e.source))).toBe(true);
    expect(passing(f, list)).toBe(true);
    expect(await edges({ brandNames: ['No Such Brand'] })).toEqual([]);
    expect(await edges({ categoryPath: 'No Such Department' })).toEqual([]);
    expect(await edges({ minPrice: 100_000 })).toEqual([]);
  });

  it('refuses bad filters with BAD_USER_INPUT saying what is wrong', async () => {
    const refused = async (f: unknown): Promise<string> => {
      const response = await gw.gql(CONNECTION, { id: anchor.itemId, kind: 'POST_BROWSE', f }, alice);
      expect(response.status).toBe(200);
      expect(response.body.data).toBeNull();
      return `${String(codeOf(response))}: ${response.body.errors![0]!.message}`;
    };
    expect(await refused({ excludeItemIds: Array.from({ length: 101 }, (_, i) => i + 1) })).toBe('BAD_USER_INPUT: At most 100 excludeItemIds, got 101');
    expect(await refused({ minPrice: 50, maxPrice: 10 })).toBe('BAD_USER_INPUT: minPrice (50) must not exceed maxPrice (10)');
    expect(await refused({ minPrice: -5 })).toBe('BAD_USER_INPUT: minPrice must be a number of at least 0');
    expect(await refused({ categoryPath: '' })).toBe('BAD_USER_INPUT: categoryPath must name a category, e.g. Electronics/TV');
    // a value of the wrong type never reaches the resolver: the variable is refused
    const typed = await gw.gql(CONNECTION, { id: anchor.itemId, kind: 'POST_BROWSE', f: { minPrice: 'abc' } }, alice);
    expect(codeOf(typed)).toBe('BAD_USER_INPUT');
    expect(typed.body.errors![0]!.message).toMatch(/minPrice/);
  });

  it('answers a careless client excluding thousands of ids with one clear error, quickly', async () => {
    const started = performance.now();
    const f = { excludeItemIds: Array.from({ length: 20_000 }, (_, i) => 31_000_000 + i), brandNames: Array.from({ length: 5 }, () => 'x') };
    const response = await gw.gql(CONNECTION, { id: anchor.itemId, kind: 'NEXT_BEST_PRODUCT', f }, alice);
    expect(response.status).toBeLessThan(500);
    expect(codeOf(response)).toBe('BAD_USER_INPUT');
    expect(response.body.errors).toHaveLength(1);
    expect(response.body.errors![0]!.message).toMatch(/excludeItemIds/);
    expect(performance.now() - started).toBeLessThan(5000);
  });

  it('never answers a filtered query from an unfiltered answer, nor the reverse, and rechecks a filtered one with its filter', async () => {
    const f = { maxPrice: 40, inStockOnly: true };
    const ask = (variables: Record<string, unknown>): Promise<GraphQLResponse<Connection>> => gw.gql<Connection>(CONNECTION, variables, alice);
    const plain = { id: anchor.itemId, kind: 'POST_BROWSE' };
    const filtered = { ...plain, f };
    const a = await ask(plain);
    const b = await ask(filtered);
    expect(isHit(b)).toBe(false);
    expect(b.body).not.toEqual(a.body);
    const [a2, b2] = [await ask(plain), await ask(filtered)];
    expect([isHit(a2), isHit(b2)]).toEqual([true, true]);
    expect(a2.body).toEqual(a.body);
    expect(b2.body).toEqual(b.body);
    // a change the filtered list does not see: it is rechecked with its filter, and still served
    const listed = new Set([...a.body.data!.recommendations.edges, ...b.body.data!.recommendations.edges].map((e) => e.node.itemId));
    const elsewhere = [...recs.catalog.values()].find((item) => !listed.has(item.itemId) && item.categoryPath !== anchor.categoryPath)!;
    recs.applyItems([{ ...elsewhere, name: `${elsewhere.name ?? ''} (renamed)` }]);
    const b3 = await ask(filtered);
    expect(isHit(b3)).toBe(true);
    expect(b3.body).toEqual(b.body);
    // the filtered list's first item now costs too much: that answer is not served again
    const first = recs.catalog.get(b.body.data!.recommendations.edges[0]!.node.itemId)!;
    recs.applyItems([{ ...first, salePrice: 41 }]);
    const b4 = await ask(filtered);
    expect(isHit(b4)).toBe(false);
    expect(b4.body.data!.recommendations.edges.map((e) => e.node.itemId)).not.toContain(first.itemId);
    expect(passing(f, b4.body.data!.recommendations.edges)).toBe(true);
    expect(b4.body.data!.recommendations.edges).toHaveLength(10);
  });
});
