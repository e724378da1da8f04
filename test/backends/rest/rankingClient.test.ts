import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ServerResponse } from 'node:http';
import { createRestBackend } from '../../../src/backends/rest/index.js';
import type { RestBackend } from '../../../src/backends/rest/index.js';
import { itemRecord, sendJson, failure, startServer } from '../../rest/helpers.js';
import type { RecordedRequest, TestServer } from '../../rest/helpers.js';

// REST mode's trending and popular: forwarded to the upstream's twins, and an upstream without them named as such.

let answer: (req: RecordedRequest, res: ServerResponse) => void;
let upstream: TestServer;
let backend: RestBackend;

beforeEach(async () => {
  upstream = await startServer((req, res) => answer(req, res));
  backend = createRestBackend({
    apiKeyServiceUrl: 'http://127.0.0.1:9', recsServiceUrl: upstream.url, recsApiKey: 'gateway+key/==',
    retryBaseDelayMs: 1, retryMaxDelayMs: 5,
  });
});
afterEach(async () => {
  await backend.close();
  await upstream.close();
});

const asked = (i = 0): URL => new URL(upstream.requests[i]?.url ?? '', 'http://x');

describe('trending and popular in REST mode', () => {
  it('forward category, kind and first once each, with the gateway key; records come with the list', async () => {
    answer = (_req, res) => sendJson(res, 200, [itemRecord(4), itemRecord(2)]);
    const trending = await backend.recs.trending!('Home/Lamps & more', 2);
    expect(asked().pathname).toBe('/v1/trending');
    expect([...asked().searchParams]).toEqual([['apiKey', 'gateway+key/=='], ['category', 'Home/Lamps & more'], ['first', '2']]);
    expect(trending.entries).toEqual([{ itemId: 4, score: null }, { itemId: 2, score: null }]);
    expect(trending.items!.map((i) => i.itemId)).toEqual([4, 2]);
    await backend.recs.popular!('POST_BROWSE', null, 10);
    expect(asked(1).pathname).toBe('/v1/popular');
    expect([...asked(1).searchParams]).toEqual([['apiKey', 'gateway+key/=='], ['kind', 'POST_BROWSE'], ['first', '10']]);
  });

  it('an empty array is an empty list', async () => {
    answer = (_req, res) => sendJson(res, 200, []);
    expect(await backend.recs.popular!('NEXT_BEST_PRODUCT', null, 5)).toEqual({ entries: [], items: [] });
  });

  it('an upstream answering 404 for them lacks them: UPSTREAM_REJECTED saying so', async () => {
    answer = (_req, res) => sendJson(res, 404, { errors: [{ code: 404, message: 'Not Found' }] });
    for (const call of [backend.recs.trending!(null, 10), backend.recs.popular!('POST_BROWSE', 'Home', 10)]) {
      const error = await failure(call);
      expect(error.code).toBe('UPSTREAM_REJECTED');
      expect(error.message).toMatch(/lacks \/v1\/(trending|popular)/);
    }
  });

  it('first out of 1..50 is refused before any request', async () => {
    answer = (_req, res) => sendJson(res, 200, []);
    for (const first of [0, 51, 1.5]) expect((await failure(backend.recs.trending!(null, first))).code).toBe('BAD_USER_INPUT');
    expect(upstream.requests).toHaveLength(0);
  });
});
