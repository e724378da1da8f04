import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { match } from '../helpers/matchers.js';
import { parseItemRecord } from '../../src/model/itemRecord.js';
import { upstreamRejected, upstreamUnavailable } from '../../src/errors.js';
import type { RecsService } from '../../src/ports/backend.js';
import { FakeKeyService, FakeRecsService, itemRecord, mountRest } from './helpers.js';
import type { TestServer } from './helpers.js';

let keys: FakeKeyService;
let recs: FakeRecsService;
let server: TestServer;
let apiKey: string;
const INACTIVE = { errors: [{ code: 403, message: 'Account Inactive' }] };
const INVALID = { errors: [{ code: 4002, message: 'Invalid itemId' }] };

beforeAll(async () => {
  keys = new FakeKeyService();
  recs = new FakeRecsService(parseItemRecord);
  server = await mountRest(keys, recs);
  const alice = await keys.authenticate(keys.basic('alice'));
  apiKey = (await keys.createKey(alice, {})).key;
});
afterAll(() => server.close());

async function get(path: string, query: Record<string, string> | string = {}, base = server.url) {
  const qs = typeof query === 'string' ? query : new URLSearchParams(query).toString();
  const res = await fetch(`${base}${path}${qs ? `?${qs}` : ''}`);
  return { status: res.status, headers: res.headers, body: JSON.parse(await res.text()) as unknown };
}

describe('/v1/postbrowse and /v1/nbp', () => {
  it('answers full item records, at most 10, most relevant first', async () => {
    const res = await get('/v1/postbrowse', { apiKey, itemId: '1' });
    expect(res.status).toBe(200);
    const items = res.body as Record<string, unknown>[];
    expect(items.map((i) => i.itemId)).toEqual([2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    // the records as upstream serves them: rating as text, upc keeps its zeros, attributes an object
    expect(items[1]).toEqual(itemRecord(3));
    expect(items[1]?.customerRating).toBe('4.627');
    const nbp = await get('/v1/nbp', { apiKey, itemId: '1' });
    expect((nbp.body as { itemId: number }[]).map((i) => i.itemId)).toEqual([13, 12, 11, 10, 9, 8, 7, 6, 5, 4]);
  });

  it('answers nothing-to-recommend with a 200 and error 4022', async () => {
    const res = await get('/v1/nbp', { apiKey, itemId: '20' });
    expect(res).toMatchObject({ status: 200, body: { errors: [{ code: 4022, message: 'No recommendations found for item 20' }] } });
  });

  it('answers an unknown item with 400 and error 4002', async () => {
    const res = await get('/v1/postbrowse', { apiKey, itemId: '999999' });
    expect(res).toMatchObject({ status: 400, body: INVALID });
  });

  it.each([
    ['missing', {}],
    ['empty', { itemId: '' }],
    ['not a number', { itemId: 'abc' }],
    ['negative', { itemId: '-5' }],
    ['an injection', { itemId: '1&apiKey=evil' }],
    ['beyond 2^53', { itemId: '99999999999999999' }],
  ])('answers a %s itemId with 400 and error 4000', async (_label, query: Record<string, string>) => {
    const res = await get('/v1/nbp', { apiKey, ...query });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ errors: [{ code: 4000, message: match.stringMatching(/itemId/) }] });
  });

  it('refuses a repeated itemId rather than guess which one was meant', async () => {
    const res = await get('/v1/nbp', `apiKey=${encodeURIComponent(apiKey)}&itemId=1&itemId=2`);
    expect(res).toMatchObject({ status: 400, body: { errors: [{ code: 4000 }] } });
  });

  it('answers a missing, unknown, malformed or repeated apiKey with 403 Account Inactive', async () => {
    const cases = [
      'itemId=1',
      'itemId=1&apiKey=AAECAwQFBgcICQoLDA0ODw',
      'itemId=1&apiKey=',
      `itemId=1&apiKey=${encodeURIComponent(keys.basic('alice'))}`,
      `itemId=1&apiKey=${encodeURIComponent(apiKey)}&apiKey=${encodeURIComponent(apiKey)}`,
    ];
    for (const query of cases) {
      expect(await get('/v1/postbrowse', query)).toMatchObject({ status: 403, body: INACTIVE });
    }
  });

  it('answers a deleted key with 403 Account Inactive', async () => {
    const alice = await keys.authenticate(keys.basic('alice'));
    const temp = await keys.createKey(alice, { name: 'temp-key' });
    expect((await get('/v1/nbp', { apiKey: temp.key, itemId: '21' })).status).toBe(200);
    await keys.deleteKey(alice, temp.id);
    expect(await get('/v1/nbp', { apiKey: temp.key, itemId: '21' })).toMatchObject({ status: 403, body: INACTIVE });
  });

  it('answers another method with 405 and Allow: GET', async () => {
    const res = await fetch(`${server.url}/v1/nbp?apiKey=${apiKey}&itemId=1`, { method: 'POST' });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET');
    await res.text();
  });
});

describe('/v1/items', () => {
  it('answers one record, or 400/4002 for an unknown or malformed id', async () => {
    const one = await get('/v1/items/3', { apiKey });
    expect(one).toMatchObject({ status: 200, body: itemRecord(3) });
    expect(await get('/v1/items/4000', { apiKey })).toMatchObject({ status: 400, body: INVALID });
    expect(await get('/v1/items/abc', { apiKey })).toMatchObject({ status: 400, body: INVALID });
  });

  it('answers {items} of the found ones, in the order asked', async () => {
    const res = await get('/v1/items', { apiKey, ids: '5,999,2,5' });
    expect(res.status).toBe(200);
    expect((res.body as { items: { itemId: number }[] }).items.map((i) => i.itemId)).toEqual([5, 2]);
  });

  it('refuses more than 20 ids, and ids that are not numbers', async () => {
    const ids = Array.from({ length: 21 }, (_, i) => i + 1).join(',');
    expect(await get('/v1/items', { apiKey, ids })).toMatchObject({ status: 400, body: { errors: [{ code: 4000 }] } });
    expect(await get('/v1/items', { apiKey, ids: '1,x' })).toMatchObject({ status: 400, body: { errors: [{ code: 4000 }] } });
    expect(await get('/v1/items', { apiKey })).toMatchObject({ status: 400, body: { errors: [{ code: 4000 }] } });
  });
});

describe('failures of the service behind', () => {
  it('maps UPSTREAM_UNAVAILABLE to 503, UPSTREAM_REJECTED to 502, and a bug to a bare 500', async () => {
    const failing = (error: unknown): RecsService => ({
      getItems: () => Promise.reject(error),
      recommend: () => Promise.reject(error),
    });
    const cases: [unknown, number][] = [
      [upstreamUnavailable('recommendations', 'HTTP 503'), 503],
      [upstreamRejected('recommendations', 'key refused'), 502],
      [new TypeError('secret internals at /srv/app.js:12'), 500],
    ];
    for (const [error, status] of cases) {
      const broken = await mountRest(keys, failing(error));
      try {
        const res = await get('/v1/nbp', { apiKey, itemId: '1' }, broken.url);
        expect(res.status).toBe(status);
        expect(res.body).toEqual({ errors: [{ code: status, message: match.any(String) }] });
        expect(JSON.stringify(res.body)).not.toMatch(/secret|app\.js/);
      } finally {
        await broken.close();
      }
    }
  });
});
