import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuthorization } from '../../src/auth/authorization.js';
import { codeOf, embeddedWithUsers, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { storeKinds } from '../helpers/stores.js';

/**
 * Numbers a client sends are read as the interfaces document them: a JSON number where a number is
 * documented; where a string form is (an id in a path or query, an ItemId, customerRating's
 * decimal text) its plain digits only. A probe's `"salePrice": "0x10"` on PUT /v1/items was
 * stored as 16 (Number() reads hex, exponents, spaces and a leading +); `ids=%2012` looked up 12.
 */
const root = basicAuthorization('root', 'root-password');
const alice = basicAuthorization('alice', 'alice-password');
const sqlite = storeKinds.find((kind) => kind.name === 'sqlite')!;
const MAX = Number.MAX_SAFE_INTEGER;
/** Text Number() reads as a number that no documented form is; then text no form reads at all. */
const LOOSE_TEXT = ['0x10', '1e3', ' 12', '+5', '12 ', '0b11', '.5', 'Infinity'];
const NOT_NUMBERS = ['', '12abc'];
const WRONG_TYPE = 'has the wrong type for an item record (recommendations.md)';

interface Answer {
  status: number;
  body: unknown;
}

describe('numbers sent by clients are read strictly', () => {
  let gw: TestGateway;
  let apiKey: string;
  let dispose: () => Promise<void>;

  beforeAll(async () => {
    const opened = await sqlite.open();
    dispose = opened.dispose;
    gw = await startTestGateway(await embeddedWithUsers(opened.store));
    apiKey = ((await call('POST', '/api/v1/apikey', alice, {})).body as { key: string }).key;
  }, 30_000);
  afterAll(async () => {
    await gw?.stop().catch(() => undefined);
    await dispose?.();
  });

  async function call(method: string, path: string, auth?: string, body?: unknown): Promise<Answer> {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (auth !== undefined) headers.authorization = auth;
    const response = await fetch(`${gw.url}${path}`, { method, headers, body: body === undefined ? null : JSON.stringify(body) });
    return { status: response.status, body: JSON.parse(await response.text()) as unknown };
  }
  const refusal = (message: string) => ({ status: 400, body: { errors: [{ code: 4000, message }] } });
  const lookup = (id: number | string) => call('GET', `/v1/items/${id}?apiKey=${encodeURIComponent(apiKey)}`);
  const get = (path: string, query: Record<string, string>) => call('GET', `${path}?${new URLSearchParams({ ...query, apiKey }).toString()}`);

  describe('PUT /v1/items', () => {
    const STORED = 99_000_301;
    const FRESH = 99_000_302;

    it('serves back a small customerRating as decimal text, which it takes again (1e-7 it refused)', async () => {
      const ROUND = 99_000_303;
      for (const rating of ['0.0000001', '0.000000015', '4.627']) {
        expect(await call('PUT', '/v1/items', root, [{ itemId: ROUND, name: 'Round Trip', customerRating: rating }])).toMatchObject({ status: 200 });
        const served = await lookup(ROUND);
        expect((served.body as { customerRating?: unknown }).customerRating).toBe(rating);
        expect(await call('PUT', '/v1/items', root, [served.body])).toMatchObject({ status: 200, body: { upserted: 1 } });
      }
    });
    const before = { itemId: STORED, name: 'Strict Stand', salePrice: 5, msrp: 7, customerRating: '4.5', numReviews: 3, bestMarketplacePrice: { price: 6 } };

    beforeAll(async () => {
      expect(await call('PUT', '/v1/items', root, [before])).toMatchObject({ status: 200, body: { upserted: 1 } });
    });

    /** Sends `fields` on the stored item's record, after a valid new record; expects `message`, and neither record changed. */
    async function refused(fields: Record<string, unknown>, message: string): Promise<void> {
      const body = [{ itemId: FRESH, name: 'First of the call' }, { ...before, ...fields }];
      expect(await call('PUT', '/v1/items', root, body), JSON.stringify(fields)).toMatchObject(refusal(message));
    }

    it('a number field sent as text (0x10, 1e3, " 12", +5, "12"): 400 naming it and asking for a JSON number; nothing stored', async () => {
      const amount = 'must be from 0 to 1000000000, sent as a JSON number, not text';
      const reviews = `must be a whole number from 0 to ${MAX}, sent as a JSON number, not text`;
      for (const text of [...LOOSE_TEXT, '12', '12.5']) {
        await refused({ salePrice: text }, `items[1].salePrice: ${amount}`);
        await refused({ msrp: text }, `items[1].msrp: ${amount}`);
        await refused({ standardShipRate: text }, `items[1].standardShipRate: ${amount}`);
        await refused({ numReviews: text }, `items[1].numReviews: ${reviews}`);
        await refused({ bestMarketplacePrice: { price: text } }, `items[1].bestMarketplacePrice.price: ${amount}`);
      }
      for (const text of NOT_NUMBERS) {
        await refused({ salePrice: text }, `items[1].salePrice: ${WRONG_TYPE}`);
        await refused({ numReviews: text }, `items[1].numReviews: ${WRONG_TYPE}`);
      }
      // the first record of each call was not stored, and the stored one is as it was (the probe's 0x10 became 16)
      expect((await lookup(FRESH)).status).toBe(400);
      expect((await lookup(STORED)).body).toEqual(before);
    }, 30_000);

    it('customerRating: a JSON number or its decimal text; any other text 400 saying the forms it takes, nothing stored', async () => {
      const rating = 'must be from 0 to 5, sent as a JSON number, or the decimal as text: ASCII digits 0-9 with an optional fraction ("4.627")';
      // the probe: "", fullwidth and Arabic-Indic digits were said to have "the wrong type"
      const unicodeDigits = ['３.５', '４', '٣٫٥', '٣.٥', '۴.۵', '४.५'];
      for (const text of [...LOOSE_TEXT, ...NOT_NUMBERS, ...unicodeDigits, ' ', '-1', '4.', '4,5']) {
        await refused({ customerRating: text }, `items[1].customerRating: ${rating}`);
      }
      // a value of no number's type at all is still the wrong type
      await refused({ customerRating: true }, `items[1].customerRating: ${WRONG_TYPE}`);
      expect((await lookup(FRESH)).status).toBe(400);
      expect((await lookup(STORED)).body).toEqual(before);
    }, 30_000);

    it('whole numbers: 1.5 and 2^53 refused where an integer is; ids as text only as their digits', async () => {
      const ids = `must be a whole number from 1 to ${MAX}`;
      const cases: [Record<string, unknown>, string][] = [
        [{ numReviews: 1.5 }, `items[1].numReviews: must be a whole number from 0 to ${MAX}`],
        [{ numReviews: 2 ** 53 }, `items[1].numReviews: must be a whole number from 0 to ${MAX}`],
        [{ parentItemId: 1.5 }, `items[1].parentItemId: ${ids}`],
        [{ parentItemId: 2 ** 53 }, `items[1].parentItemId: ${ids}`],
        [{ variants: [STORED, 2 ** 53] }, `items[1].variants[1]: ${ids}`],
        [{ upc: 1.5 }, `items[1].upc: a number here must be a whole number from 0 to ${MAX}, kept as its digits: send any other code as a string`],
        [{ upc: 2 ** 53 }, `items[1].upc: a number here must be a whole number from 0 to ${MAX}, kept as its digits: send any other code as a string`],
      ];
      for (const text of LOOSE_TEXT) {
        cases.push([{ parentItemId: text }, `items[1].parentItemId: ${Number.isNaN(Number(text)) ? WRONG_TYPE : ids}`]);
        cases.push([{ variants: [text] }, `items[1].variants[0]: ${Number.isNaN(Number(text)) ? WRONG_TYPE : ids}`]);
      }
      for (const [fields, message] of cases) await refused(fields, message);
      for (const itemId of [...LOOSE_TEXT, ...NOT_NUMBERS, 1.5, 2 ** 53]) {
        const answer = await call('PUT', '/v1/items', root, [{ itemId: FRESH, name: 'First of the call' }, { itemId, name: 'Bad id' }]);
        expect(answer, JSON.stringify(itemId)).toMatchObject(refusal(`items[1].itemId: ${ids}`));
      }
      expect((await lookup(FRESH)).status).toBe(400);
      expect((await lookup(STORED)).body).toEqual(before);
    }, 30_000);

    it('valid input is stored as before: JSON numbers, customerRating as text or number, ids as numbers or digits', async () => {
      const record = {
        itemId: String(FRESH + 1), name: 'Strict Dock', salePrice: 12.5, msrp: 0, customerRating: '4.627', numReviews: 12,
        parentItemId: String(STORED), variants: [STORED, String(FRESH + 1)], upc: 12345, bestMarketplacePrice: { price: 11 },
      };
      const other = { itemId: FRESH + 2, name: 'Strict Lamp', customerRating: 3.5, numReviews: 0, standardShipRate: 4.99 };
      expect(await call('PUT', '/v1/items', root, [record, other])).toMatchObject({ status: 200, body: { upserted: 2 } });
      expect((await lookup(FRESH + 1)).body).toEqual({
        ...record, itemId: FRESH + 1, parentItemId: STORED, variants: [STORED, FRESH + 1], upc: '12345',
      });
      expect((await lookup(FRESH + 2)).body).toEqual({ ...other, customerRating: '3.5' });
    }, 30_000);
  });

  describe('POST /v1/events', () => {
    const A = 31000124;

    it('itemId and time: loose text, 1.5 and 2^53 refused naming the event and field; nothing stored', async () => {
      const view = (eventId: string, fields: Record<string, unknown> = {}) => ({ kind: 'view', itemId: A, sessionId: 'strict', eventId, ...fields });
      const itemIds = `must be a whole number from 1 to ${MAX}`;
      const times = 'must be an ISO 8601 date with an offset (2026-11-23T06:40:00Z or +01:00) or whole milliseconds since 1970';
      for (const value of [...LOOSE_TEXT, ...NOT_NUMBERS, 1.5, 2 ** 53]) {
        const first = await call('POST', '/v1/events', root, [view('strict-1'), view('strict-2', { itemId: value })]);
        expect(first, JSON.stringify(value)).toMatchObject(refusal(`events[1].itemId: ${itemIds}`));
        const second = await call('POST', '/v1/events', root, [view('strict-1'), view('strict-2', { time: value })]);
        expect(second, JSON.stringify(value)).toMatchObject(refusal(`events[1].time: ${times}`));
      }
      // nothing of the refused calls was stored: their eventIds are still free; an id's digits are taken
      const good = await call('POST', '/v1/events', root, [view('strict-1'), view('strict-2', { itemId: String(A), time: Date.now() - 1000 })]);
      expect(good).toEqual({ status: 200, body: { accepted: 2, duplicates: 0, itemsWithoutRecord: 0 } });
    }, 30_000);
  });

  describe('ids in the query string and the path', () => {
    const KNOWN = 31000005;

    it('GET /v1/items?ids=: only digits, spaces next to a comma as documented; " 12", "12 ", a tab, hex, exponents: 400', async () => {
      const message = `ids must be comma-separated item ids, each a whole number from 1 to ${MAX}`;
      for (const ids of [...LOOSE_TEXT, '12abc', String(2 ** 53), ` ${KNOWN}`, `${KNOWN} `, `${KNOWN},\t${KNOWN}`, `\n${KNOWN}`, `${KNOWN},`]) {
        expect(await get('/v1/items', { ids }), JSON.stringify(ids)).toMatchObject(refusal(message));
      }
      expect(await get('/v1/items', { ids: '' })).toMatchObject(refusal('ids is required'));
      for (const ids of [`${KNOWN}`, `${KNOWN},31000007`, `${KNOWN} , 31000007`, `${KNOWN},  31000007`, `00${KNOWN}`]) {
        const answer = await get('/v1/items', { ids });
        expect(answer.status, ids).toBe(200);
        expect((answer.body as { items: { itemId: number }[] }).items[0]!.itemId).toBe(KNOWN);
      }
    }, 30_000);

    it('GET /v1/nbp?itemId= and /v1/items/{itemId}: only digits', async () => {
      const message = `itemId must be a whole number from 1 to ${MAX}`;
      for (const itemId of [...LOOSE_TEXT, ...NOT_NUMBERS, '1.5', String(2 ** 53)]) {
        expect(await get('/v1/nbp', { itemId }), JSON.stringify(itemId)).toMatchObject(refusal(message));
        // an empty segment is /v1/items/, the lookup by ids
        if (itemId === '') continue;
        expect(await lookup(encodeURIComponent(itemId)), JSON.stringify(itemId)).toMatchObject({ status: 400, body: { errors: [{ code: 4002, message: 'Invalid itemId' }] } });
      }
      expect((await get('/v1/nbp', { itemId: String(KNOWN) })).status).toBe(200);
      expect(await lookup(KNOWN)).toMatchObject({ status: 200, body: { itemId: KNOWN } });
    }, 30_000);

    // the probe: thirty leading zeros made more than 16 digits, refused as out of range
    it('leading zeros, however many, are the same id: ids=, itemId=, the path, PUT and POST alike; 2^53 behind them still refused', async () => {
      const padded = `${'0'.repeat(30)}${KNOWN}`;
      const items = await get('/v1/items', { ids: `${padded}, ${'0'.repeat(40)}31000007` });
      expect(items.status).toBe(200);
      expect((items.body as { items: { itemId: number }[] }).items.map((item) => item.itemId)).toEqual([KNOWN, 31000007]);
      expect(await lookup(padded)).toMatchObject({ status: 200, body: { itemId: KNOWN } });
      expect((await get('/v1/nbp', { itemId: padded })).status).toBe(200);
      expect(await get('/v1/nbp', { itemId: String(KNOWN) })).toEqual(await get('/v1/nbp', { itemId: padded }));

      const STORED = 99_000_311;
      const put = await call('PUT', '/v1/items', root, [{ itemId: `${'0'.repeat(30)}${STORED}`, name: 'Padded Shelf', parentItemId: padded, variants: [padded] }]);
      expect(put).toMatchObject({ status: 200, body: { upserted: 1 } });
      expect((await lookup(STORED)).body).toEqual({ itemId: STORED, name: 'Padded Shelf', parentItemId: KNOWN, variants: [KNOWN] });
      const view = { kind: 'view', itemId: padded, sessionId: 'padded', eventId: 'padded-1' };
      expect(await call('POST', '/v1/events', root, [view])).toEqual({ status: 200, body: { accepted: 1, duplicates: 0, itemsWithoutRecord: 0 } });

      // zeros change no value: past 2^53 − 1 and 0 itself stay refused, with the range
      for (const ids of [`${'0'.repeat(30)}${2 ** 53}`, '0'.repeat(30)]) {
        expect(await get('/v1/items', { ids }), ids).toMatchObject(refusal(`ids must be comma-separated item ids, each a whole number from 1 to ${MAX}`));
        expect(await get('/v1/nbp', { itemId: ids }), ids).toMatchObject(refusal(`itemId must be a whole number from 1 to ${MAX}`));
      }
    }, 30_000);
  });

  describe('GraphQL ItemId', () => {
    it('a variable of loose text, 1.5 or 2^53: BAD_USER_INPUT saying what ItemId takes; digits and numbers taken', async () => {
      const query = 'query($id: ItemId!) { item(itemId: $id) { itemId } }';
      for (const id of [...LOOSE_TEXT, ...NOT_NUMBERS, 1.5, 2 ** 53]) {
        const answer = await gw.gql(query, { id }, { authorization: root });
        expect(codeOf(answer), JSON.stringify(id)).toBe('BAD_USER_INPUT');
        expect(answer.body.errors?.[0]?.message).toContain(`ItemId must be a whole number from 1 to ${MAX} (2^53 − 1), or a string of its digits; got ${JSON.stringify(id)}`);
      }
      for (const id of [31000005, '31000005', `${'0'.repeat(30)}31000005`]) {
        expect((await gw.gql(query, { id }, { authorization: root })).body).toEqual({ data: { item: { itemId: 31000005 } } });
      }
    }, 30_000);

    it('a string of digits with leading zeros, in a variable or written in the query, is the same id as in REST', async () => {
      const padded = `${'0'.repeat(30)}31000005`;
      const literal = await gw.gql(`{ item(itemId: "${padded}") { itemId } }`, {}, { authorization: root });
      expect(literal.body).toEqual({ data: { item: { itemId: 31000005 } } });
      const query = 'query($id: ItemId!) { item(itemId: $id) { itemId } }';
      for (const id of [`${'0'.repeat(30)}${2 ** 53}`, '0'.repeat(30)]) {
        const answer = await gw.gql(query, { id }, { authorization: root });
        expect(codeOf(answer), id).toBe('BAD_USER_INPUT');
        expect(answer.body.errors?.[0]?.message).toContain(`ItemId must be a whole number from 1 to ${MAX} (2^53 − 1), or a string of its digits`);
      }
    }, 30_000);
  });
});
