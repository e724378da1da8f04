import { ApolloServer, HeaderMap } from '@apollo/server';
import { makeExecutableSchema } from '@graphql-tools/schema';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuthorization } from '../../src/auth/authorization.js';
import type { EmbeddedRecs } from '../../src/backends/embedded/recs.js';
import type { Backend } from '../../src/ports/backend.js';
import { notFound } from '../../src/errors.js';
import { COMPILE_AFTER_RUNS, PreparedOperations } from '../../src/graphql/preparedOperations.js';
import { signatureOf } from '../../src/graphql/literalTemplates.js';
import { silentLogger } from '../../src/logger.js';
import { ItemIdScalar } from '../../src/graphql/scalars.js';
import { gatewayFormatError } from '../../src/graphql/formatError.js';
import { embeddedWithUsers, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { storeKinds } from '../helpers/stores.js';

const typeDefs = `
  enum CacheControlScope { PUBLIC PRIVATE }
  directive @cacheControl(maxAge: Int, scope: CacheControlScope, inheritMaxAge: Boolean) on FIELD_DEFINITION | OBJECT | INTERFACE | UNION
  scalar ItemId
  type Query {
    shop(id: Int!): Shop @cacheControl(maxAge: 60)
    byItem(itemId: ItemId!): Shop @cacheControl(maxAge: 60)
    byItems(itemIds: [ItemId!]!): [Shop]! @cacheControl(maxAge: 60)
    echo(text: String, ratio: Float): String @cacheControl(maxAge: 60)
  }
  type Shop @cacheControl(maxAge: 300) { id: String name: String }
`;
const shopOf = (id: number | string) => {
  if (Number(id) >= 900) throw notFound(`No shop ${id}`);
  return { id: String(id), name: `shop ${id}` };
};
const resolvers = {
  ItemId: ItemIdScalar,
  Query: {
    shop: (_: unknown, { id }: { id: number }) => shopOf(id),
    byItem: (_: unknown, { itemId }: { itemId: number }) => shopOf(itemId),
    byItems: (_: unknown, { itemIds }: { itemIds: number[] }) => itemIds.map((id) => (id >= 900 ? null : shopOf(id))),
    echo: (_: unknown, args: { text?: string | null; ratio?: number | null }) => `${typeof args.text}:${args.text}:${args.ratio}`,
  },
};

describe('inline literals share one prepared document, with the answers of their own', () => {
  const schema = makeExecutableSchema({ typeDefs, resolvers });
  const formatError = gatewayFormatError(silentLogger);
  const apollo = new ApolloServer({ schema, formatError, includeStacktraceInErrorResponses: false, csrfPrevention: true });
  const JSON_HEADERS = { 'content-type': 'application/json' };
  let prepared: PreparedOperations;

  beforeAll(() => apollo.start());
  afterAll(() => apollo.stop());

  async function viaApollo(query: string) {
    const result = await apollo.executeHTTPGraphQLRequest({
      httpGraphQLRequest: { method: 'POST', headers: new HeaderMap(Object.entries(JSON_HEADERS)), search: '', body: { query } },
      context: () => Promise.resolve({}),
    });
    if (result.body.kind !== 'complete') throw new Error('not a single result');
    return { status: result.status ?? 200, headers: Object.fromEntries(result.headers), body: result.body.string };
  }

  async function viaPrepared(query: string) {
    const request = prepared.prepare('POST', JSON_HEADERS, { query });
    if (request === null) return 'not prepared';
    const answer = await prepared.execute(request, {});
    return answer === null ? 'handed over' : { status: answer.status, headers: answer.headers, body: answer.body };
  }

  beforeAll(() => {
    prepared = new PreparedOperations({ schema, parseOptions: { maxTokens: 2000 }, validationRules: [], formatError });
    prepared.learnContentType({}, 'application/json; charset=utf-8');
  });

  it('answers texts that differ in their literals from one template, compiled once it comes back, as Apollo does', async () => {
    const before = { ...prepared.stats };
    const texts = Array.from({ length: COMPILE_AFTER_RUNS + 5 }, (_, n) => `{ byItem(itemId: ${100 + n * 7}) { id name } }`);
    for (const query of texts) expect(await viaPrepared(query)).toEqual(await viaApollo(query));
    expect(prepared.templateCount).toBe(1);
    expect(prepared.stats.templated - before.templated).toBe(texts.length);
    // the later ones ran on the template's compiled code
    expect(prepared.stats.compiled - before.compiled).toBeGreaterThan(0);
  });

  it.each([
    ['an Int, as a string', ['{ shop(id: 1) { name } }', '{ shop(id: "1") { name } }']],
    ['an Int, out of range', ['{ shop(id: 2) { name } }', '{ shop(id: 3000000000) { name } }']],
    ['an Int, as a float', ['{ shop(id: 3) { name } }', '{ shop(id: 3.5) { name } }']],
    ['an ItemId of 17 digits', ['{ byItem(itemId: 31000123) { name } }', '{ byItem(itemId: 12345678901234567) { name } }']],
    ['an ItemId of letters', ['{ byItem(itemId: "31000123") { name } }', '{ byItem(itemId: "abc") { name } }']],
    ['an ItemId in a list', ['{ byItems(itemIds: [1, 2]) { name } }', '{ byItems(itemIds: [1, "x"]) { name } }']],
  ])('refuses a bad literal (%s) with Apollo\'s own error, after a good one made the template', async (_name, [good, bad]) => {
    expect(await viaPrepared(good!)).toEqual(await viaApollo(good!));
    const expected = await viaApollo(bad!);
    expect(expected.body).toContain('GRAPHQL_VALIDATION_FAILED');
    expect(await viaPrepared(bad!)).toEqual(expected);
    // and the good ones still answer
    expect(await viaPrepared(good!)).toEqual(await viaApollo(good!));
  });

  it.each([
    ['a field error after a longer literal (its location moves)', ['{ byItem(itemId: 1) { name } b: byItem(itemId: 950) { name } }', '{ byItem(itemId: 12345) { name } b: byItem(itemId: 950) { name } }']],
    ['a null in a list of items', ['{ byItems(itemIds: [1, 2, 3]) { name } }', '{ byItems(itemIds: [1, 901, 3]) { name } }']],
    ['strings, block strings and floats', ['{ echo(text: "a", ratio: 1.5) }', '{ echo(text: """b\n  c""", ratio: 2) }']],
    ['a string written as code', ['{ echo(text: "a") }', String.raw`{ echo(text: "\"); globalThis.injected = 1; (\"") }`]],
    ['one field twice with one literal, then with two', ['{ a: shop(id: 1) { name } a: shop(id: 1) { name } }', '{ a: shop(id: 1) { name } a: shop(id: 2) { name } }']],
    ['a variable of the client beside literals', ['query Q($t: String) { echo(text: $t, ratio: 1) }', 'query Q($t: String) { echo(text: $t, ratio: 3) }']],
  ])('answers %s exactly as Apollo does', async (_name, texts) => {
    for (let round = 0; round <= COMPILE_AFTER_RUNS; round++) {
      for (const query of texts) expect(await viaPrepared(query)).toEqual(await viaApollo(query));
    }
    expect((globalThis as { injected?: unknown }).injected).toBeUndefined();
  });

  it('gives signatures that keep literal kinds, names and structure apart', () => {
    const key = (query: string) => signatureOf(query, 2000)?.key;
    expect(key('{ shop(id: 1) { name } }')).toBe(key('{shop(id:22){name}}'));
    expect(key('{ shop(id: 1) { name } }')).not.toBe(key('{ shop(id: "1") { name } }'));
    expect(key('{ byItems(itemIds: [1]) { name } }')).not.toBe(key('{ byItems(itemIds: [1, 2]) { name } }'));
    expect(key('{ a b(x: 1) }')).not.toBe(key('{ ab(x: 1) }'));
    expect(key('{ shop { name } }')).toBeUndefined();
    expect(signatureOf('{ shop(id: 1) { name } }', 5)).toBeNull();
  });
});

describe.each(storeKinds.slice(0, 1))('the gateway with inline literals, $name store', (kind) => {
  let gateway: TestGateway;
  let reference: TestGateway;
  let dispose: () => Promise<void>;
  let anchors: number[];
  const alice = { authorization: basicAuthorization('alice', 'alice-password') };

  beforeAll(async () => {
    const opened = await kind.open();
    dispose = opened.dispose;
    const backend: Backend = await embeddedWithUsers(opened.store);
    const recs = backend.recs as EmbeddedRecs;
    anchors = [...recs.catalog.values()].map((item) => item.itemId).filter((id) => recs.recommendNow('NEXT_BEST_PRODUCT', id).entries.length === 10).slice(0, 4);
    const shared = Object.assign(Object.create(backend) as Backend, { close: () => Promise.resolve() });
    gateway = await startTestGateway(backend);
    // no prepared path, no response cache: every answer Apollo's own
    reference = await startTestGateway(shared, { PREPARED_OPERATIONS_MAX_DOCUMENTS: '0', RESPONSE_CACHE_MAX_ENTRIES: '0' });
  });
  afterAll(async () => {
    await reference?.stop().catch(() => undefined);
    await gateway?.stop().catch(() => undefined);
    await dispose();
  });

  async function post(gw: TestGateway, query: string) {
    const response = await fetch(`${gw.url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json', ...alice }, body: JSON.stringify({ query }) });
    const kept = Object.fromEntries([...response.headers].filter(([name]) => !['date', 'x-request-id', 'connection', 'keep-alive', 'age'].includes(name)));
    return { status: response.status, headers: kept, body: await response.text() };
  }

  it('answers each anchor written into the text as Apollo does, from one template, and caches each answer under its own literal', async () => {
    const stats = gateway.gateway.preparedStats!;
    const texts = [
      ...anchors.map((id) => `{ productRecommendations(itemId: ${id}, first: 3) { itemId name salePrice } }`),
      '{ productRecommendations(itemId: 31000123, first: 3) { itemId name } item(itemId: 4) { name } }',
      '{ item(itemId: "not an id") { name } }',
      '{ productRecommendations(itemId: 31000123, first: 30) { itemId } }',
      `{ items(itemIds: [${anchors.join(', ')}, 99999]) { itemId name } }`,
    ];
    // the first answer teaches the prepared path the content type
    await post(gateway, texts[0]!);
    const before = { ...stats };
    for (let round = 0; round < 2; round++) {
      for (const query of texts) expect(await post(gateway, query), query).toEqual(await post(reference, query));
    }
    // the anchors' texts (every round but the first of the first, served from the response cache after) from the template
    expect(stats.templated - before.templated).toBeGreaterThanOrEqual(anchors.length - 1);
    const bodies = await Promise.all(anchors.map(async (id) => (await post(gateway, `{ productRecommendations(itemId: ${id}, first: 3) { itemId } }`)).body));
    expect(new Set(bodies).size).toBe(anchors.length);
  });
});
