import { describe, expect, it } from 'vitest';
import type { ServerResponse } from 'node:http';
import { itemRecord, sendJson, sendText, failure, useFakeRecsUpstream } from '../../rest/helpers.js';

const fake = useFakeRecsUpstream();

const records = (ids: number[]): Record<string, unknown>[] => ids.map((id) => itemRecord(id));

describe('recommend', () => {
  it('sends the gateway key, and the id, as exactly one query parameter each', async () => {
    fake.answer = (_req, res) => sendJson(res, 200, records([2, 3]));
    const list = await fake.backend.recs.recommend('POST_BROWSE', 1);
    const url = new URL(fake.upstream.requests[0]?.url ?? '', 'http://x');
    expect(url.pathname).toBe('/v1/postbrowse');
    expect(url.searchParams.getAll('apiKey')).toEqual(['gateway+key/==']);
    expect(url.searchParams.getAll('itemId')).toEqual(['1']);
    expect(list).toEqual({
      anchorId: 1, kind: 'POST_BROWSE',
      entries: [
        { rank: 1, itemId: 2, score: null, evidence: 0, source: 'UPSTREAM' },
        { rank: 2, itemId: 3, score: null, evidence: 0, source: 'UPSTREAM' },
      ],
      items: [expect.objectContaining({ itemId: 2 }), expect.objectContaining({ itemId: 3, customerRating: 4.627, upc: '000000000003' })],
    });
  });

  it.each(['1&apiKey=evil', '1', 0, -1, 1.5, 2 ** 53, Number.NaN])('rejects itemId %s before any request', async (bad) => {
    fake.answer = (_req, res) => sendJson(res, 200, []);
    const error = await failure(fake.backend.recs.recommend('NEXT_BEST_PRODUCT', bad as number));
    expect(error.code).toBe('BAD_USER_INPUT');
    expect(error.field).toBe('itemId');
    expect(fake.upstream.requests).toHaveLength(0);
  });

  it('wraps a single object where an array was expected', async () => {
    fake.answer = (_req, res) => sendJson(res, 200, itemRecord(7));
    const list = await fake.backend.recs.recommend('POST_BROWSE', 1);
    expect(list.entries.map((e) => e.itemId)).toEqual([7]);
  });

  it('keeps the first 10 of more, drops the anchor, duplicates and records that do not parse', async () => {
    fake.answer = (_req, res) =>
      sendJson(res, 200, [{ name: 'no id' }, itemRecord(1), ...records([2, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]), 'junk']);
    const list = await fake.backend.recs.recommend('NEXT_BEST_PRODUCT', 1);
    expect(list.entries.map((e) => e.itemId)).toEqual([2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    expect(list.entries.map((e) => e.rank)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(list.items).toHaveLength(10);
  });

  it('reads a 200 with error 4022 as an empty list', async () => {
    fake.answer = (_req, res) => sendJson(res, 200, { errors: [{ code: 4022, message: 'No recommendations found for item 1' }] });
    const list = await fake.backend.recs.recommend('NEXT_BEST_PRODUCT', 1);
    expect(list.entries).toEqual([]);
  });

  it('reads 4002 Invalid itemId as NOT_FOUND, with a 400 or inside a 200', async () => {
    fake.answer = (_req, res) => sendJson(res, 400, { errors: [{ code: 4002, message: 'Invalid itemId' }] });
    expect((await failure(fake.backend.recs.recommend('POST_BROWSE', 5))).code).toBe('NOT_FOUND');
    fake.answer = (_req, res) => sendJson(res, 200, { errors: [{ code: 4002, message: 'Invalid itemId' }] });
    expect((await failure(fake.backend.recs.recommend('POST_BROWSE', 5))).code).toBe('NOT_FOUND');
  });

  it('reads 403 Account Inactive, JSON or plain text, as the gateway key refused', async () => {
    for (const send of [
      (res: ServerResponse) => sendJson(res, 403, { errors: [{ code: 403, message: 'Account Inactive' }] }),
      (res: ServerResponse) => sendText(res, 403, 'Account Inactive'),
      (res: ServerResponse) => sendText(res, 403, '<h1>Developer Inactive</h1>'),
    ]) {
      fake.answer = (_req, res) => send(res);
      const error = await failure(fake.backend.recs.recommend('POST_BROWSE', 5));
      expect(error.code).toBe('UPSTREAM_REJECTED');
      expect(error.message).toContain('RECS_API_KEY');
    }
  });

  it('reads 5xx, an unreadable 200 and a wrong shape as UPSTREAM_UNAVAILABLE naming the service', async () => {
    for (const send of [
      (res: ServerResponse) => sendJson(res, 500, { errors: [{ code: 500, message: 'boom' }] }),
      (res: ServerResponse) => sendText(res, 200, '<html>maintenance</html>'),
      (res: ServerResponse) => sendJson(res, 200, 42),
    ]) {
      fake.answer = (_req, res) => send(res);
      const error = await failure(fake.backend.recs.recommend('POST_BROWSE', 5));
      expect(error.code).toBe('UPSTREAM_UNAVAILABLE');
      expect(error.message).toContain('recommendations');
    }
  });
});

describe('getItems', () => {
  it('splits ids into parallel calls of 20 and answers in the order asked, null for the missing', async () => {
    let inFlight = 0;
    let maxInFlight = 0;
    // Every answer is held until three calls are in flight at once, so that parallel calls are seen
    // to overlap however slow the machine; calls made one after another are released after 5 s,
    // and the count below then tells.
    const held: (() => void)[] = [];
    const releaseAll = (): void => {
      for (const release of held.splice(0)) release();
    };
    const fallback = setTimeout(releaseAll, 5000);
    fake.answer = (req, res) => {
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      const url = new URL(req.url, 'http://x');
      const ids = (url.searchParams.get('ids') ?? '').split(',').map(Number);
      // the upstream knows ids below 40 only
      held.push(() => {
        inFlight--;
        sendJson(res, 200, { items: records(ids.filter((id) => id < 40)) });
      });
      if (maxInFlight === 3) releaseAll();
    };
    const ids = Array.from({ length: 45 }, (_, i) => 45 - i);
    const items = await fake.backend.recs.getItems(ids);
    expect(items.map((item) => item?.itemId ?? null)).toEqual(ids.map((id) => (id < 40 ? id : null)));
    expect(fake.upstream.requests.map((r) => new URL(r.url, 'http://x').searchParams.get('ids')?.split(',').length)).toEqual([20, 20, 5]);
    expect(maxInFlight).toBe(3);
    for (const r of fake.upstream.requests) expect(new URL(r.url, 'http://x').searchParams.getAll('apiKey')).toEqual(['gateway+key/==']);
    clearTimeout(fallback);
  });

  it('asks for one id with /v1/items/{id} and reads 4002 as null', async () => {
    fake.answer = (req, res) =>
      req.url.startsWith('/v1/items/8?') ? sendJson(res, 200, itemRecord(8)) : sendJson(res, 400, { errors: [{ code: 4002, message: 'Invalid itemId' }] });
    expect((await fake.backend.recs.getItems([8]))[0]?.itemId).toBe(8);
    expect(await fake.backend.recs.getItems([9])).toEqual([null]);
  });

  it('when one unknown id fails a batch with 4002, asks for each id alone to keep the others', async () => {
    fake.answer = (req, res) => {
      if (req.url.startsWith('/v1/items?')) return sendJson(res, 400, { errors: [{ code: 4002, message: 'Invalid itemId' }] });
      const id = Number(/\/v1\/items\/(\d+)/.exec(req.url)?.[1]);
      return id === 666 ? sendJson(res, 400, { errors: [{ code: 4002, message: 'Invalid itemId' }] }) : sendJson(res, 200, itemRecord(id));
    };
    const items = await fake.backend.recs.getItems([1, 666, 3]);
    expect(items.map((item) => item?.itemId ?? null)).toEqual([1, null, 3]);
    expect(fake.upstream.requests).toHaveLength(4);
  });

  it('answers null for ids that cannot be items, without asking', async () => {
    fake.answer = (_req, res) => sendJson(res, 200, { items: [] });
    expect(await fake.backend.recs.getItems([0, -3, 1.5])).toEqual([null, null, null]);
    expect(fake.upstream.requests).toHaveLength(0);
  });
});
