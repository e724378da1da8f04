import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ServerResponse } from 'node:http';
import { createRestBackend } from '../../../src/backends/rest/index.js';
import type { RestBackend } from '../../../src/backends/rest/index.js';
import type { ListCountsModel } from '../../../src/ports/attribution.js';
import { sendJson, startServer } from '../../rest/helpers.js';
import type { RecordedRequest, TestServer } from '../../rest/helpers.js';

// REST mode's impressions: a front's ListCounter batches, sent to the upstream's POST /v1/stats/impressions
// with the front's key; what the upstream's answer means for the counts the front holds.

let answer: (req: RecordedRequest, res: ServerResponse) => void;
let upstream: TestServer;
let backend: RestBackend;

beforeEach(async () => {
  upstream = await startServer((req, res) => answer(req, res));
  backend = createRestBackend({ apiKeyServiceUrl: 'http://127.0.0.1:9', recsServiceUrl: upstream.url, recsApiKey: 'gateway-key' });
});
afterEach(async () => {
  await backend.close();
  await upstream.close();
});

const row = (hour: number, impressions: number, clicks = 0): ListCountsModel => ({ hour, kind: 'FOR_YOU', variant: 'B', impressions, clicks, purchases: 0 });

describe('a front\'s impressions in REST mode', () => {
  it('sends impressions only, with the front\'s key as a bearer, and nothing when there are none', async () => {
    answer = (_req, res) => sendJson(res, 200, { taken: 1 });
    await backend.listCountSink!.addListCounts([row(10, 3, 2), row(11, 0, 4)]);
    expect(upstream.requests).toHaveLength(1);
    const [sent] = upstream.requests;
    expect([sent!.method, sent!.url, sent!.headers.authorization]).toEqual(['POST', '/v1/stats/impressions', 'Bearer gateway-key']);
    expect(JSON.parse(sent!.body)).toEqual([{ kind: 'FOR_YOU', variant: 'B', hour: 10, impressions: 3 }]);
    await backend.listCountSink!.addListCounts([row(12, 0, 1)]);
    expect(upstream.requests).toHaveLength(1);
  });

  it('rejects on 401, 403, 429 and 5xx, so the counter keeps the counts; a 400 is taken as final', async () => {
    for (const status of [401, 403, 429, 503]) {
      answer = (_req, res) => sendJson(res, status, { errors: [{ code: status, message: 'no' }] });
      await expect(backend.listCountSink!.addListCounts([row(10, 1)]), String(status)).rejects.toMatchObject({ code: 'UPSTREAM_UNAVAILABLE' });
    }
    answer = (_req, res) => sendJson(res, 400, { errors: [{ code: 4000, message: 'impressions[0].hour: no' }] });
    await expect(backend.listCountSink!.addListCounts([row(10, 1)])).resolves.toBeUndefined();
  });

  it('an upstream without the route (404) is sent nothing more', async () => {
    answer = (_req, res) => sendJson(res, 404, { errors: [{ code: 404, message: 'Not Found' }] });
    await backend.listCountSink!.addListCounts([row(10, 1)]);
    await backend.listCountSink!.addListCounts([row(10, 1)]);
    expect(upstream.requests).toHaveLength(1);
  });

  it('more rows than one call takes: the newest hours are sent, within the bound', async () => {
    answer = (_req, res) => sendJson(res, 200, { taken: 1000 });
    await backend.listCountSink!.addListCounts(Array.from({ length: 1200 }, (_, i) => row(i, 1)));
    const sent = JSON.parse(upstream.requests[0]!.body) as { hour: number }[];
    expect(sent).toHaveLength(1000);
    expect(Math.min(...sent.map((r) => r.hour))).toBe(200);
  });
});
