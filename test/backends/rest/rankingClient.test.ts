import { describe, expect, it } from 'vitest';
import { itemRecord, sendJson, failure, useFakeRecsUpstream } from '../../rest/helpers.js';

// REST mode's trending and popular: forwarded to the upstream's twins, and an upstream without them named as such.

const fake = useFakeRecsUpstream();

describe('trending and popular in REST mode', () => {
  it('forward category, kind and first once each, with the gateway key; records come with the list', async () => {
    fake.answer = (_req, res) => sendJson(res, 200, [itemRecord(4), itemRecord(2)]);
    const trending = await fake.backend.recs.trending!('Home/Lamps & more', 2);
    expect(fake.asked().pathname).toBe('/v1/trending');
    expect([...fake.asked().searchParams]).toEqual([['apiKey', 'gateway+key/=='], ['category', 'Home/Lamps & more'], ['first', '2']]);
    expect(trending.entries).toEqual([{ itemId: 4, score: null }, { itemId: 2, score: null }]);
    expect(trending.items!.map((i) => i.itemId)).toEqual([4, 2]);
    await fake.backend.recs.popular!('POST_BROWSE', null, 10);
    expect(fake.asked(1).pathname).toBe('/v1/popular');
    expect([...fake.asked(1).searchParams]).toEqual([['apiKey', 'gateway+key/=='], ['kind', 'POST_BROWSE'], ['first', '10']]);
  });

  it('an empty array is an empty list', async () => {
    fake.answer = (_req, res) => sendJson(res, 200, []);
    expect(await fake.backend.recs.popular!('NEXT_BEST_PRODUCT', null, 5)).toEqual({ entries: [], items: [] });
  });

  it('an upstream answering 404 for them lacks them: UPSTREAM_REJECTED saying so', async () => {
    fake.answer = (_req, res) => sendJson(res, 404, { errors: [{ code: 404, message: 'Not Found' }] });
    for (const call of [fake.backend.recs.trending!(null, 10), fake.backend.recs.popular!('POST_BROWSE', 'Home', 10)]) {
      const error = await failure(call);
      expect(error.code).toBe('UPSTREAM_REJECTED');
      expect(error.message).toMatch(/lacks \/v1\/(trending|popular)/);
    }
  });

  it('first out of 1..50 is refused before any request', async () => {
    fake.answer = (_req, res) => sendJson(res, 200, []);
    for (const first of [0, 51, 1.5]) expect((await failure(fake.backend.recs.trending!(null, first))).code).toBe('BAD_USER_INPUT');
    expect(fake.upstream.requests).toHaveLength(0);
  });
});
