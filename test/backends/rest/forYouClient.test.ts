import { describe, expect, it } from 'vitest';
import { toRecommendationFilter } from '../../../src/model/recommendationFilter.js';
import { itemRecord, sendJson, failure, useFakeRecsUpstream } from '../../rest/helpers.js';

// REST mode's recommendedForYou: forwarded to the upstream's /v1/foryou, its entries checked and filtered again, and
// an upstream without the route named as such.

const fake = useFakeRecsUpstream('gateway-key');

describe('recommendedForYou in REST mode', () => {
  it('forwards the shopper, count and filter; keeps the entries it can read, ranked again, passing the filter', async () => {
    fake.answer = (_req, res) => sendJson(res, 200, {
      entries: [
        { rank: 1, itemId: 4, score: 0.75, source: 'CO_VIEW', because: 9 },
        { rank: 2, itemId: 'x' },
        { rank: 3, itemId: 2, score: null, source: 'SOMETHING NEW', because: null },
        { rank: 4, itemId: 7, score: null, source: 'POPULAR', because: null },
      ],
      items: [itemRecord(4), itemRecord(2), itemRecord(7)],
    });
    const list = await fake.backend.recs.forYou!({ sessionId: 's 1&x', userId: null }, 3, {}, toRecommendationFilter({ excludeItemIds: [7] }));
    expect(fake.asked().pathname).toBe('/v1/foryou');
    expect([...fake.asked().searchParams]).toEqual([['apiKey', 'gateway-key'], ['sessionId', 's 1&x'], ['count', '3'], ['exclude', '7']]);
    expect(list.entries).toEqual([
      { rank: 1, itemId: 4, score: 0.75, source: 'CO_VIEW', because: 9, evidence: 0 },
      { rank: 2, itemId: 2, score: null, source: 'UPSTREAM', because: null, evidence: 0 },
    ]);
    expect(list.items!.map((i) => i.itemId)).toEqual([4, 2]);
  });

  it('an upstream answering 404 lacks the route: UPSTREAM_REJECTED saying so; a body of another shape is UPSTREAM_UNAVAILABLE', async () => {
    fake.answer = (_req, res) => sendJson(res, 404, { errors: [{ code: 404, message: 'Not Found' }] });
    const error = await failure(fake.backend.recs.forYou!({ sessionId: null, userId: 'u' }, 10));
    expect(error.code).toBe('UPSTREAM_REJECTED');
    expect(error.message).toMatch(/lacks \/v1\/foryou/);
    fake.answer = (_req, res) => sendJson(res, 200, [itemRecord(4)]);
    expect((await failure(fake.backend.recs.forYou!({ sessionId: 's', userId: null }, 10))).code).toBe('UPSTREAM_UNAVAILABLE');
  });

  it('count out of 1..50 is refused before any request', async () => {
    fake.answer = (_req, res) => sendJson(res, 200, { entries: [], items: [] });
    for (const first of [0, 51]) expect((await failure(fake.backend.recs.forYou!({ sessionId: 's', userId: null }, first))).code).toBe('BAD_USER_INPUT');
    expect(fake.upstream.requests).toHaveLength(0);
  });
});
