import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ServerResponse } from 'node:http';
import { createRestBackend } from '../../../src/backends/rest/index.js';
import type { RestBackend } from '../../../src/backends/rest/index.js';
import { toRecommendationFilter } from '../../../src/model/recommendationFilter.js';
import { itemRecord, sendJson, failure, startServer } from '../../rest/helpers.js';
import type { RecordedRequest, TestServer } from '../../rest/helpers.js';

// REST mode's recommendedForYou: forwarded to the upstream's /v1/foryou, its entries checked and filtered again, and
// an upstream without the route named as such.

let answer: (req: RecordedRequest, res: ServerResponse) => void;
let upstream: TestServer;
let backend: RestBackend;

beforeEach(async () => {
  upstream = await startServer((req, res) => answer(req, res));
  backend = createRestBackend({
    apiKeyServiceUrl: 'http://127.0.0.1:9', recsServiceUrl: upstream.url, recsApiKey: 'gateway-key',
    retryBaseDelayMs: 1, retryMaxDelayMs: 5,
  });
});
afterEach(async () => {
  await backend.close();
  await upstream.close();
});

const asked = (i = 0): URL => new URL(upstream.requests[i]?.url ?? '', 'http://x');

describe('recommendedForYou in REST mode', () => {
  it('forwards the shopper, count and filter; keeps the entries it can read, ranked again, passing the filter', async () => {
    answer = (_req, res) => sendJson(res, 200, {
      entries: [
        { rank: 1, itemId: 4, score: 0.75, source: 'CO_VIEW', because: 9 },
        { rank: 2, itemId: 'x' },
        { rank: 3, itemId: 2, score: null, source: 'SOMETHING NEW', because: null },
        { rank: 4, itemId: 7, score: null, source: 'POPULAR', because: null },
      ],
      items: [itemRecord(4), itemRecord(2), itemRecord(7)],
    });
    const list = await backend.recs.forYou!({ sessionId: 's 1&x', userId: null }, 3, {}, toRecommendationFilter({ excludeItemIds: [7] }));
    expect(asked().pathname).toBe('/v1/foryou');
    expect([...asked().searchParams]).toEqual([['apiKey', 'gateway-key'], ['sessionId', 's 1&x'], ['count', '3'], ['exclude', '7']]);
    expect(list.entries).toEqual([
      { rank: 1, itemId: 4, score: 0.75, source: 'CO_VIEW', because: 9, evidence: 0 },
      { rank: 2, itemId: 2, score: null, source: 'UPSTREAM', because: null, evidence: 0 },
    ]);
    expect(list.items!.map((i) => i.itemId)).toEqual([4, 2]);
  });

  it('an upstream answering 404 lacks the route: UPSTREAM_REJECTED saying so; a body of another shape is UPSTREAM_UNAVAILABLE', async () => {
    answer = (_req, res) => sendJson(res, 404, { errors: [{ code: 404, message: 'Not Found' }] });
    const error = await failure(backend.recs.forYou!({ sessionId: null, userId: 'u' }, 10));
    expect(error.code).toBe('UPSTREAM_REJECTED');
    expect(error.message).toMatch(/lacks \/v1\/foryou/);
    answer = (_req, res) => sendJson(res, 200, [itemRecord(4)]);
    expect((await failure(backend.recs.forYou!({ sessionId: 's', userId: null }, 10))).code).toBe('UPSTREAM_UNAVAILABLE');
  });

  it('count out of 1..50 is refused before any request', async () => {
    answer = (_req, res) => sendJson(res, 200, { entries: [], items: [] });
    for (const first of [0, 51]) expect((await failure(backend.recs.forYou!({ sessionId: 's', userId: null }, first))).code).toBe('BAD_USER_INPUT');
    expect(upstream.requests).toHaveLength(0);
  });
});
