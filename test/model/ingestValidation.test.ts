import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { basicAuthorization } from '../../src/auth/authorization.js';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { createEmbeddedBackend, EmbeddedIngest } from '../../src/backends/embedded/index.js';
import { addUser } from '../../src/backends/embedded/keys/users.js';
import { openEmbeddedRecs } from '../../src/backends/embedded/openRecs.js';
import { type EmbeddedRecs } from '../../src/backends/embedded/recs.js';
import type { Backend, EventInputModel, PrincipalModel } from '../../src/ports/backend.js';
import { parseItemRecord } from '../../src/model/itemRecord.js';
import { codeOf, startTestGateway, type GraphQLResponse, type TestGateway } from '../helpers/gateway.js';
import { storeKinds, TEST_COST } from '../helpers/stores.js';
import { withIngestInMemory } from '../helpers/memoryIngest.js';

// What the probe of the ingestion API found (event times without an offset or out of range, item
// texts without a cap, item ids without a bound), checked alike with the takeover on and off
// (PREPARED_OPERATIONS_MAX_DOCUMENTS=0), and on the REST twins, over real HTTP.

const root = basicAuthorization('root', 'root-password');
const RECORD = 'mutation Record($events: [EventInput!]!) { recordEvents(events: $events) { accepted } }';
const UPSERT = 'mutation Upsert($items: [ItemInput!]!) { upsertItems(items: $items) { upserted } }';
const KNOWN = 31000005;
/** Room for this many new items past the demo shop's (RECS_MAX_ITEMS for the test). */
const ROOM = 4;

describe('the ingestion API\'s checks on every path', () => {
  let prepared: TestGateway;
  let apollo: TestGateway;
  let recs: EmbeddedRecs;
  let backend: Backend;
  let dispose: () => Promise<void>;

  beforeAll(async () => {
    const opened = await storeKinds[0]!.open();
    dispose = opened.dispose;
    await addUser(opened.store, { username: 'root', password: 'root-password', isAdmin: true }, TEST_COST);
    recs = await openEmbeddedRecs({ dataDir: null });
    backend = withIngestInMemory(createEmbeddedBackend(opened.store, recs), recs, { maxItems: recs.itemCount + ROOM });
    const shared = Object.assign(Object.create(backend) as Backend, { close: () => Promise.resolve() });
    prepared = await startTestGateway(backend, { RESPONSE_CACHE_MAX_ENTRIES: '0' });
    apollo = await startTestGateway(shared, { RESPONSE_CACHE_MAX_ENTRIES: '0', PREPARED_OPERATIONS_MAX_DOCUMENTS: '0' });
  }, 30_000);
  afterAll(async () => {
    await apollo?.stop().catch(() => undefined);
    await prepared?.stop().catch(() => undefined);
    await dispose?.();
  });

  /** The same call on both GraphQL paths: the same status and body, returned once. */
  async function bothPaths(query: string, variables: Record<string, unknown>): Promise<GraphQLResponse> {
    const a = await prepared.gql(query, variables, { authorization: root });
    const b = await apollo.gql(query, variables, { authorization: root });
    expect([a.status, a.body], JSON.stringify(variables).slice(0, 80)).toEqual([b.status, b.body]);
    return a;
  }

  async function twin(method: 'POST' | 'PUT', path: string, body: unknown): Promise<{ status: number; message: string | undefined }> {
    const response = await fetch(`${prepared.url}${path}`, {
      method,
      headers: { authorization: root, 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(10_000),
    });
    const answer = (await response.json()) as { errors?: { message: string }[] };
    return { status: response.status, message: answer.errors?.[0]?.message };
  }

  it('refuses an operation holding recordEvents or upsertItems more than once, before anything runs, on every path', async () => {
    // the probe's request: aliases of recordEvents sharing one variable multiplied the per-call cap
    const events = Array.from({ length: 4 }, (_, i) => ({ kind: 'VIEW', itemId: 99800001 + (i % 2), sessionId: `alias-${i >> 1}` }));
    const items = [{ itemId: 99800003, name: 'Aliased' }];
    const aliased = 'mutation Twice($e: [EventInput!]!) { a: recordEvents(events: $e) { accepted } b: recordEvents(events: $e) { accepted } }';
    const viaFragment = 'mutation Twice($e: [EventInput!]!) { recordEvents(events: $e) { accepted } ...More } fragment More on Mutation { more: recordEvents(events: $e) { accepted } }';
    const upserts = 'mutation Twice($i: [ItemInput!]!) { a: upsertItems(items: $i) { upserted } b: upsertItems(items: $i) { upserted } }';
    const cases: [string, Record<string, unknown>, string][] = [
      [aliased, { e: events }, 'recordEvents'],
      [viaFragment, { e: events }, 'recordEvents'],
      [upserts, { i: items }, 'upsertItems'],
    ];
    const held = recs.itemCount;
    const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
    const manifestDir = mkdtempSync(join(tmpdir(), 'recs-trusted-'));
    const manifest = join(manifestDir, 'manifest.json');
    writeFileSync(manifest, JSON.stringify(Object.fromEntries(cases.map(([query]) => [sha256(query), query]))));
    const trusted = await startTestGateway(Object.assign(Object.create(backend) as Backend, { close: () => Promise.resolve() }), {
      RESPONSE_CACHE_MAX_ENTRIES: '0',
      TRUSTED_DOCUMENTS: manifest,
      TRUSTED_DOCUMENTS_ONLY: 'true',
    });
    try {
      const post = async (url: string, body: unknown) => {
        const response = await fetch(`${url}/graphql`, {
          method: 'POST',
          headers: { authorization: root, 'content-type': 'application/json' },
          body: JSON.stringify(body),
          signal: AbortSignal.timeout(10_000),
        });
        return { status: response.status, body: (await response.json()) as GraphQLResponse['body'] };
      };
      for (const [query, variables, field] of cases) {
        const refused = await bothPaths(query, variables);
        expect([refused.status, codeOf(refused), refused.body.data], query).toEqual([400, 'QUERY_TOO_COMPLEX', undefined]);
        expect(refused.body.errors![0]!.message).toMatch(new RegExp(`^Query too complex: an operation may hold one ${field} field, and this one holds 2 \\(`));
        expect(refused.body.errors![0]!.extensions).toMatchObject({ limit: `${field}Fields`, max: 1, actual: 2 });
        // an automatic persisted query registers its text on both paths, and a trusted document is listed by hash: refused alike
        const persistedQuery = { version: 1, sha256Hash: sha256(query) };
        for (const url of [prepared.url, apollo.url]) {
          const apq = await post(url, { query, variables, extensions: { persistedQuery } });
          expect([apq.status, apq.body.errors?.[0]?.message], url).toEqual([400, refused.body.errors![0]!.message]);
        }
        const listed = await post(trusted.url, { variables, extensions: { persistedQuery } });
        expect([listed.status, listed.body.errors?.[0]?.message]).toEqual([400, refused.body.errors![0]!.message]);
      }
      expect(recs.itemCount).toBe(held);
      expect([recs.catalog.get(99800003), recs.newItemCount([99800001, 99800002])]).toEqual([undefined, 2]);
    } finally {
      await trusted.stop();
      rmSync(manifestDir, { recursive: true, force: true });
    }
    // one of each in one operation is two calls of one kind each: taken, as are fields merged under one name
    const both = 'mutation Both($e: [EventInput!]!, $i: [ItemInput!]!) { recordEvents(events: $e) { accepted } upsertItems(items: $i) { upserted } }';
    expect((await bothPaths(both, { e: [{ kind: 'VIEW', itemId: KNOWN, sessionId: 'both' }], i: [{ itemId: KNOWN, name: 'Both' }] })).body).toEqual({
      data: { recordEvents: { accepted: 1 }, upsertItems: { upserted: 1 } },
    });
    const merged = 'mutation Merged($e: [EventInput!]!) { recordEvents(events: $e) { accepted } recordEvents(events: $e) { accepted } }';
    expect((await bothPaths(merged, { e: [{ kind: 'VIEW', itemId: KNOWN, sessionId: 'merged' }] })).body).toEqual({ data: { recordEvents: { accepted: 1 } } });
  }, 30_000);

  it('refuses every bad time one way: without an offset, before 1970 or a day ahead, as DateTime does malformed ones (400 BAD_USER_INPUT)', async () => {
    const twoDaysAhead = new Date(Date.now() + 2 * 86_400_000).toISOString();
    const cases: [string, string][] = [
      ['2026-11-23T10:00:00', 'must be an ISO 8601 string with an offset'],
      ['2026-11-23t10:00:00', 'must be an ISO 8601 string with an offset'],
      ['2026-11-23', 'must be an ISO 8601 string with an offset'],
      ['March 7', 'must be an ISO 8601 string with an offset'],
      ['0001-01-01T00:00:00Z', 'must be a date after 1970'],
      ['1969-12-31T23:59:59.999Z', 'must be a date after 1970'],
      ['9999-12-31T23:59:59Z', 'must not be more than a day in the future'],
      [twoDaysAhead, 'must not be more than a day in the future'],
    ];
    const before = recs.itemCount;
    for (const [time, reason] of cases) {
      const answer = await bothPaths(RECORD, { events: [{ kind: 'VIEW', itemId: 99100001, sessionId: 's', time }] });
      expect([answer.status, codeOf(answer), answer.body.data], time).toEqual([400, 'BAD_USER_INPUT', undefined]);
      expect(answer.body.errors![0]!.message, time).toContain(`at "events[0].time"; DateTime ${reason}`);
      const rest = await twin('POST', '/v1/events', [{ kind: 'view', itemId: 99100001, sessionId: 's', time }]);
      expect(rest.status, time).toBe(400);
      expect(rest.message, time).toMatch(/^events\[0\]\.time: must/);
    }
    // in the document's text too: refused before it runs, on both paths alike
    const text = 'mutation { recordEvents(events: [{ kind: VIEW, itemId: 99100001, sessionId: "s", time: "9999-01-01T00:00:00Z" }]) { accepted } }';
    const literal = await bothPaths(text, {});
    expect([literal.status, literal.body.errors![0]!.message]).toEqual([400, expect.stringContaining('DateTime must not be more than a day in the future') as string]);
    // pointing at the literal, as every other validation error does (a probe found none)
    expect((literal.body.errors![0] as { locations?: unknown }).locations).toEqual([{ line: 1, column: text.indexOf('"9999') + 1 }]);
    expect(recs.itemCount).toBe(before);
    // RFC 3339's t and z as well as T and Z (the probe found them refused), in variables, in the text, and on REST
    for (const time of ['2026-11-23T07:40:00+01:00', '2026-11-23T06:40:00Z', '1970-01-01T00:00:00Z', '2026-11-23t06:40:00z', '2026-11-23t07:40:00+01:00']) {
      expect((await bothPaths(RECORD, { events: [{ kind: 'VIEW', itemId: KNOWN, sessionId: 's', time }] })).body, time).toEqual({ data: { recordEvents: { accepted: 1 } } });
      const literal = `mutation { recordEvents(events: [{ kind: VIEW, itemId: ${KNOWN}, sessionId: "s", time: "${time}" }]) { accepted } }`;
      expect((await bothPaths(literal, {})).body, time).toEqual({ data: { recordEvents: { accepted: 1 } } });
      expect((await twin('POST', '/v1/events', [{ kind: 'view', itemId: KNOWN, sessionId: 's', time }])).status, time).toBe(200);
    }
  }, 30_000);

  it('says what is wrong with a time that is in the form but is no instant: the day, the hour, the second, the offset', async () => {
    // a probe found each of these told only that an offset was wanted, though each had one
    const cases: [string, string][] = [
      ['2026-02-30T06:40:00Z', '2026-02 has no day 30 (01 to 28)'],
      ['2028-02-30T06:40:00Z', '2028-02 has no day 30 (01 to 29)'],
      ['2026-13-01T06:40:00Z', 'month 13 is out of range (01 to 12)'],
      ['2026-11-23T24:00:00Z', 'hour 24 is out of range (00 to 23)'],
      ['2026-11-23T06:61:00Z', 'minute 61 is out of range (00 to 59)'],
      ['2026-11-23T23:59:60Z', 'second 60 (a leap second) is not taken: send 59'],
      ['2026-11-23T06:40:00+25:00', 'offset +25:00 is out of range (-23:59 to +23:59)'],
      ['2026-11-23T06:40:00', 'it has no offset: add Z for UTC or the local offset (+01:00)'],
      ['2026-11-23', 'it has no time of day and offset (T06:40:00Z)'],
    ];
    const before = recs.itemCount;
    for (const [time, reason] of cases) {
      const answer = await bothPaths(RECORD, { events: [{ kind: 'VIEW', itemId: 99100001, sessionId: 's', time }] });
      expect([answer.status, codeOf(answer)], time).toEqual([400, 'BAD_USER_INPUT']);
      expect(answer.body.errors![0]!.message, time).toContain(`DateTime must be an ISO 8601 string with an offset (2026-11-23T06:40:00Z or +01:00): ${reason}`);
      const literal = await bothPaths(`mutation { recordEvents(events: [{ kind: VIEW, itemId: 99100001, sessionId: "s", time: "${time}" }]) { accepted } }`, {});
      expect([literal.status, literal.body.errors![0]!.message], time).toEqual([400, expect.stringContaining(`: ${reason}`) as string]);
      const rest = await twin('POST', '/v1/events', [{ kind: 'view', itemId: 99100001, sessionId: 's', time }]);
      expect([rest.status, rest.message], time).toEqual([400, expect.stringContaining(`events[0].time: must be an ISO 8601 date with an offset (2026-11-23T06:40:00Z or +01:00) or whole milliseconds since 1970: ${reason}`) as string]);
    }
    // a text not in the form at all is shown the form, with nothing added
    const rest = await twin('POST', '/v1/events', [{ kind: 'view', itemId: 99100001, sessionId: 's', time: 'soon' }]);
    expect(rest.message).toBe('events[0].time: must be an ISO 8601 date with an offset (2026-11-23T06:40:00Z or +01:00) or whole milliseconds since 1970');
    expect(recs.itemCount).toBe(before);
  }, 30_000);

  it('refuses a time written in the text a day ahead only while it is: the refusal is not remembered', async () => {
    // a probe found the same text refused from memory after its time had come within a day
    const real = Date.now();
    const ahead = new Date(real + 86_400_000 + 3_600_000).toISOString();
    const text = `mutation { recordEvents(events: [{ kind: VIEW, itemId: ${KNOWN}, sessionId: "ahead", time: "${ahead}" }]) { accepted } }`;
    for (let i = 0; i < 2; i++) {
      const refused = await bothPaths(text, {});
      expect([refused.status, refused.body.errors![0]!.message]).toEqual([400, 'DateTime must not be more than a day in the future']);
    }
    // two hours on, the same text's time is within a day: taken on both paths (only Date is faked)
    vi.useFakeTimers({ toFake: ['Date'], now: real + 2 * 3_600_000 });
    try {
      expect((await bothPaths(text, {})).body).toEqual({ data: { recordEvents: { accepted: 1 } } });
    } finally {
      vi.useRealTimers();
    }
  }, 30_000);

  it('refuses an item text over its cap naming the record and field, and stores nothing of the call', async () => {
    const ok = { itemId: 99200001, name: 'Fine' };
    const cases: [Record<string, unknown>, Record<string, unknown>, string][] = [
      [{ name: 'n'.repeat(1_001) }, { name: 'n'.repeat(1_001) }, 'items[1].name: at most 1000 characters'],
      [{ brandName: 'b'.repeat(1_001) }, { brandName: 'b'.repeat(1_001) }, 'items[1].brandName: at most 1000 characters'],
      [{ longDescription: 'd'.repeat(10_001) }, { longDescription: 'd'.repeat(10_001) }, 'items[1].longDescription: at most 10000 characters'],
      [{ productUrl: `https://shop.example/${'p'.repeat(2_000)}` }, { productUrl: `https://shop.example/${'p'.repeat(2_000)}` }, 'items[1].productUrl: at most 2000 characters'],
      [{ attributes: [{ name: 'color', value: 'v'.repeat(1_001) }] }, { attributes: { color: 'v'.repeat(1_001) } }, 'items[1].attributes[0].value: at most 1000 characters'],
      [{ imageEntities: [{ largeImage: 'i'.repeat(2_001) }] }, { imageEntities: [{ largeImage: 'i'.repeat(2_001) }] }, 'items[1].imageEntities[0].largeImage: at most 2000 characters'],
    ];
    for (const [graphqlFields, restFields, message] of cases) {
      const answer = await bothPaths(UPSERT, { items: [ok, { itemId: 99200002, name: 'Long', ...graphqlFields }] });
      expect([answer.status, codeOf(answer), answer.body.data, answer.body.errors![0]!.message]).toEqual([200, 'BAD_USER_INPUT', null, message]);
      expect(await twin('PUT', '/v1/items', [ok, { itemId: 99200002, name: 'Long', ...restFields }])).toEqual({ status: 400, message });
      expect([recs.catalog.get(99200001), recs.catalog.get(99200002)]).toEqual([undefined, undefined]);
    }
    // at the caps exactly: kept (on an item already held, which takes no room)
    const atCaps = { itemId: KNOWN, name: 'n'.repeat(1_000), longDescription: 'd'.repeat(10_000), productUrl: `https://shop.example/${'p'.repeat(1_979)}` };
    expect((await bothPaths(UPSERT, { items: [atCaps] })).body).toEqual({ data: { upsertItems: { upserted: 1 } } });
    expect(recs.catalog.get(KNOWN)!.longDescription).toHaveLength(10_000);
  }, 30_000);

  it('refuses a link with a scheme other than http or https (a script in shoppers\' browsers), as browsers read it; keeps relative and http(s) ones', async () => {
    const ok = { itemId: 99200001, name: 'Fine' };
    const cases: [Record<string, unknown>, Record<string, unknown>, string][] = [
      [{ productUrl: 'javascript:alert(1)' }, { productUrl: 'javascript:alert(1)' }, 'items[1].productUrl: must be an http or https URL, or a relative one'],
      [{ addToCartUrl: ' JaVa\tScRiPt:alert(1)' }, { addToCartUrl: ' JaVa\tScRiPt:alert(1)' }, 'items[1].addToCartUrl: must be an http or https URL, or a relative one'],
      [{ imageEntities: [{ largeImage: 'data:text/html,<script>alert(1)</script>' }] }, { imageEntities: [{ largeImage: 'data:text/html,<script>alert(1)</script>' }] }, 'items[1].imageEntities[0].largeImage: must be an http or https URL, or a relative one'],
    ];
    for (const [graphqlFields, restFields, message] of cases) {
      const answer = await bothPaths(UPSERT, { items: [ok, { itemId: 99200002, name: 'Linked', ...graphqlFields }] });
      expect([answer.status, codeOf(answer), answer.body.data, answer.body.errors![0]!.message]).toEqual([200, 'BAD_USER_INPUT', null, message]);
      expect(await twin('PUT', '/v1/items', [ok, { itemId: 99200002, name: 'Linked', ...restFields }])).toEqual({ status: 400, message });
      expect([recs.catalog.get(99200001), recs.catalog.get(99200002)]).toEqual([undefined, undefined]);
    }
    const fine = { itemId: KNOWN, name: 'Linked', productUrl: 'HTTPS://shop.example/p', thumbnailImage: '//cdn.example/t.jpg', mediumImage: '/img/m.jpg', largeImage: 'http://cdn.example/l.jpg?a=b:c' };
    expect((await bothPaths(UPSERT, { items: [fine] })).body).toEqual({ data: { upsertItems: { upserted: 1 } } });
    expect(recs.catalog.get(KNOWN)!.thumbnailImage).toBe('//cdn.example/t.jpg');
  }, 30_000);

  it('refuses a text field sent as a number (only upc and modelNumber may be), naming it, and stores nothing of the call', async () => {
    // the probe stored `"name": 5` as "5" through PUT /v1/items
    const ok = { itemId: 99900001, name: 'Fine' };
    const cases: [Record<string, unknown>, string][] = [
      [{ name: 5 }, 'items[1].name'],
      [{ brandName: 7 }, 'items[1].brandName'],
      [{ stock: 0 }, 'items[1].stock'],
      [{ imageEntities: [{ largeImage: 3 }] }, 'items[1].imageEntities[0].largeImage'],
      [{ bestMarketplacePrice: { price: 5, sellerInfo: 1 } }, 'items[1].bestMarketplacePrice.sellerInfo'],
    ];
    for (const [fields, field] of cases) {
      const record = { itemId: 99900002, name: 'Typed', ...fields };
      expect(await twin('PUT', '/v1/items', [ok, record]), field).toEqual({ status: 400, message: `${field}: has the wrong type for an item record (recommendations.md)` });
      // GraphQL's String takes no number either, on both paths: the variable's value is refused
      const answer = await bothPaths(UPSERT, { items: [ok, record] });
      expect([answer.status, codeOf(answer)], field).toEqual([400, 'BAD_USER_INPUT']);
      expect(answer.body.errors![0]!.message, field).toContain(`at "${field}"; String cannot represent a non string value`);
      expect([recs.catalog.get(99900001), recs.catalog.get(99900002)], field).toEqual([undefined, undefined]);
    }
    // the codes proxies send unquoted keep their digits as text
    expect(await twin('PUT', '/v1/items', [{ itemId: KNOWN, name: 'Coded', upc: 12345, modelNumber: 678 }])).toEqual({ status: 200, message: undefined });
    expect(recs.catalog.get(KNOWN)).toMatchObject({ name: 'Coded', upc: '12345', modelNumber: '678' });
  }, 30_000);

  it('refuses a upc or modelNumber sent as a number without exact digits (a fraction, an exponent past 2^53 − 1, a negative), naming it; keeps safe integers\' digits', async () => {
    // the probe's "upc": 1.5e30 was stored, and item { upc } answered "1.5e+30"
    const ok = { itemId: 99900011, name: 'Fine' };
    const message = (field: string) => `items[1].${field}: a number here must be a whole number from 0 to 9007199254740991, kept as its digits: send any other code as a string`;
    const cases: [Record<string, unknown>, string][] = [
      [{ upc: 1.5e30 }, 'upc'],
      [{ upc: 12.5 }, 'upc'],
      [{ upc: -12345 }, 'upc'],
      [{ upc: 2 ** 53 }, 'upc'],
      [{ modelNumber: 1e21 }, 'modelNumber'],
      [{ upc: '036000291452', modelNumber: 4.5 }, 'modelNumber'],
    ];
    for (const [fields, field] of cases) {
      const record = { itemId: 99900012, name: 'Coded', ...fields };
      expect(await twin('PUT', '/v1/items', [ok, record]), JSON.stringify(fields)).toEqual({ status: 400, message: message(field) });
      expect([recs.catalog.get(99900011), recs.catalog.get(99900012)], field).toEqual([undefined, undefined]);
    }
    // within 0 to 2^53 − 1 the digits are kept as sent, the largest and 0 included
    expect(await twin('PUT', '/v1/items', [{ itemId: KNOWN, name: 'Coded', upc: Number.MAX_SAFE_INTEGER, modelNumber: 0 }])).toEqual({ status: 200, message: undefined });
    expect(recs.catalog.get(KNOWN)).toMatchObject({ upc: '9007199254740991', modelNumber: '0' });
    expect((await prepared.gql(`{ item(itemId: ${KNOWN}) { upc modelNumber } }`, {}, { authorization: root })).body).toEqual({ data: { item: { upc: '9007199254740991', modelNumber: '0' } } });
    // an upstream's record is read as before: such a number does not cost it the record
    expect(parseItemRecord({ itemId: 5, name: 'Upstream', upc: 1.5e30 })).toMatchObject({ itemId: 5, name: 'Upstream' });
  }, 30_000);

  it('refuses a compressed body (Content-Encoding) with 415 saying so, on /graphql and the twins, and stores nothing', async () => {
    // the probe's gzip body was read as text and answered 400 "not valid JSON"
    const held = recs.itemCount;
    const events = [{ kind: 'VIEW', itemId: 99950001, sessionId: 'gz' }];
    const send = async (url: string, method: string, body: unknown, encoding: string) => {
      const response = await fetch(url, {
        method,
        headers: { authorization: root, 'content-type': 'application/json', 'content-encoding': encoding },
        body: encoding === 'identity' ? JSON.stringify(body) : gzipSync(JSON.stringify(body)),
        signal: AbortSignal.timeout(10_000),
      });
      return { status: response.status, acceptEncoding: response.headers.get('accept-encoding'), body: (await response.json()) as Record<string, unknown> };
    };
    const message = expect.stringMatching(/^Content encodings \(Content-Encoding: gzip, br, deflate\) are not supported: send the body uncompressed/) as string;
    for (const gateway of [prepared, apollo]) {
      const answer = await send(`${gateway.url}/graphql`, 'POST', { query: RECORD, variables: { events } }, 'gzip');
      expect(answer).toEqual({ status: 415, acceptEncoding: 'identity', body: { errors: [{ message, extensions: { code: 'BAD_REQUEST' } }] } });
    }
    for (const [method, path, body] of [['POST', '/v1/events', events.map((e) => ({ ...e, kind: 'view' }))], ['PUT', '/v1/items', [{ itemId: 99950002, name: 'Zipped' }]]] as const) {
      const answer = await send(`${prepared.url}${path}`, method, body, 'GZIP');
      expect(answer, path).toEqual({ status: 415, acceptEncoding: 'identity', body: { errors: [{ code: 415, message }] } });
    }
    expect([recs.itemCount, recs.catalog.get(99950002)]).toEqual([held, undefined]);
    // identity is no encoding: taken
    expect((await send(`${apollo.url}/graphql`, 'POST', { query: RECORD, variables: { events: [{ ...events[0], itemId: KNOWN }] } }, 'identity')).body).toEqual({ data: { recordEvents: { accepted: 1 } } });
    expect((await send(`${prepared.url}/v1/events`, 'POST', [{ kind: 'view', itemId: KNOWN, sessionId: 'gz' }], 'identity')).body).toMatchObject({ accepted: 1 });
  }, 30_000);

  it('refuses a call that would take the recommender past RECS_MAX_ITEMS, whole, and keeps taking calls on items it holds', async () => {
    const held = recs.itemCount;
    const newEvents = (from: number, n: number) =>
      Array.from({ length: 2 * n }, (_, i) => ({ kind: 'VIEW', itemId: from + (i % n), sessionId: `cap-${i}` }));
    // ROOM + 1 new items (each named twice): one too many, on every path
    const tooMany = newEvents(99300001, ROOM + 1);
    const answer = await bothPaths(RECORD, { events: [{ kind: 'VIEW', itemId: KNOWN, sessionId: 'cap' }, ...tooMany] });
    expect([answer.status, codeOf(answer), answer.body.data]).toEqual([200, 'BAD_USER_INPUT', null]);
    expect(answer.body.errors![0]!.message).toMatch(new RegExp(`^events: the call names ${ROOM + 1} items the recommender does not hold yet, and it holds ${held} of at most ${held + ROOM} \\(RECS_MAX_ITEMS\\)`));
    const rest = await twin('POST', '/v1/events', tooMany.map((e) => ({ ...e, kind: 'view' })));
    expect([rest.status, rest.message?.startsWith(`events: the call names ${ROOM + 1} items`)]).toEqual([400, true]);
    const records = Array.from({ length: ROOM + 1 }, (_, i) => ({ itemId: 99400001 + i, name: `New ${i}` }));
    expect(codeOf(await bothPaths(UPSERT, { items: records }))).toBe('BAD_USER_INPUT');
    expect((await twin('PUT', '/v1/items', records)).status).toBe(400);
    expect(recs.itemCount).toBe(held);
    expect(recs.newItemCount([99300001, 99400001])).toBe(2);

    // up to the cap: kept; then one more new item is refused, while the items held still take events and records
    expect((await bothPaths(RECORD, { events: newEvents(99300001, ROOM) })).body).toEqual({ data: { recordEvents: { accepted: 2 * ROOM } } });
    expect(recs.itemCount).toBe(held + ROOM);
    expect(codeOf(await bothPaths(RECORD, { events: newEvents(99500001, 1) }))).toBe('BAD_USER_INPUT');
    expect((await twin('PUT', '/v1/items', [{ itemId: 99500001, name: 'One more' }])).status).toBe(400);
    expect((await bothPaths(RECORD, { events: newEvents(99300001, ROOM) })).body).toEqual({ data: { recordEvents: { accepted: 2 * ROOM } } });
    expect(await twin('PUT', '/v1/items', [{ itemId: 99300001, name: 'Now with a record' }])).toEqual({ status: 200, message: undefined });
    expect(recs.itemCount).toBe(held + ROOM);
  }, 30_000);
});

describe('RECS_MAX_ITEMS with calls running at once', () => {
  it('holds for calls that each fit but together would pass it: one is refused whole, the other kept', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'recs-cap-'));
    // SQLite: a call awaits its commit before it applies its events, so the next call is checked meanwhile
    const recs = await openEmbeddedRecs({ dataDir });
    try {
      const held = recs.itemCount;
      const ingest = new EmbeddedIngest(recs, { maxItems: held + ROOM });
      const admin = { user: { isAdmin: true } } as PrincipalModel;
      const now = Date.now();
      const call = (from: number): EventInputModel[] =>
        Array.from({ length: 3 }, (_, i) => ({ kind: 'VIEW', itemId: from + i, sessionId: `race-${from}`, userId: null, orderId: null, time: now }));
      // 3 + 3 new items against room for 4, started together
      const answers = await Promise.allSettled([ingest.recordEvents(admin, call(99600001)), ingest.recordEvents(admin, call(99700001))]);
      expect(answers.map((a) => a.status)).toEqual(['fulfilled', 'rejected']);
      expect((answers[1] as PromiseRejectedResult).reason).toMatchObject({ extensions: { code: 'BAD_USER_INPUT' } });
      expect(((answers[1] as PromiseRejectedResult).reason as Error).message).toMatch(/calls under way may add 3: nothing was kept$/);
      expect(recs.itemCount).toBe(held + 3);
      expect(recs.newItemCount([99700001, 99700002, 99700003])).toBe(3);
      // the reservation ends with the call: the one new item left room for is taken
      await expect(ingest.recordEvents(admin, call(99700001).slice(0, 1))).resolves.toMatchObject({ accepted: 1 });
      expect(recs.itemCount).toBe(held + ROOM);
    } finally {
      await recs.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 30_000);
});
