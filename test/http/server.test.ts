import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuthorization } from '../../src/auth/authorization.js';
import type { Backend } from '../../src/ports/backend.js';
import { DEFAULT_QUERY } from '../../src/http/routes/ide.js';
import { codeOf, embeddedWithUsers, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { storeKinds } from '../helpers/stores.js';

describe('the gateway over HTTP', () => {
  let gw: TestGateway;
  let dispose: () => Promise<void>;
  let key: string;

  beforeAll(async () => {
    const opened = await storeKinds[0]!.open();
    dispose = opened.dispose;
    gw = await startTestGateway(await embeddedWithUsers(opened.store), { BODY_LIMIT_BYTES: '4096' });
    const created = await gw.gql<{ createApiKey: { key: string } }>(
      `mutation { createApiKey(input: {}) { key } }`,
      {},
      { authorization: basicAuthorization('alice', 'alice-password') },
    );
    key = created.body.data!.createApiKey.key;
  });
  afterAll(async () => {
    await gw.stop();
    await dispose();
  });

  const post = (body: string, headers: Record<string, string> = {}) =>
    fetch(`${gw.url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: key, ...headers }, body });

  it('serves GraphiQL to a browser with every asset from the gateway itself: no CDN, works offline', async () => {
    const response = await fetch(`${gw.url}/graphql`, { headers: { accept: 'text/html' } });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await response.text();
    expect(html).toContain('recs-gateway GraphiQL');
    // every script, stylesheet and icon is one of the gateway's own files, relative to /graphql
    const urls = [...html.matchAll(/<(?:script|link)[^>]+(?:src|href)="([^"]*)"/g)].map((m) => m[1]!);
    expect(urls.length).toBeGreaterThanOrEqual(3);
    for (const url of urls) expect(url).toMatch(/^graphql\/ide\/[A-Za-z0-9_-]{22}\.(js|css|ico)$/);
  });

  it('runs the query the IDE opens with, as it is', async () => {
    const response = await gw.gql<{ viewer: { authenticatedBy: string }; item: { name: string; productRecommendations: unknown[] } }>(
      DEFAULT_QUERY,
      {},
      { authorization: key },
    );
    expect(response.body.errors).toBeUndefined();
    expect(response.body.data!.viewer.authenticatedBy).toBe('API_KEY');
    expect(response.body.data!.item.name).toMatch(/Smartphone/);
    expect(response.body.data!.item.productRecommendations).toHaveLength(5);
  });

  it('answers /healthz and /readyz, and 404 elsewhere', async () => {
    expect(await (await fetch(`${gw.url}/healthz`)).json()).toEqual({ status: 'ok' });
    // the counts are an administrator's to read (test/observability/readyzExposure.processes.test.ts)
    const ready = await fetch(`${gw.url}/readyz`, { headers: { authorization: basicAuthorization('root', 'root-password') } });
    expect(ready.status).toBe(200);
    const body = (await ready.json()) as { status: string; checks: unknown; recommender: { mode: string; itemsWithoutRecord: number } };
    expect([body.status, body.checks]).toEqual(['ready', { store: 'ok', cache: 'ok', rateLimits: 'ok' }]);
    // the embedded recommender says what it serves (issue 20): the demo shop, every item with its record
    expect([body.recommender.mode, body.recommender.itemsWithoutRecord]).toEqual(['demo', 0]);
    expect((await fetch(`${gw.url}/nope`)).status).toBe(404);
  });

  it("answers a route or file it does not have, and a method a route does not take, with a code of the closed set", async () => {
    const cases: [string, RequestInit, number, string][] = [
      ['/nope', {}, 404, 'NOT_FOUND'],
      ['/graphql/ide/nothing.js', {}, 404, 'NOT_FOUND'],
      ['/graphql/ide/nothing.js', { method: 'DELETE' }, 405, 'BAD_REQUEST'],
      ['/openapi.json', { method: 'DELETE' }, 405, 'BAD_REQUEST'],
      ['/healthz', { method: 'POST' }, 405, 'BAD_REQUEST'],
      ['/readyz', { method: 'DELETE' }, 405, 'BAD_REQUEST'],
      ['/metrics', { method: 'PUT' }, 405, 'BAD_REQUEST'],
    ];
    for (const [path, init, status, code] of cases) {
      const response = await fetch(`${gw.url}${path}`, init);
      expect([path, response.status]).toEqual([path, status]);
      const body = (await response.json()) as { errors: { extensions?: { code?: string } }[] };
      expect([path, body.errors[0]?.extensions?.code]).toEqual([path, code]);
    }
  });

  it('answers broken JSON, an oversized body and a batch with a 400-class error, never a 500', async () => {
    const broken = await post('{"query": ');
    expect(broken.status).toBe(400);
    expect(await broken.json()).toEqual({ errors: [{ message: 'The request body is not valid JSON', extensions: { code: 'BAD_REQUEST' } }] });
    const big = await post(JSON.stringify({ query: `{ viewer { id } } # ${'x'.repeat(5000)}` }));
    expect(big.status).toBe(413);
    const batch = await post(JSON.stringify([{ query: '{ viewer { id } }' }, { query: '{ viewer { id } }' }]));
    expect(batch.status).toBe(400);
    const notGraphQL = await post(JSON.stringify({ nope: 1 }));
    expect(notGraphQL.status).toBe(400);
  });

  it('carries ten-digit item ids exactly and refuses what is not an item id', async () => {
    const big = await gw.gql(`query($id: ItemId!) { item(itemId: $id) { itemId } }`, { id: 5000000001 }, { authorization: key });
    // unknown in the demo shop, but carried whole: the error names the exact id
    expect(big.body.errors?.[0]?.message).toBe('No item with itemId 5000000001');
    const asText = await gw.gql(`{ item(itemId: "5000000001") { itemId } }`, {}, { authorization: key });
    expect(asText.body.errors?.[0]?.message).toBe('No item with itemId 5000000001');
    for (const bad of ['-1', '0', '1.5', '"12a"', '99999999999999999']) {
      const response = await gw.gql(`{ item(itemId: ${bad}) { itemId } }`, {}, { authorization: key });
      expect(response.status).toBe(400);
      expect(codeOf(response)).toBe('GRAPHQL_VALIDATION_FAILED');
    }
    const variable = await gw.gql(`query($id: ItemId!) { item(itemId: $id) { itemId } }`, { id: 'x' }, { authorization: key });
    expect([variable.status, codeOf(variable)]).toEqual([400, 'BAD_USER_INPUT']);
  });

  it('says what was sent and the real limit, 2^53 − 1, when it refuses an item id', async () => {
    // the probe: 9007199254740992 was told "at most 16 digits" (it has 16), 3.5 "got \"FloatValue\""
    const range = 'ItemId must be a whole number from 1 to 9007199254740991 (2^53 − 1), or a string of its digits; got';
    const literals: [string, string][] = [
      ['9007199254740992', '9007199254740992'],
      ['3.5', '3.5'],
      ['1e3', '1e3'],
      ['-1', '-1'],
      ['"12a"', '"12a"'],
      ['true', 'true'],
      ['COLOR', 'COLOR'],
      [`[${'1, '.repeat(30)}1]`, `[${'1, '.repeat(13)}…`],
    ];
    for (const [literal, shown] of literals) {
      const response = await gw.gql(`{ item(itemId: ${literal}) { itemId } }`, {}, { authorization: key });
      expect([response.status, codeOf(response), response.body.errors?.[0]?.message], literal).toEqual([400, 'GRAPHQL_VALIDATION_FAILED', `${range} ${shown}`]);
      // where in the text, as every other validation error says (the probe: none was given)
      expect((response.body.errors?.[0] as { locations?: unknown } | undefined)?.locations, literal).toEqual([{ line: 1, column: 16 }]);
    }
    const variables: [unknown, string][] = [
      [9007199254740992, '9007199254740992'],
      [3.5, '3.5'],
      ['12345678901234567', '"12345678901234567"'],
      [{ id: 5 }, '{"id":5}'],
    ];
    for (const [value, shown] of variables) {
      const response = await gw.gql('query($id: ItemId!) { item(itemId: $id) { itemId } }', { id: value }, { authorization: key });
      expect([response.status, codeOf(response), response.body.errors?.[0]?.message], shown).toEqual([400, 'BAD_USER_INPUT', `Variable "$id" got invalid value; ${range} ${shown}`]);
    }
    // -0 written in the body's JSON (JSON.stringify writes it as 0, which a probe was told it got)
    const negativeZero = await fetch(`${gw.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: key },
      body: '{"query":"query($id: ItemId!) { item(itemId: $id) { itemId } }","variables":{"id":-0}}',
    });
    expect(negativeZero.status).toBe(400);
    expect(((await negativeZero.json()) as { errors: { message: string }[] }).errors[0]!.message).toBe(`Variable "$id" got invalid value; ${range} -0`);
    // the limit itself is an item id (unknown in the demo shop)
    const largest = await gw.gql('{ item(itemId: 9007199254740991) { itemId } }', {}, { authorization: key });
    expect(largest.body.errors?.[0]?.message).toBe('No item with itemId 9007199254740991');
  });

  it('lets a CDN keep public GET answers per credential, and never private ones', async () => {
    const query = encodeURIComponent('{ item(itemId: 31000005) { itemId name } }');
    const publicAnswer = await fetch(`${gw.url}/graphql?query=${query}`, { headers: { authorization: key, 'apollo-require-preflight': '1' } });
    expect(publicAnswer.status).toBe(200);
    expect(publicAnswer.headers.get('cache-control')).toBe('max-age=300, public');
    expect(publicAnswer.headers.get('vary')).toContain('authorization');
    const privateQuery = encodeURIComponent('{ viewer { username } item(itemId: 31000005) { name } }');
    const privateAnswer = await fetch(`${gw.url}/graphql?query=${privateQuery}`, {
      headers: { authorization: key, 'apollo-require-preflight': '1' },
    });
    expect(privateAnswer.headers.get('cache-control')).toBe('no-store');
    // CSRF prevention: a simple GET without a preflight-forcing header is refused
    expect((await fetch(`${gw.url}/graphql?query=${query}`, { headers: { authorization: key } })).status).toBe(400);
  });

  it('runs automatic persisted queries: a hash alone is refused until registered, then answered', async () => {
    const query = '{ item(itemId: 31000005) { name } }';
    const sha256Hash = createHash('sha256').update(query).digest('hex');
    const extensions = { persistedQuery: { version: 1, sha256Hash } };
    type Answer = { data?: { item: { name: string } }; errors?: { extensions: { code: string } }[] };
    const unknown = (await (await post(JSON.stringify({ extensions }))).json()) as Answer;
    expect(unknown.errors?.[0]?.extensions.code).toBe('PERSISTED_QUERY_NOT_FOUND');
    const registered = (await (await post(JSON.stringify({ query, extensions }))).json()) as Answer;
    expect(registered.data?.item.name).toMatch(/Smartphone/);
    const byHash = await (await post(JSON.stringify({ extensions }))).json();
    expect(byHash).toEqual(registered);
  });
});

describe('internal errors', () => {
  it('are masked: a backend failure reaches the client as INTERNAL_SERVER_ERROR with no detail', async () => {
    const { store, dispose } = await storeKinds[0]!.open();
    const real = await embeddedWithUsers(store);
    const broken: Backend = {
      ...real,
      recs: {
        getItems: () => Promise.reject(new Error('connection string postgres://u:hunter2@db failed at line 42')),
        recommend: () => Promise.reject(new TypeError('cannot read properties of undefined')),
      },
      // the same service read synchronously would not fail: it goes with the failing one
      recsNow: undefined,
    };
    const gw = await startTestGateway(broken);
    try {
      const key = (
        await gw.gql<{ createApiKey: { key: string } }>(`mutation { createApiKey(input: {}) { key } }`, {}, {
          authorization: basicAuthorization('alice', 'alice-password'),
        })
      ).body.data!.createApiKey.key;
      const response = await gw.gql(`{ item(itemId: 31000005) { name } productRecommendations(itemId: 31000005) { name } }`, {}, { authorization: key });
      expect(response.status).toBe(200);
      expect(response.body.errors?.map((e) => [e.message, e.extensions])).toEqual([
        ['Internal server error', { code: 'INTERNAL_SERVER_ERROR' }],
        ['Internal server error', { code: 'INTERNAL_SERVER_ERROR' }],
      ]);
      expect(JSON.stringify(response.body)).not.toMatch(/hunter2|line 42|undefined|stack/);
    } finally {
      await gw.stop();
      await dispose();
    }
  });
});

describe('embedded lists', () => {
  it('are read synchronously, the same lists the promise path gives; a bad first or anchor still fails on that path', async () => {
    const { store, dispose } = await storeKinds[0]!.open();
    const real = await embeddedWithUsers(store);
    let asked = 0;
    const counting: Backend = {
      ...real,
      recs: {
        getItems: (ids, options) => real.recs.getItems(ids, options),
        recommend: (kind, anchorId, options) => {
          asked += 1;
          return real.recs.recommend(kind, anchorId, options);
        },
      },
    };
    const gw = await startTestGateway(counting);
    const withoutNow = await startTestGateway({ ...counting, recsNow: undefined });
    try {
      const authorization = basicAuthorization('alice', 'alice-password');
      const query = `{ productRecommendations(itemId: 31000005) { itemId name } postBrowsedProducts(itemId: 31000005, first: 3) { itemId }
        item(itemId: 31000005) { recommendations(kind: POST_BROWSE, first: 2) { edges { rank node { itemId } } } } }`;
      const fast = await gw.gql<{ productRecommendations: unknown[] }>(query, {}, { authorization });
      expect(fast.body.errors).toBeUndefined();
      expect(fast.body.data!.productRecommendations).toHaveLength(10);
      expect(asked).toBe(0);
      const slow = await withoutNow.gql(query, {}, { authorization });
      expect(asked).toBe(2); // post-browse's list is asked once for both fields
      expect(slow.body).toEqual(fast.body);
      // the refusals come from the loader's path, as before
      const badFirst = await gw.gql(`{ productRecommendations(itemId: 31000005, first: 0) { itemId } }`, {}, { authorization });
      expect(badFirst.body.errors?.map((e) => e.extensions?.code)).toEqual(['BAD_USER_INPUT']);
      const unknown = await gw.gql(`{ postBrowsedProducts(itemId: 39999999) { itemId } }`, {}, { authorization });
      expect(unknown.body.errors?.map((e) => e.extensions?.code)).toEqual(['NOT_FOUND']);
      expect(asked).toBe(3);
    } finally {
      await gw.stop();
      await withoutNow.stop();
      await dispose();
    }
  });
});
