import type { ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuthorization } from '../../../src/auth/authorization.js';
import type { EmbeddedRecs } from '../../../src/backends/embedded/recs.js';
import type { Backend, ItemModel, RecommendationKind, RecommendationListModel } from '../../../src/ports/backend.js';
import { ResponseCache } from '../../../src/graphql/pipeline/responseCache.js';
import { codeOf, embeddedWithUsers, startTestGateway, type GraphQLResponse, type TestGateway } from '../../helpers/gateway.js';
import { storeKinds } from '../../helpers/stores.js';

const RECS = 'query Recs($itemId: ItemId!) { productRecommendations(itemId: $itemId) { itemId name salePrice } }';
const CREATE = 'mutation { createApiKey(input: {}) { id key } }';
const DELETE = 'mutation Delete($id: ID!) { deleteApiKey(id: $id) { ok } }';

const alice = { authorization: basicAuthorization('alice', 'alice-password') };
const bob = { authorization: basicAuthorization('bob', 'bob-password', 'corp.example') };

/** A hit carries Age (how long the answer has been kept); an answer from the pipeline does not. */
const isHit = (response: GraphQLResponse): boolean => response.headers.get('age') !== null;

describe.each(storeKinds)('the response cache in front of the GraphQL pipeline, $name store', (kind) => {
  let gw: TestGateway;
  let dispose: () => Promise<void>;
  let anchors: number[];

  const newKey = async (who: { authorization: string }): Promise<{ id: string; key: string }> => {
    const created = await gw.gql<{ createApiKey: { id: string; key: string } }>(CREATE, {}, who);
    return created.body.data!.createApiKey;
  };

  beforeAll(async () => {
    const opened = await kind.open();
    dispose = opened.dispose;
    const backend: Backend = await embeddedWithUsers(opened.store);
    const recs = backend.recs as EmbeddedRecs;
    anchors = [...recs.catalog.values()]
      .map((item) => item.itemId)
      .filter((id) => recs.recommendNow('NEXT_BEST_PRODUCT', id).entries.length >= 3)
      .slice(0, 10);
    gw = await startTestGateway(backend);
  });
  afterAll(async () => {
    await gw.stop().catch(() => undefined);
    await dispose();
  });

  it('serves a PUBLIC answer from the cache to any authenticated caller, never to an unauthenticated one', async () => {
    const { key } = await newKey(alice);
    const first = await gw.gql(RECS, { itemId: anchors[0] }, { authorization: key });
    expect(first.status).toBe(200);
    expect(first.headers.get('cache-control')).toBe('max-age=300, public');
    expect(isHit(first)).toBe(false);

    const again = await gw.gql(RECS, { itemId: anchors[0] }, { authorization: `Bearer ${key}` });
    expect(isHit(again)).toBe(true);
    expect(again.body).toEqual(first.body);
    // another user, by password: the same public answer
    const other = await gw.gql(RECS, { itemId: anchors[0] }, bob);
    expect(isHit(other)).toBe(true);
    expect(other.body).toEqual(first.body);

    const anonymous = await gw.gql(RECS, { itemId: anchors[0] });
    expect(isHit(anonymous)).toBe(false);
    expect(codeOf(anonymous)).toBe('UNAUTHENTICATED');
    expect(anonymous.body.data ?? null).toBeNull();
  });

  it('answers a bad key 401 even when the answer is cached', async () => {
    const { key } = await newKey(alice);
    await gw.gql(RECS, { itemId: anchors[1] }, { authorization: key });
    expect(isHit(await gw.gql(RECS, { itemId: anchors[1] }, { authorization: key }))).toBe(true);
    const wrong = `${key.slice(0, -2)}${key.endsWith('AA') ? 'BB' : 'AA'}`;
    const refused = await gw.gql(RECS, { itemId: anchors[1] }, { authorization: wrong });
    expect(refused.status).toBe(401);
    expect(codeOf(refused)).toBe('UNAUTHENTICATED');
    expect(refused.body.data).toBeUndefined();
  });

  it('fails a deleted key on the very next request, cached answer or not', async () => {
    const { id, key } = await newKey(alice);
    await gw.gql(RECS, { itemId: anchors[2] }, { authorization: key });
    expect(isHit(await gw.gql(RECS, { itemId: anchors[2] }, { authorization: key }))).toBe(true);
    const deleted = await gw.gql<{ deleteApiKey: { ok: boolean } }>(DELETE, { id }, alice);
    expect(deleted.body.data?.deleteApiKey.ok).toBe(true);
    const next = await gw.gql(RECS, { itemId: anchors[2] }, { authorization: key });
    expect(next.status).toBe(401);
    expect(codeOf(next)).toBe('UNAUTHENTICATED');
  });

  it('never keeps an answer with a PRIVATE field: each caller gets their own viewer', async () => {
    const query = 'query Mixed($itemId: ItemId!) { viewer { username } productRecommendations(itemId: $itemId) { itemId } }';
    const asAlice = await gw.gql<{ viewer: { username: string } }>(query, { itemId: anchors[3] }, alice);
    expect(asAlice.headers.get('cache-control')).toBe('no-store');
    const asBob = await gw.gql<{ viewer: { username: string } }>(query, { itemId: anchors[3] }, bob);
    expect(isHit(asBob)).toBe(false);
    expect(asAlice.body.data?.viewer.username).toBe('alice');
    expect(asBob.body.data?.viewer.username).toBe('bob');
    const keys = await gw.gql('{ apiKeys { id } }', {}, alice);
    expect(isHit(await gw.gql('{ apiKeys { id } }', {}, alice))).toBe(false);
    expect(keys.status).toBe(200);
  });

  it('keys by variables and operation name, and by the query text up to ignored characters', async () => {
    const a = await gw.gql<{ productRecommendations: { itemId: number }[] }>(RECS, { itemId: anchors[4] }, alice);
    const b = await gw.gql<{ productRecommendations: { itemId: number }[] }>(RECS, { itemId: anchors[5] }, alice);
    expect(isHit(b)).toBe(false);
    expect(b.body.data!.productRecommendations).not.toEqual(a.body.data!.productRecommendations);
    const spaced = RECS.replace(/ /g, '  \n ').replace('query  \n Recs', 'query Recs');
    const sameAgain = await gw.gql(spaced, { itemId: anchors[4] }, alice);
    expect(isHit(sameAgain)).toBe(true);
    expect(sameAgain.body).toEqual(a.body);
    // fewer items asked for: another entry, another answer
    const fewer = await gw.gql<{ productRecommendations: unknown[] }>(
      'query Recs($itemId: ItemId!) { productRecommendations(itemId: $itemId, first: 2) { itemId name salePrice } }',
      { itemId: anchors[4] },
      alice,
    );
    expect(isHit(fewer)).toBe(false);
    expect(fewer.body.data!.productRecommendations).toHaveLength(2);
  });

  it('answers a body seen before without parsing it, each answer with its own request id', async () => {
    const { key } = await newKey(alice);
    const send = (body: string, headers: Record<string, string>) =>
      fetch(`${gw.url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
    const body = JSON.stringify({ query: RECS, variables: { itemId: anchors[7] } });
    const first = await send(body, { authorization: key, 'x-request-id': 'first' });
    expect(first.headers.get('age')).toBeNull();
    expect(first.headers.get('x-request-id')).toBe('first');
    const again = await send(body, { authorization: key, 'x-request-id': 'again' });
    expect(again.headers.get('age')).not.toBeNull();
    expect(again.headers.get('x-request-id')).toBe('again');
    expect(again.headers.get('content-type')).toBe(first.headers.get('content-type'));
    expect(again.headers.get('vary')).toBe('authorization');
    expect(await again.json()).toEqual(await first.json());
    // the same bytes with a bad key: 401 with its id, nothing from the cache
    const refused = await send(body, { authorization: 'AAAAAAAAAAAAAAAAAAAAAA', 'x-request-id': 'refused' });
    expect(refused.status).toBe(401);
    expect(refused.headers.get('age')).toBeNull();
    expect(refused.headers.get('x-request-id')).toBe('refused');
    // a broken body: 400 with an id of its own making
    const broken = await send('{"query":', { authorization: key });
    expect(broken.status).toBe(400);
    expect(broken.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('never keeps an answer with errors', async () => {
    for (let i = 0; i < 2; i++) {
      const unknown = await gw.gql(RECS, { itemId: 999_999_999 }, alice);
      expect(isHit(unknown)).toBe(false);
      expect(codeOf(unknown)).toBe('NOT_FOUND');
      const tooMany = await gw.gql(
        'query Recs($itemId: ItemId!, $first: Int) { productRecommendations(itemId: $itemId, first: $first) { itemId } }',
        { itemId: anchors[6], first: 11 },
        alice,
      );
      expect(isHit(tooMany)).toBe(false);
      expect(codeOf(tooMany)).toBe('BAD_USER_INPUT');
    }
    for (let i = 0; i < 2; i++) {
      const invalid = await gw.gql(RECS.replace('salePrice', 'noSuchField'), { itemId: anchors[6] }, alice);
      expect(isHit(invalid)).toBe(false);
      expect(codeOf(invalid)).toBe('GRAPHQL_VALIDATION_FAILED');
    }
  });
});

describe('ResponseCache on its own', () => {
  const json = { 'content-type': 'application/json' };
  const body = { query: '{ item(itemId: 1) { name } }' };
  const answer = (cache: ResponseCache, key: string): string | null => {
    let written: string | null = null;
    const res = {
      setHeader: () => undefined,
      writeHead: () => undefined,
      end: (chunk: Buffer) => (written = chunk.toString('utf8')),
    } as unknown as ServerResponse;
    return cache.serve(key, res, 'a-request-id') ? written : null;
  };

  it('gives no key to a text over the token limit, lexing no further than the limit', () => {
    const cache = new ResponseCache({ maxTokens: 10 });
    expect(cache.keyOf('POST', json, { query: '{ a a a a a a a a }' })).not.toBeNull();
    expect(cache.keyOf('POST', json, { query: '{ a a a a a a a a a a }' })).toBeNull();
    // a megabyte of tokens would take half a second to strip; over the limit it is not even read
    const flood = `{ ${'a '.repeat(512 * 1024)}}`;
    expect(cache.keyOf('POST', json, { query: flood })).toBeNull();
  });

  it('gives no key to a mutation, and remembers neither its text nor its body (events carry session ids)', () => {
    const cache = new ResponseCache();
    const mutation = { query: 'mutation($e: [EventInput!]!) { recordEvents(events: $e) { accepted } }', variables: { e: [{ kind: 'VIEW', itemId: 1, sessionId: 'S-secret' }] } };
    const text = JSON.stringify(mutation);
    expect(cache.keyOf('POST', json, mutation, text)).toBeNull();
    expect(cache.knownKey(json, text)).toBeUndefined();
    expect(cache.keyOf('POST', json, { query: 'query A { a } mutation B { b }', operationName: 'A' })).toBeNull();
  });

  it('gives no key to a shopper\'s list, and remembers neither its text nor its body (they name the shopper)', () => {
    const cache = new ResponseCache();
    for (const asked of [
      { query: 'query($s: String) { recommendedForYou(sessionId: $s) { nodes { itemId } } }', variables: { s: 'S-secret' } },
      { query: '{ recommendedForYou(userId: "U-secret") { nodes { itemId } } }' },
    ]) {
      const text = JSON.stringify(asked);
      expect(cache.keyOf('POST', json, asked, text)).toBeNull();
      expect(cache.knownKey(json, text)).toBeUndefined();
    }
  });

  it('keeps an answer no longer than its maxAge', () => {
    let clock = 1_000_000;
    const cache = new ResponseCache({ now: () => clock });
    const key = cache.keyOf('POST', json, body)!;
    cache.offer(key, 200, { 'cache-control': 'max-age=2, public' }, '{"data":{"item":{"name":"x"}}}');
    expect(answer(cache, key)).toBe('{"data":{"item":{"name":"x"}}}');
    clock += 1_999;
    expect(answer(cache, key)).not.toBeNull();
    clock += 2;
    expect(answer(cache, key)).toBeNull();
  });

  it('after a data change, serves a kept answer only if the lists and records it was computed from are the same now', () => {
    // the data: item records by id and lists by anchor, changed by hand between the asks
    const record = (itemId: number, name: string): ItemModel => ({ itemId, name, attributes: [] });
    const records = new Map([1, 2, 3, 4].map((id) => [id, record(id, `item ${id}`)]));
    const lists = new Map<number, number[]>([[1, [2, 3]], [4, [3, 2]]]);
    const recommend = (kind: RecommendationKind, anchorId: number): RecommendationListModel => {
      const ids = lists.get(anchorId)!;
      return { anchorId, kind, entries: ids.map((itemId, i) => ({ rank: i + 1, itemId, score: scores.get(itemId)!, evidence: 1, source: 'CO_PURCHASE' })), items: ids.map((id) => records.get(id)!) };
    };
    const scores = new Map([[2, 0.5], [3, 0.25]]);
    const cache = new ResponseCache();
    cache.followData({ item: (id) => records.get(id) ?? null, recommend });
    /** What a request for `query` reads (as its loaders would tell), then offered under its key. */
    const computed = (query: string, anchorId: number): string => {
      const key = cache.keyOf('POST', json, { query, variables: { anchorId } })!;
      const sources = cache.sourcesOfNewAnswer(key)!;
      sources.onItems([anchorId], [records.get(anchorId)!]);
      sources.onList(recommend('NEXT_BEST_PRODUCT', anchorId));
      cache.offer(key, 200, { 'cache-control': 'max-age=300, public' }, `{"data":${JSON.stringify(lists.get(anchorId))}}`, 'Q', sources);
      return key;
    };
    const NAMES = 'query Q($anchorId: ItemId!) { item(itemId: $anchorId) { name productRecommendations { name } } }';
    const SCORES = 'query S($anchorId: ItemId!) { recommendations(itemId: $anchorId) { edges { score node { name } } } }';
    const [one, four, oneScores] = [computed(NAMES, 1), computed(NAMES, 4), computed(SCORES, 1)];

    lists.set(4, [2, 3]); // anchor 4's list changes order; anchor 1's does not
    scores.set(2, 0.75); // and a score moves, in both
    cache.dataChanged();
    expect(answer(cache, one)).toBe('{"data":[2,3]}'); // same items in the same order: its names cannot have changed
    expect(answer(cache, four)).toBeNull();
    expect(answer(cache, oneScores)).toBeNull(); // it shows scores
    expect(cache.stats).toMatchObject({ rechecked: 1, changed: 2 });
    expect(answer(cache, one)).not.toBeNull(); // checked once per change
    expect(cache.stats.rechecked).toBe(1);

    records.set(3, record(3, 'renamed')); // a record replaced: every answer that read it
    cache.dataChanged();
    expect(answer(cache, one)).toBeNull();
    // an answer whose sources are unknown is not kept: it could not be checked
    const unknown = cache.keyOf('POST', json, { query: NAMES, variables: { anchorId: 9 } })!;
    cache.offer(unknown, 200, { 'cache-control': 'max-age=300, public' }, '{"data":null}');
    expect(answer(cache, unknown)).toBeNull();
  });

  it('keeps nothing private, uncacheable, failed or with errors, and answers nothing but JSON POSTs', () => {
    const cache = new ResponseCache();
    const key = cache.keyOf('POST', json, body)!;
    cache.offer(key, 200, { 'cache-control': 'max-age=300, private' }, '{"data":{}}');
    cache.offer(key, 200, { 'cache-control': 'no-store' }, '{"data":{}}');
    cache.offer(key, 500, { 'cache-control': 'max-age=300, public' }, '{"data":{}}');
    cache.offer(key, 200, { 'cache-control': 'max-age=300, public' }, '{"errors":[{"message":"x"}],"data":{}}');
    cache.offer(key, 200, { 'cache-control': 'max-age=0, public' }, '{"data":{}}');
    expect(cache.size).toBe(0);
    expect(cache.keyOf('GET', json, body)).toBeNull();
    expect(cache.keyOf('POST', { 'content-type': 'text/plain' }, body)).toBeNull();
    expect(cache.keyOf('POST', json, { ...body, extensions: { persistedQuery: {} } })).toBeNull();
    // text that does not even lex; text that lexes but does not parse gets a key and Apollo's error, never kept
    expect(cache.keyOf('POST', json, { query: '{ item(name: "unterminated }' })).toBeNull();
    expect(cache.keyOf('POST', json, { ...body, variables: { a: 1 } })).not.toBe(key);
    expect(cache.keyOf('POST', json, { ...body, operationName: 'Other' })).not.toBe(key);
  });

  it('remembers the key of a body as sent, by Accept too, and only for JSON', () => {
    const cache = new ResponseCache();
    const text = JSON.stringify(body);
    expect(cache.knownKey(json, text)).toBeUndefined();
    const key = cache.keyOf('POST', json, body, text)!;
    expect(cache.knownKey(json, text)).toBe(key);
    expect(cache.knownKey({ ...json, accept: 'application/graphql-response+json' }, text)).toBeUndefined();
    expect(cache.knownKey({ 'content-type': 'text/plain' }, text)).toBeUndefined();
    expect(cache.knownKey(json, `${text} `)).toBeUndefined();
    // a body too long to remember still gets its key, by the normalised query
    const long = { ...body, variables: { pad: 'x'.repeat(9000) } };
    const longKey = cache.keyOf('POST', json, long, JSON.stringify(long));
    expect(longKey).not.toBeNull();
    expect(cache.knownKey(json, JSON.stringify(long))).toBeUndefined();
    cache.clear();
    expect(cache.knownKey(json, text)).toBeUndefined();
  });

  it('remembers an empty query text too (Apollo answers it 400; remembering it must not throw)', () => {
    const cache = new ResponseCache();
    const empty = { query: '' };
    expect(() => cache.keyOf('POST', json, empty, JSON.stringify(empty))).not.toThrow();
    expect(cache.knownKey(json, JSON.stringify(empty))).toBe(cache.keyOf('POST', json, empty));
  });

  it('bounds what it remembers before authentication in characters, not only in entries', () => {
    const cache = new ResponseCache();
    const bodyOf = (i: number) => ({ query: `query Q${i} { item(itemId: 1) { name } }`, variables: { pad: `${i}`.padEnd(4000, 'x') } });
    const texts = Array.from({ length: 3000 }, (_, i) => JSON.stringify(bodyOf(i)));
    // 3,000 bodies of about 4 KB: 12 M characters, past the 8 M bound, though under 10,000 entries
    texts.forEach((text, i) => cache.keyOf('POST', json, bodyOf(i), text));
    expect(cache.knownKey(json, texts[0]!)).toBeUndefined();
    expect(cache.knownKey(json, texts.at(-1)!)).toBeDefined();
  });
});
