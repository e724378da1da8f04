import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { itemsFrom, sendEvents, storeCatalogue } from '../helpers/liveEvents.js';
import { createKey, firstAdmin, gql, startServe, type ServeProcess } from '../helpers/processes.js';
import { tempDir } from '../helpers/stores.js';
import type { EventInputModel } from '../../src/ports/backend.js';

// trendingItems and popularItems over a real gateway on a small store, GraphQL and their REST twins alike: empty at
// first, then the lists the events sent make, following more events, and refusing what a careless client sends.

const NOW = Date.now() - 60_000;
const views = (itemId: number, n: number, tag: string): EventInputModel[] =>
  Array.from({ length: n }, (_, i) => ({ kind: 'VIEW', itemId, sessionId: `${tag}-${i}`, userId: null, orderId: null, time: NOW + i }));
const buys = (itemId: number, n: number, tag: string): EventInputModel[] =>
  Array.from({ length: n }, (_, i) => ({ kind: 'PURCHASE', itemId, sessionId: `${tag}-${i}`, userId: null, orderId: `${tag}-o${i}`, time: NOW + i }));

const data = tempDir('recs-trending-');
let serve: ServeProcess;
let admin: string;
let key: string;
beforeAll(async () => {
  await storeCatalogue({ kind: 'sqlite', dataDir: data.dir }, [...itemsFrom(1, 6, 'Home/Lamps'), ...itemsFrom(7, 6, 'Garden/Tools')]);
  serve = await startServe({ DATA_DIR: data.dir, DATABASE_URL: '', REDIS_URL: '', OTEL_EXPORTER_OTLP_ENDPOINT: '', RECS_FOLLOW_INTERVAL_MS: '200' });
  admin = firstAdmin(serve);
  key = await createKey(serve.url, admin, 'shop');
}, 90_000);
afterAll(async () => {
  await serve?.stop();
  data.remove();
});

const LISTS = `query($c: String, $k: RecommendationKind, $n: Int) {
  trendingItems(categoryPath: $c, first: $n) { itemId }
  popularItems(categoryPath: $c, kind: $k, first: $n) { itemId }
}`;

async function lists(variables: Record<string, unknown>): Promise<{ trending: number[]; popular: number[] }> {
  const { status, body } = await gql(serve.url, LISTS, variables, { authorization: key });
  expect(status, JSON.stringify(body)).toBe(200);
  const ids = (list: unknown): number[] => (list as { itemId: number }[]).map((item) => item.itemId);
  return { trending: ids(body.data!.trendingItems), popular: ids(body.data!.popularItems) };
}

async function rest(path: string): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`${serve.url}${path}${path.includes('?') ? '&' : '?'}apiKey=${encodeURIComponent(key)}`);
  return { status: response.status, body: await response.json() };
}
const restIds = async (path: string): Promise<number[]> => {
  const { status, body } = await rest(path);
  expect(status, JSON.stringify(body)).toBe(200);
  return (body as { itemId: number }[]).map((item) => item.itemId);
};

describe('trending and popular over a served gateway', () => {
  it('an empty store: empty lists, not errors', async () => {
    expect(await lists({})).toEqual({ trending: [], popular: [] });
    expect(await restIds('/v1/trending')).toEqual([]);
    expect(await restIds('/v1/popular?kind=POST_BROWSE')).toEqual([]);
  });

  it('the lists the events make, by kind and category, on GraphQL and REST alike, following new events', async () => {
    // views: 3 five times, 8 four times, 2 twice (under trending's 3); purchases: 2 twice, 9 once
    await sendEvents(serve.url, admin, [...views(3, 5, 'a'), ...views(8, 4, 'b'), ...views(2, 2, 'c'), ...buys(2, 2, 'd'), ...buys(9, 1, 'e')]);
    // 2: two views and two purchases, four events in the last day as 8 has: the lower id first
    await expect.poll(async () => (await lists({})).trending, { timeout: 5_000, interval: 100 }).toEqual([3, 2, 8]);
    expect(await lists({})).toEqual({ trending: [3, 2, 8], popular: [2, 9] });
    expect((await lists({ k: 'POST_BROWSE' })).popular).toEqual([3, 8, 2]);
    expect(await lists({ c: 'Garden', k: 'POST_BROWSE' })).toEqual({ trending: [8], popular: [8] });
    expect(await lists({ c: '/Home/Lamps/', n: 1 })).toEqual({ trending: [3], popular: [2] });
    expect(await lists({ c: 'Home/Lamp' })).toEqual({ trending: [], popular: [] });
    expect(await restIds('/v1/trending')).toEqual([3, 2, 8]);
    expect(await restIds('/v1/trending?category=Garden%2FTools&first=5')).toEqual([8]);
    expect(await restIds('/v1/popular')).toEqual([2, 9]);
    expect(await restIds('/v1/popular?kind=POST_BROWSE&category=Home&first=1')).toEqual([3]);

    // 11 rises above them all; 9 is bought three more times: four events, as 2 and 8 have
    await sendEvents(serve.url, admin, [...views(11, 9, 'f'), ...buys(9, 3, 'g')]);
    await expect.poll(async () => (await lists({})).trending, { timeout: 5_000, interval: 100 }).toEqual([11, 3, 2, 8, 9]);
    expect(await restIds('/v1/popular')).toEqual([9, 2]);
    expect(await restIds('/v1/trending?first=1')).toEqual([11]);
  }, 30_000);

  it('careless and hostile arguments: BAD_USER_INPUT on GraphQL, 400 with code 4000 on REST', async () => {
    for (const variables of [{ n: 0 }, { n: 51 }, { n: 1000 }, { n: -1 }, { c: 'Home\u0000' }, { c: 'Home\nLamps' }, { c: '' }, { c: '///' }, { c: 'x'.repeat(1001) }]) {
      const { body } = await gql(serve.url, 'query($c: String, $n: Int) { trendingItems(categoryPath: $c, first: $n) { itemId } }', variables, { authorization: key });
      expect(body.errors?.[0]?.extensions?.code, JSON.stringify(variables)).toBe('BAD_USER_INPUT');
      const popular = await gql(serve.url, 'query($c: String, $n: Int) { popularItems(categoryPath: $c, first: $n) { itemId } }', variables, { authorization: key });
      expect(popular.body.errors?.[0]?.extensions?.code, JSON.stringify(variables)).toBe('BAD_USER_INPUT');
    }
    const unknownKind = await gql(serve.url, '{ popularItems(kind: TRENDING) { itemId } }', {}, { authorization: key });
    expect(unknownKind.status).toBe(400);
    for (const path of [
      '/v1/trending?first=0', '/v1/trending?first=51', '/v1/trending?first=abc', '/v1/trending?first=', '/v1/trending?first=1&first=2',
      '/v1/trending?category=Home%00', '/v1/trending?category=%0A', '/v1/popular?kind=TRENDING', '/v1/popular?kind=post_browse',
      '/v1/popular?category=Home&category=Garden', `/v1/popular?category=${'x'.repeat(1001)}`,
    ]) {
      const { status, body } = await rest(path);
      expect(status, path).toBe(400);
      expect((body as { errors: { code: number; message: string }[] }).errors[0]!.code, path).toBe(4000);
    }
    const { status, body } = await rest('/v1/popular?kind=TRENDING');
    expect({ status, body }).toEqual({ status: 400, body: { errors: [{ code: 4000, message: 'kind must be POST_BROWSE or NEXT_BEST_PRODUCT' }] } });
    // without a key: as every recommendations route answers it
    const anonymous = await fetch(`${serve.url}/v1/trending`);
    expect(anonymous.status).toBe(403);
    await anonymous.body?.cancel();
    const unauthenticated = await gql(serve.url, '{ trendingItems { itemId } }');
    expect(unauthenticated.body.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
  }, 30_000);
});
