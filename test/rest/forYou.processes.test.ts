import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { itemsFrom, sendEvents, storeCatalogue } from '../helpers/liveEvents.js';
import { createKey, firstAdmin, gql, startServe, type ServeProcess } from '../helpers/processes.js';
import { tempDir } from '../helpers/stores.js';
import type { EventInputModel } from '../../src/ports/backend.js';

// recommendedForYou and GET /v1/foryou over a real gateway on a small store: the list a shopper's events make, on
// GraphQL and REST alike, following new events within a second, refusing what a careless client sends, and never
// showing the shopper's ids in an answer, a log line or a metric.

const NOW = Date.now() - 60_000;
const SESSION = 'sess-7f3a-PRIVATE';
const USER = 'user-9c1d-PRIVATE';
let t = NOW;
const view = (itemId: number, sessionId: string, userId: string | null = null): EventInputModel =>
  ({ kind: 'VIEW', itemId, sessionId, userId, orderId: null, time: (t += 10) });

const data = tempDir('recs-foryou-');
let serve: ServeProcess;
let admin: string;
let key: string;
beforeAll(async () => {
  await storeCatalogue({ kind: 'sqlite', dataDir: data.dir }, [...itemsFrom(1, 8, 'Home/Lamps'), ...itemsFrom(9, 4, 'Garden/Tools')]);
  serve = await startServe({ DATA_DIR: data.dir, DATABASE_URL: '', REDIS_URL: '', OTEL_EXPORTER_OTLP_ENDPOINT: '', RECS_FOLLOW_INTERVAL_MS: '100' });
  admin = firstAdmin(serve);
  key = await createKey(serve.url, admin, 'shop');
  // three sessions view 1 then 2, three 3 then 4, two 5 then 9; 6 is viewed most
  const past: EventInputModel[] = [];
  for (let i = 0; i < 3; i++) past.push(view(1, `a${i}`), view(2, `a${i}`), view(3, `b${i}`), view(4, `b${i}`));
  for (let i = 0; i < 2; i++) past.push(view(5, `c${i}`), view(9, `c${i}`));
  for (let i = 0; i < 5; i++) past.push(view(6, `d${i}`));
  await sendEvents(serve.url, admin, past);
}, 90_000);
afterAll(async () => {
  await serve?.stop();
  data.remove();
});

const FOR_YOU = `query($s: String, $u: String, $n: Int, $f: RecommendationFilter) {
  recommendedForYou(sessionId: $s, userId: $u, first: $n, filter: $f) {
    edges { rank score source node { itemId } because { itemId } }
    nodes { itemId }
  }
}`;

interface Edge { rank: number; score: number | null; source: string; node: { itemId: number }; because: { itemId: number } | null }

async function forYou(variables: Record<string, unknown>): Promise<{ edges: Edge[]; cacheControl: string | null; text: string }> {
  const response = await fetch(`${serve.url}/graphql`, {
    method: 'POST', headers: { 'content-type': 'application/json', authorization: key }, body: JSON.stringify({ query: FOR_YOU, variables }),
  });
  const text = await response.text();
  expect(response.status, text).toBe(200);
  const body = JSON.parse(text) as { data: { recommendedForYou: { edges: Edge[]; nodes: { itemId: number }[] } } };
  expect(body.data.recommendedForYou.nodes).toEqual(body.data.recommendedForYou.edges.map((e) => e.node));
  return { edges: body.data.recommendedForYou.edges, cacheControl: response.headers.get('cache-control'), text };
}
const ids = async (variables: Record<string, unknown>): Promise<number[]> => (await forYou(variables)).edges.map((e) => e.node.itemId);

interface RestList { entries?: { itemId: number; because: number | null; source: string }[]; items?: { itemId: number }[]; errors?: { code: number; message: string }[] }

async function rest(query: string): Promise<{ status: number; body: RestList; text: string }> {
  const response = await fetch(`${serve.url}/v1/foryou?${query}&apiKey=${encodeURIComponent(key)}`);
  const text = await response.text();
  return { status: response.status, body: JSON.parse(text) as RestList, text };
}

describe('recommendedForYou over a served gateway', () => {
  it('a shopper without events gets the popular items; the same on REST', async () => {
    expect((await ids({ s: SESSION, n: 3 }))).toEqual([6, 1, 2]);
    const answer = await rest(`sessionId=${SESSION}&count=3`);
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body.entries!.map((e) => [e.itemId, e.source, e.because])).toEqual([[6, 'POPULAR', null], [1, 'POPULAR', null], [2, 'POPULAR', null]]);
    expect(answer.body.items!.map((i) => i.itemId)).toEqual([6, 1, 2]);
  });

  it('follows the shopper\'s events within a second: their items\' lists, the newest first, none they saw', async () => {
    await sendEvents(serve.url, admin, [view(3, SESSION, USER), view(1, SESSION, USER)]);
    const sent = Date.now();
    await expect.poll(() => ids({ s: SESSION, n: 2 }), { timeout: 1_000, interval: 25 }).toEqual([2, 4]);
    expect(Date.now() - sent).toBeLessThan(1_000);
    const { edges, cacheControl, text } = await forYou({ s: SESSION, n: 4 });
    expect(edges.slice(0, 2).map((e) => [e.node.itemId, e.because?.itemId, e.source])).toEqual([[2, 1, 'CO_VIEW'], [4, 3, 'CO_VIEW']]);
    expect(edges.slice(2).every((e) => e.source === 'POPULAR' && e.because === null && e.score === null)).toBe(true);
    expect(edges.map((e) => e.node.itemId)).not.toContain(1);
    expect(edges.map((e) => e.node.itemId)).not.toContain(3);
    expect(edges.map((e) => e.rank)).toEqual([1, 2, 3, 4]);
    // one shopper's answer: never public
    expect(cacheControl ?? '').not.toMatch(/public/);
    expect(text).not.toContain('PRIVATE');
    // the user's events are the session's; REST the same
    expect(await ids({ u: USER, n: 2 })).toEqual([2, 4]);
    const answer = await rest(`userId=${USER}&count=2`);
    expect(answer.body.entries!.map((e) => [e.itemId, e.because])).toEqual([[2, 1], [4, 3]]);
    expect(answer.text).not.toContain('PRIVATE');

    await sendEvents(serve.url, admin, [view(5, SESSION)]);
    const again = Date.now();
    await expect.poll(() => ids({ s: SESSION, n: 1 }), { timeout: 1_000, interval: 25 }).toEqual([9]);
    expect(Date.now() - again).toBeLessThan(1_000);
  }, 30_000);

  it('filters as the anchored lists do, keeping first while enough pass, empty when none does', async () => {
    expect(await ids({ s: SESSION, n: 3, f: { categoryPath: 'Garden' } })).toEqual([9, 10, 11]);
    expect(await ids({ s: SESSION, n: 10, f: { categoryPath: 'Kitchen' } })).toEqual([]);
    const answer = await rest(`sessionId=${SESSION}&count=2&exclude=9&category=Garden`);
    expect(answer.body.entries!.map((e) => e.itemId)).toEqual([10, 11]);
    expect((await rest(`sessionId=${SESSION}&category=Kitchen`)).body).toEqual({ entries: [], items: [] });
  });

  it('refuses a missing or oversized shopper and first out of range, never echoing the ids', async () => {
    const huge = 'H'.repeat(10_000);
    for (const variables of [{}, { s: huge, u: huge }, { s: '' }, { s: SESSION, n: 0 }, { s: SESSION, n: 51 }, { u: USER, f: { excludeItemIds: Array.from({ length: 101 }, (_, i) => i + 1) } }]) {
      const { status, body } = await gql(serve.url, FOR_YOU, variables, { authorization: key });
      expect(status).toBe(200);
      expect(body.errors?.[0]?.extensions?.code, JSON.stringify(variables).slice(0, 80)).toBe('BAD_USER_INPUT');
      expect(JSON.stringify(body)).not.toContain('HHHH');
    }
    for (const query of ['count=3', `sessionId=${huge}`, `sessionId=${SESSION}&count=51`, `sessionId=a&sessionId=b`, `userId=${USER}&minPrice=-1`]) {
      const answer = await rest(query);
      expect(answer.status, query.slice(0, 40)).toBe(400);
      expect(answer.text).not.toContain('HHHH');
    }
    // without a key: refused
    expect((await fetch(`${serve.url}/v1/foryou?sessionId=${SESSION}`)).status).toBe(403);
    expect((await gql(serve.url, FOR_YOU, { s: SESSION })).body.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
  });

  it('the shopper\'s ids never reach the logs or the metrics', async () => {
    const metrics = await (await fetch(`${serve.url}/metrics`)).text();
    expect(metrics).toContain('/v1/foryou');
    for (const text of [serve.stdout(), serve.stderr(), metrics]) {
      expect(text).not.toContain(SESSION);
      expect(text).not.toContain(USER);
      expect(text).not.toContain('PRIVATE');
    }
  });
});
