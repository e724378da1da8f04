import { createHash } from 'node:crypto';
import { ApolloServer, HeaderMap } from '@apollo/server';
import { makeExecutableSchema } from '@graphql-tools/schema';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuthorization } from '../../src/auth/authorization.js';
import type { Backend } from '../../src/ports/backend.js';
import type { EmbeddedRecs } from '../../src/backends/embedded/recs.js';
import type { ErrorCode} from '../../src/errors.js';
import { badUserInput, GatewayError, notFound } from '../../src/errors.js';
import { COMPILE_AFTER_RUNS, MAX_COMPILED, PreparedOperations } from '../../src/graphql/preparedOperations.js';
import { silentLogger } from '../../src/logger.js';
import { gatewayFormatError } from '../../src/graphql/formatError.js';
import { embeddedWithUsers, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { storeKinds } from '../helpers/stores.js';

// A schema with every kind of cache hint, and resolvers that fail in every way a client can see.
const typeDefs = `
  enum CacheControlScope { PUBLIC PRIVATE }
  directive @cacheControl(maxAge: Int, scope: CacheControlScope, inheritMaxAge: Boolean) on FIELD_DEFINITION | OBJECT | INTERFACE | UNION
  type Query {
    shop(id: Int!): Shop @cacheControl(maxAge: 60)
    me: Me
    count: Int @cacheControl(maxAge: 120)
    fails(code: String!): Int @cacheControl(maxAge: 60)
    crash: Int @cacheControl(maxAge: 60)
    later(ms: Int!): Shop @cacheControl(maxAge: 60)
    required: Int! @cacheControl(maxAge: 60)
    notAnInt: Int @cacheControl(maxAge: 60)
  }
  type Shop @cacheControl(maxAge: 300) {
    name: String
    price: Int @cacheControl(maxAge: 10)
    stock: Stock
    owner: Me
    items: [Item!]!
    holes: [Item!] @cacheControl(maxAge: 300)
  }
  type Stock { level: Int }
  type Item @cacheControl(inheritMaxAge: true) { sku: String }
  type Me @cacheControl(maxAge: 0, scope: PRIVATE) { name: String }
  type Mutation {
    add(items: [ItemIn!]!): Added!
    touch: Int
    hinted: Int @cacheControl(maxAge: 30)
    later(ms: Int!): Int
    pick(p: Pick): Int
    withN(n: Int!): Int
    defaulted(d: Defaulted!): Int
  }
  input ItemIn { sku: String! n: Int }
  input Pick @oneOf { a: Int b: String }
  input Defaulted { n: Int! = 5 }
  type Added { count: Int! skus: [String!]! }
`;
/** What the mutations did, in order: a mutation's root fields run one after another. */
const done: string[] = [];
const shop = {
  name: 'Corner', price: 5, stock: { level: 3 }, owner: { name: 'ann' }, items: [{ sku: 'a' }, { sku: 'b' }], holes: [{ sku: 'c' }, null],
};
const resolvers = {
  Query: {
    shop: (_: unknown, { id }: { id: number }) => (id === 0 ? null : shop),
    me: () => ({ name: 'ann' }),
    count: () => 7,
    fails: (_: unknown, { code }: { code: string }) => {
      if (code === 'NOT_FOUND') throw notFound('No such thing');
      throw new GatewayError(code as ErrorCode, `failed with ${code}`, code === 'RATE_LIMITED' ? { retryAfter: 3 } : {});
    },
    crash: () => {
      throw new TypeError('secret internals at /srv/app.js:12');
    },
    later: async (_: unknown, { ms }: { ms: number }) => {
      await new Promise((resolve) => setTimeout(resolve, ms));
      if (ms > 5) throw notFound('Too late');
      return shop;
    },
    required: () => null,
    notAnInt: () => 'seven',
  },
  Mutation: {
    add: (_: unknown, { items }: { items: { sku: string; n?: number | null }[] }) => {
      done.push(`add ${items.length}`);
      const bad = items.findIndex((item) => item.sku === '');
      if (items.length === 0) throw badUserInput('items: at least one', 'items');
      if (bad >= 0) throw badUserInput(`items[${bad}].sku: must not be empty`, `items[${bad}].sku`);
      return { count: items.reduce((sum, item) => sum + (item.n ?? 1), 0), skus: items.map((item) => item.sku) };
    },
    touch: () => (done.push('touch'), 1),
    hinted: () => 2,
    later: async (_: unknown, { ms }: { ms: number }) => {
      done.push(`start ${ms}`);
      await new Promise((resolve) => setTimeout(resolve, ms));
      done.push(`end ${ms}`);
      return ms;
    },
    pick: (_: unknown, { p }: { p: Record<string, unknown> | null }) => Object.keys(p ?? {}).length,
    withN: (_: unknown, { n }: { n: number }) => n,
    defaulted: (_: unknown, { d }: { d: { n: number } }) => d.n,
  },
};

describe('prepared operations against Apollo Server on the same schema', () => {
  const schema = makeExecutableSchema({ typeDefs, resolvers });
  const formatError = gatewayFormatError(silentLogger);
  const apollo = new ApolloServer({ schema, formatError, includeStacktraceInErrorResponses: false, csrfPrevention: true });
  const prepared = new PreparedOperations({ schema, parseOptions: {}, validationRules: [], formatError });
  const JSON_HEADERS = { 'content-type': 'application/json' };

  beforeAll(async () => {
    await apollo.start();
    prepared.learnContentType({}, 'application/json; charset=utf-8');
    prepared.learnContentType({ accept: 'application/graphql-response+json' }, 'application/graphql-response+json; charset=utf-8');
  });
  afterAll(() => apollo.stop());

  async function viaApollo(body: unknown, headers: Record<string, string> = {}, method = 'POST', search = '') {
    const result = await apollo.executeHTTPGraphQLRequest({
      httpGraphQLRequest: { method, headers: new HeaderMap(Object.entries({ ...JSON_HEADERS, ...headers })), search, body },
      context: () => Promise.resolve({}),
    });
    if (result.body.kind !== 'complete') throw new Error('not a single result');
    return { status: result.status ?? 200, headers: Object.fromEntries(result.headers), body: result.body.string };
  }

  async function viaPreparedOnce(body: unknown, headers: Record<string, string> = {}, method = 'POST', search = '') {
    const request = prepared.prepare(method, { ...JSON_HEADERS, ...headers }, body, search);
    if (request === null) return 'not prepared';
    const answer = await prepared.execute(request, {});
    return answer === null ? 'handed over' : { status: answer.status, headers: answer.headers, body: answer.body };
  }

  /**
   * The answer, which must be the same the first times (graphql-js's execute) and once the
   * operation is compiled (graphql-jit): the runs go on until a compiled one has answered.
   */
  async function viaPrepared(body: Record<string, unknown>, headers: Record<string, string> = {}) {
    const refusedBefore = prepared.stats.refused;
    const first = await viaPreparedOnce(body, headers);
    if (typeof first === 'string') return first;
    if (prepared.stats.refused > refusedBefore) {
      // refused before anything ran: a repeat is answered from what was remembered
      expect(await viaPreparedOnce(body, headers)).toEqual(first);
      return first;
    }
    for (let run = 0; run <= COMPILE_AFTER_RUNS; run++) {
      const compiledBefore = prepared.stats.compiled;
      expect(await viaPreparedOnce(body, headers)).toEqual(first);
      if (prepared.stats.compiled > compiledBefore) return first;
    }
    throw new Error('never compiled');
  }

  it.each([
    ['a root field with its type below it', { query: '{ shop(id: 1) { name } }' }, 'max-age=60, public'],
    ['a root field that resolves to null', { query: '{ shop(id: 0) { name } }' }, 'max-age=60, public'],
    ['inheritMaxAge below a root field', { query: '{ shop(id: 1) { items { sku } } }' }, 'max-age=60, public'],
    ['the lowest maxAge at the root', { query: '{ count shop(id: 1) { name __typename } }' }, 'max-age=60, public'],
    ['a PRIVATE root field', { query: '{ me { name } count }' }, 'no-store'],
    ['fragments', { query: '{ ...Q } fragment Q on Query { shop(id: 1) { ... on Shop { name } } }' }, 'max-age=60, public'],
    ['variables', { query: 'query ($id: Int!) { shop(id: $id) { name } }', variables: { id: 1 } }, 'max-age=60, public'],
    ['the operation named', { query: 'query A { count } query B { me { name } }', operationName: 'B' }, 'no-store'],
    ['a field error with a 401 and its challenge', { query: '{ fails(code: "UNAUTHENTICATED") count }' }, 'no-store'],
    ['a field error with a 429 and Retry-After', { query: '{ fails(code: "RATE_LIMITED") }' }, 'no-store'],
    ['a field error that keeps the 200', { query: '{ fails(code: "NOT_FOUND") count }' }, 'no-store'],
    ['an internal error, masked', { query: '{ crash count }' }, 'no-store'],
    ['fields resolved later, one failing', { query: '{ a: later(ms: 1) { name } b: later(ms: 10) { name } count }' }, 'no-store'],
    ['a null in a non-null field, up to its nullable parent', { query: '{ required count }' }, 'no-store'],
    ['a null in a list of non-null items', { query: '{ shop(id: 1) { holes { sku } } }' }, 'no-store'],
    ['a value its scalar cannot represent', { query: '{ notAnInt count }' }, 'no-store'],
    ['__typename and aliases', { query: '{ s: shop(id: 1) { t: __typename n: name } }' }, 'max-age=60, public'],
    // compiled code is generated from the query: a literal must stay a value, never become code
    ['a string literal written as code', { query: String.raw`{ fails(code: "\"); globalThis.injected = 1; (\"") count }` }, 'no-store'],
    ['a block string written as code', { query: '{ fails(code: """`${globalThis.injected = 1}` */ globalThis.injected = 1; /*""") count }' }, 'no-store'],
    // refused before anything runs, with Apollo's own answer; remembered, never validated twice
    ['a text that does not parse', { query: '{ shop(' }, 'no-store'],
    ['a text that does not validate', { query: '{ nope shop { name } }' }, 'no-store'],
    ['a persisted query whose hash does not match', { query: '{ count }', extensions: { persistedQuery: { version: 1, sha256Hash: 'x' } } }, 'no-store'],
    ['an unknown persisted-query version', { query: '{ count }', extensions: { persistedQuery: { version: 2 } } }, 'no-store'],
    ['an empty query', { query: '' }, 'no-store'],
  ])('answers %s exactly as Apollo does', async (_name, body, cacheControl) => {
    const expected = await viaApollo(body);
    expect(expected.headers['cache-control']).toBe(cacheControl);
    expect(await viaPrepared(body)).toEqual(expected);
    expect((globalThis as { injected?: unknown }).injected).toBeUndefined();
  });

  const ADD = 'mutation Add($items: [ItemIn!]!) { add(items: $items) { count skus } }';
  const TWO = 'mutation Two($items: [ItemIn!]!) { add(items: $items) { count } touch }';
  it.each([
    ['a mutation', { query: ADD, variables: { items: [{ sku: 'a' }, { sku: 'b', n: 2 }] } }, 'no-store', true],
    ['a mutation given one item for its list', { query: ADD, variables: { items: { sku: 'a', n: null } } }, 'no-store', true],
    ['a mutation whose resolver refuses its input (BAD_USER_INPUT naming the field)', { query: ADD, variables: { items: [{ sku: 'a' }, { sku: '' }] } }, 'no-store', true],
    ['a mutation field with a cache hint', { query: 'mutation { hinted }' }, 'max-age=30, public', true],
    ['a mutation through a fragment', { query: 'mutation { ...M } fragment M on Mutation { touch }' }, 'no-store', true],
    // graphql-jit would run the second after the first failed; graphql-js runs it on this path
    ['a mutation of two root fields', { query: TWO, variables: { items: [{ sku: 'a' }] } }, 'no-store', false],
    ['a mutation of two root fields, the first failing', { query: TWO, variables: { items: [] } }, 'no-store', false],
    ['a mutation of one field twice', { query: 'mutation { a: touch b: touch }' }, 'no-store', false],
    // graphql-jit coerces these otherwise (compilesAlike): they stay on graphql-js
    ['a @oneOf input with one field', { query: 'mutation P($p: Pick) { pick(p: $p) }', variables: { p: { a: 1 } } }, 'no-store', false],
    ['a non-null variable left to its default', { query: 'mutation N($n: Int! = 3) { withN(n: $n) }', variables: {} }, 'no-store', false],
    ['a non-null input field left to its default', { query: 'mutation D($d: Defaulted!) { defaulted(d: $d) }', variables: { d: {} } }, 'no-store', false],
  ])('answers %s exactly as Apollo does, and does the same', async (_name, body, cacheControl, compiles) => {
    done.length = 0;
    const expected = await viaApollo(body);
    const didByApollo = [...done];
    expect(expected.headers['cache-control']).toBe(cacheControl);
    const compiledBefore = prepared.stats.compiled;
    for (let run = 0; run <= COMPILE_AFTER_RUNS + 1; run++) {
      done.length = 0;
      expect(await viaPreparedOnce(body)).toEqual(expected);
      expect(done).toEqual(didByApollo);
    }
    expect(prepared.stats.compiled > compiledBefore).toBe(compiles);
  });

  it("runs a mutation's root fields one after another, as Apollo does", async () => {
    const body = { query: 'mutation { a: later(ms: 20) b: later(ms: 1) }' };
    done.length = 0;
    const expected = await viaApollo(body);
    expect(done).toEqual(['start 20', 'end 20', 'start 1', 'end 1']);
    for (let run = 0; run <= COMPILE_AFTER_RUNS; run++) {
      done.length = 0;
      expect(await viaPreparedOnce(body)).toEqual(expected);
      expect(done).toEqual(['start 20', 'end 20', 'start 1', 'end 1']);
    }
  });

  it('hands a mutation whose variables do not coerce back before any resolver runs, compiled or not', async () => {
    const compiledBefore = prepared.stats.compiled;
    for (let run = 0; run <= COMPILE_AFTER_RUNS; run++) await viaPreparedOnce({ query: ADD, variables: { items: [{ sku: 'a' }] } });
    expect(prepared.stats.compiled).toBeGreaterThan(compiledBefore);
    for (const variables of [{}, { items: null }, { items: [{ n: 1 }] }, { items: [{ sku: 'a', extra: 1 }] }, { items: [{ sku: 5 }] }, { items: [null] }, { items: [{ sku: 'a', n: 1.5 }] }]) {
      done.length = 0;
      expect(await viaPreparedOnce({ query: ADD, variables }), JSON.stringify(variables)).toBe('handed over');
      expect(done).toEqual([]);
      expect((await viaApollo({ query: ADD, variables })).status).toBe(400);
    }
    // what graphql-jit would take, and graphql-js refuses: never on the compiled path
    const twoOfOneOf = { query: 'mutation P($p: Pick) { pick(p: $p) }', variables: { p: { a: 1, b: 'x' } } };
    for (let run = 0; run <= COMPILE_AFTER_RUNS + 1; run++) expect(await viaPreparedOnce(twoOfOneOf)).toBe('handed over');
    expect((await viaApollo(twoOfOneOf)).status).toBe(400);
  });

  it('never runs a mutation on a template of its literals (a template runs again when its answer has errors)', async () => {
    const templatedBefore = prepared.stats.templated;
    for (const sku of ['x', 'y', '', 'z']) {
      const body = { query: `mutation { add(items: [{ sku: "${sku}" }]) { count } }` };
      done.length = 0;
      const expected = await viaApollo(body);
      expect(done).toEqual(['add 1']);
      done.length = 0;
      expect(await viaPreparedOnce(body)).toEqual(expected);
      expect(done).toEqual(['add 1']);
    }
    expect(prepared.stats.templated).toBe(templatedBefore);
  });

  it('keeps the content type Apollo chose for the Accept header, and leaves unknown ones to Apollo', async () => {
    const body = { query: '{ count }' };
    const accept = { accept: 'application/graphql-response+json' };
    expect(await viaPrepared(body, accept)).toEqual(await viaApollo(body, accept));
    expect(await viaPrepared(body, { accept: 'text/plain' })).toBe('not prepared');
  });

  it.each([
    ['a hint below the root lower than the root', '{ shop(id: 1) { price } }'],
    ['a composite field without a hint below the root', '{ shop(id: 1) { stock { level } } }'],
    ['a PRIVATE field below the root', '{ shop(id: 1) { owner { name } } }'],
    ['@include', '{ shop(id: 1) @include(if: true) { name } }'],
    ['@skip in a fragment', '{ ... @skip(if: false) { count } }'],
    ['introspection', '{ __schema { queryType { name } } }'],
    ['an operation name the document does not have', 'query A { count }'],
    ['an operation not named when the document has two', 'query A { count } query B { count }'],
  ])('leaves %s to Apollo', async (_name, query) => {
    expect(await viaPrepared({ query, ...(query === 'query A { count }' ? { operationName: 'B' } : {}) })).toBe('not prepared');
  });

  it.each([
    ['variables as a string', { query: '{ count }', variables: 'x' }],
    ['variables as an array', { query: '{ count }', variables: [1] }],
    ['variables as a number', { query: '{ count }', variables: 1 }],
    ['an operation name of a number', { query: '{ count }', operationName: 5 }],
    ['an operation name of an object', { query: '{ count }', operationName: {} }],
    ['extensions as a string', { query: '{ count }', extensions: '{}' }],
    ['extensions as an array', { query: '{ count }', extensions: [] }],
    ['a query of a number', { query: 5 }],
    ['a query of a parsed document', { query: { kind: 'Document', definitions: [] } }],
    ['an empty body', {}],
    ['a batch', [{ query: '{ count }' }]],
  ])('never answers %s otherwise than Apollo', async (_name, body) => {
    const expected = await viaApollo(body);
    expect(expected.status).toBe(400);
    const answer = await viaPreparedOnce(body);
    if (typeof answer !== 'string') expect(answer).toEqual(expected);
  });

  it('leaves persisted queries, batches, GET queries and other content types to Apollo', () => {
    const query = '{ count }';
    const sha256Hash = createHash('sha256').update(query).digest('hex');
    expect(prepared.prepare('POST', JSON_HEADERS, { query, extensions: { persistedQuery: { version: 1, sha256Hash } } })).toBeNull();
    expect(prepared.prepare('POST', JSON_HEADERS, { extensions: { persistedQuery: { version: 1, sha256Hash } } })).toBeNull();
    expect(prepared.prepare('POST', JSON_HEADERS, [{ query }])).toBeNull();
    expect(prepared.prepare('GET', {}, undefined, `?query=${encodeURIComponent(query)}`)).toBeNull();
    expect(prepared.prepare('POST', { 'content-type': 'text/plain' }, { query })).toBeNull();
    expect(prepared.prepare('POST', JSON_HEADERS, { query })).not.toBeNull();
  });

  it.each([
    ['a mutation', '?query=mutation%20%7B%20touch%20%7D'],
    ['a text that does not validate', '?query=%7B%20nope%20%7D'],
    ['no query', '?operationName=A'],
  ])('answers a GET of %s exactly as Apollo does', async (_name, search) => {
    const expected = await viaApollo(undefined, {}, 'GET', search);
    expect(expected.status).toBeGreaterThanOrEqual(400);
    expect(await viaPreparedOnce(undefined, {}, 'GET', search)).toEqual(expected);
  });

  it('hands a request whose variables do not coerce back before any resolver runs', async () => {
    const body = { query: 'query ($id: Int!) { shop(id: $id) { name } }', variables: { id: 'one' } };
    expect(await viaPrepared(body)).toBe('handed over');
    expect((await viaApollo(body)).status).toBe(400);
  });

  it('keeps a bounded number of compiled operations; one dropped runs on graphql-js until it comes back often enough', async () => {
    const fresh = new PreparedOperations({ schema, parseOptions: {}, validationRules: [], formatError });
    fresh.learnContentType({}, 'application/json; charset=utf-8');
    const run = async (query: string) => {
      const compiledBefore = fresh.stats.compiled;
      const answer = await fresh.execute(fresh.prepare('POST', JSON_HEADERS, { query })!, {});
      expect(answer?.body).toBe('{"data":{"count":7}}\n');
      return fresh.stats.compiled > compiledBefore;
    };
    const queries = Array.from({ length: MAX_COMPILED + 1 }, (_, n) => `query Q${n} { count }`);
    for (const query of queries) {
      for (let n = 0; n < COMPILE_AFTER_RUNS; n++) expect(await run(query)).toBe(false);
      expect(await run(query)).toBe(true);
    }
    // the first was dropped for the last: it counts its runs again before it is compiled again
    for (let n = 0; n < COMPILE_AFTER_RUNS; n++) expect(await run(queries[0]!)).toBe(false);
    expect(await run(queries[0]!)).toBe(true);
    // the most recent ones are still compiled
    expect(await run(queries[MAX_COMPILED]!)).toBe(true);
  });

  it('remembers a bounded number of operation names per document', () => {
    const query = 'query A { count }';
    for (let n = 0; n < 40; n++) prepared.prepare('POST', JSON_HEADERS, { query, operationName: `N${n}` });
    expect(prepared.prepare('POST', JSON_HEADERS, { query, operationName: 'A' })).toBeNull();
    // the document as such is still prepared for a name it has
    expect(prepared.prepare('POST', JSON_HEADERS, { query: 'query A { count } ', operationName: 'A' })).not.toBeNull();
  });
});

describe.each(storeKinds.slice(0, 1))('the gateway with and without prepared operations, $name store', (kind) => {
  let withPrepared: TestGateway;
  let withoutPrepared: TestGateway;
  let dispose: () => Promise<void>;
  let anchor: number;
  const alice = { authorization: basicAuthorization('alice', 'alice-password') };

  beforeAll(async () => {
    const opened = await kind.open();
    dispose = opened.dispose;
    const backend: Backend = await embeddedWithUsers(opened.store);
    const recs = backend.recs as EmbeddedRecs;
    anchor = [...recs.catalog.values()].map((item) => item.itemId).find((id) => recs.recommendNow('NEXT_BEST_PRODUCT', id).entries.length === 10)!;
    // one backend behind both; only the first gateway closes it
    const shared = Object.assign(Object.create(backend) as Backend, { close: () => Promise.resolve() });
    const env = { RESPONSE_CACHE_MAX_ENTRIES: '0' };
    withPrepared = await startTestGateway(backend, env);
    withoutPrepared = await startTestGateway(shared, { ...env, PREPARED_OPERATIONS_MAX_DOCUMENTS: '0' });
  });
  afterAll(async () => {
    await withoutPrepared?.stop().catch(() => undefined);
    await withPrepared?.stop().catch(() => undefined);
    await dispose();
  });

  async function post(gw: TestGateway, body: unknown, headers: Record<string, string>) {
    const response = await fetch(`${gw.url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
    const kept = Object.fromEntries([...response.headers].filter(([name]) => !['date', 'x-request-id', 'connection', 'keep-alive'].includes(name)));
    return { status: response.status, headers: kept, body: await response.text() };
  }

  /**
   * Each case sent to both gateways in rounds, the answers compared, until the operations have run
   * on graphql-js's execute and then compiled; the prepared path's stats, as they were before the
   * rounds and before the last.
   */
  async function sameAnswersInRounds(cases: [unknown, Record<string, string>][]) {
    const stats = withPrepared.gateway.preparedStats!;
    const before = { ...stats };
    const rounds = COMPILE_AFTER_RUNS + 1;
    let lastRound = before;
    for (let round = 0; round < rounds; round++) {
      lastRound = { ...stats };
      for (const [body, headers] of cases) {
        expect(await post(withPrepared, body, headers), JSON.stringify(body)).toEqual(await post(withoutPrepared, body, headers));
      }
    }
    return { stats, before, lastRound, rounds };
  }

  it('gives the same status, headers and bytes, and answers repeats without Apollo', async () => {
    const cases: [unknown, Record<string, string>][] = [
      [{ query: 'query R($id: ItemId!) { productRecommendations(itemId: $id) { itemId name salePrice } }', variables: { id: anchor } }, alice],
      [{ query: 'query R($id: ItemId!) { postBrowsedProducts(itemId: $id, first: 3) { itemId variantItems { itemId color } } }', variables: { id: anchor } }, alice],
      [{ query: '{ item(itemId: 5000000001) { name } }' }, alice],
      [{ query: '{ viewer { username authenticatedBy } item(itemId: 31000005) { name } }' }, alice],
      [{ query: '{ viewer { username } }' }, {}],
      [{ query: 'query R($id: ItemId!) { item(itemId: $id) { name } }', variables: { id: 'not an id' } }, alice],
      [{ query: '{ item(itemId: 31000005) { nme } }' }, alice],
    ];
    // the first answer of each teaches the prepared path the content type for this Accept
    for (const [body, headers] of cases) await post(withPrepared, body, headers);
    const { stats, before, lastRound, rounds } = await sameAnswersInRounds(cases);
    // five answered without Apollo in each round, by compiled code in the last; the variable
    // that is no item id went back to Apollo; the field that does not exist never reached the
    // prepared path
    expect(stats.answered - before.answered).toBe(5 * rounds);
    expect(stats.compiled - lastRound.compiled).toBe(5);
    expect(stats.handedOver - before.handedOver).toBe(rounds);
    expect(withoutPrepared.gateway.preparedStats).toBeNull();
  });

  it('gives the same answers to recordEvents, upsertItems, createApiKey and deleteApiKey, and answers repeats without Apollo', async () => {
    const root = { authorization: basicAuthorization('root', 'root-password') };
    const bob = { authorization: basicAuthorization('bob@corp.example', 'bob-password') };
    const RECORD = 'mutation Record($events: [EventInput!]!) { recordEvents(events: $events) { accepted itemsWithoutRecord } }';
    const UPSERT = 'mutation Upsert($items: [ItemInput!]!) { upsertItems(items: $items) { upserted } }';
    const view = { kind: 'VIEW', itemId: anchor, sessionId: 'prepared-1', time: new Date(Date.now() - 60_000).toISOString() };
    const events = [view, { kind: 'PURCHASE', itemId: anchor, orderId: 'prepared-o-1' }];
    const cases: [unknown, Record<string, string>][] = [
      [{ query: RECORD, variables: { events } }, root],
      // BAD_USER_INPUT naming the event and its field, from the resolver
      [{ query: RECORD, variables: { events: [view, { kind: 'VIEW', itemId: anchor }] } }, root],
      [{ query: RECORD, variables: { events } }, alice],
      [{ query: UPSERT, variables: { items: [{ itemId: 5000000002, name: 'Prepared item', salePrice: 9.5 }] } }, root],
      [{ query: UPSERT, variables: { items: [{ itemId: 5000000002, name: ' ' }] } }, root],
      [{ query: 'mutation Make { createApiKey(input: {}) { ok } }' }, bob],
      [{ query: 'mutation Drop($id: ID!) { deleteApiKey(id: $id) { ok result } }', variables: { id: '00000000-0000-4000-8000-000000000000' } }, bob],
      // two root fields: the second never runs after the first failed (graphql-js's execute, not compiled)
      [{ query: 'mutation Both($id: ID!) { a: deleteApiKey(id: $id) { ok } b: deleteApiKey(id: $id) { ok } }', variables: { id: '00000000-0000-4000-8000-000000000000' } }, bob],
      // variables that do not coerce: Apollo's 400
      [{ query: RECORD, variables: { events: [{ ...view, kind: 'LOOK' }] } }, root],
      [{ query: RECORD, variables: { events: [{ ...view, time: '2026-13-01' }] } }, root],
    ];
    // the first answer of each teaches the prepared path the content type for this Accept
    const answers: Awaited<ReturnType<typeof post>>[] = [];
    for (const [body, headers] of cases) answers.push(await post(withPrepared, body, headers));
    expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200, 200, 200, 200, 200, 200, 400, 400]);
    expect(answers.map((answer) => (JSON.parse(answer.body) as { errors?: { extensions: { code: string } }[] }).errors?.[0]?.extensions.code)).toEqual([
      undefined, 'BAD_USER_INPUT', 'FORBIDDEN', undefined, 'BAD_USER_INPUT', undefined, 'NOT_FOUND', 'NOT_FOUND', 'BAD_USER_INPUT', 'BAD_USER_INPUT',
    ]);
    expect(answers[1]!.body).toContain('events[1].sessionId');
    const { stats, before, lastRound, rounds } = await sameAnswersInRounds(cases);
    // eight answered without Apollo in each round, all but the one of two root fields by compiled code in the last
    expect(stats.answered - before.answered).toBe(8 * rounds);
    expect(stats.compiled - lastRound.compiled).toBe(7);
    expect(stats.handedOver - before.handedOver).toBe(2 * rounds);
  });

  it('names and counts a prepared mutation as Apollo does', async () => {
    const body = { query: 'mutation PreparedUpsert($items: [ItemInput!]!) { upsertItems(items: $items) { upserted } }', variables: { items: [{ itemId: 5000000003, name: 'Counted' }] } };
    const root = { authorization: basicAuthorization('root', 'root-password') };
    const answeredBefore = withPrepared.gateway.preparedStats!.answered;
    for (let n = 0; n < 3; n++) await post(withPrepared, body, root);
    expect(withPrepared.gateway.preparedStats!.answered - answeredBefore).toBe(3);
    const metrics = await (await fetch(`${withPrepared.url}/metrics`)).text();
    expect(metrics).toMatch(/recs_gateway_graphql_requests_total\{operation="PreparedUpsert",outcome="ok"\} 3/);
  });

  it('counts prepared answers in /metrics under the operation name', async () => {
    const body = { query: 'query PreparedMetric($id: ItemId!) { item(itemId: $id) { name } }', variables: { id: anchor } };
    await post(withPrepared, body, alice);
    await post(withPrepared, body, alice);
    const metrics = await (await fetch(`${withPrepared.url}/metrics`)).text();
    expect(metrics).toMatch(/recs_gateway_graphql_requests_total\{operation="PreparedMetric",outcome="ok"\} 2/);
  });
});
