import { createHash } from 'node:crypto';
import { makeExecutableSchema } from '@graphql-tools/schema';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuthorization } from '../../../src/auth/authorization.js';
import type { Backend } from '../../../src/ports/backend.js';
import { isJsonContentType } from '../../../src/graphql/pipeline/contentType.js';
import { newResolved, startApollo } from '../../../src/graphql/pipeline/apollo.js';
import { AnswerBudget } from '../../../src/graphql/schema/answerBudget.js';
import type { GatewayContext } from '../../../src/graphql/schema/context.js';
import { executor } from '../../../src/graphql/pipeline/engine.js';
import { Takeover } from '../../../src/graphql/pipeline/takeover.js';
import { MemoryCache } from '../../../src/cache/memory.js';
import { ErrorCode, GatewayError } from '../../../src/errors.js';
import { DEFAULT_LIMITS } from '../../../src/config/defaults.js';
import { queryLimitsRule } from '../../../src/graphql/pipeline/limits.js';
import { silentLogger } from '../../../src/logger.js';
import { gatewayFormatError } from '../../../src/graphql/pipeline/formatError.js';
import { embeddedWithUsers, startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { storeKinds } from '../../helpers/stores.js';
import { propertyRuns } from '../../helpers/runs.js';

// The gateway with its takeover must answer whatever a client sends as Apollo Server alone does:
// the same status, headers and bytes. Generated envelopes, well-formed and not: bodies of every
// JSON shape, variables and operation names of every JSON type, GET and POST, persisted-query
// extensions, queries that fail to parse, validate or a limit, and answers PUBLIC or PRIVATE with
// a maxAge above 0 (so a wrong Cache-Control from the takeover fails).

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

/** A request as a client sends it: the body as text (undefined for none), and the URL's query string. */
interface Envelope {
  method: string;
  headers: Record<string, string>;
  search: string;
  text: string | undefined;
}

/** Arbitrary envelopes over a pool of query texts and operation names. */
function envelopes(queries: readonly string[], names: readonly string[], variables: fc.Arbitrary<unknown>, accepts: readonly string[]): fc.Arbitrary<Envelope> {
  const query = fc.oneof(
    { arbitrary: fc.constantFrom(...queries), weight: 12 },
    { arbitrary: fc.jsonValue({ maxDepth: 1 }), weight: 1 },
    { arbitrary: fc.constant({ kind: 'Document', definitions: [] }), weight: 1 },
  );
  const operationName = fc.oneof({ arbitrary: fc.constantFrom(...names), weight: 4 }, { arbitrary: fc.jsonValue({ maxDepth: 1 }), weight: 1 });
  const anyVariables = fc.oneof({ arbitrary: variables, weight: 4 }, { arbitrary: fc.jsonValue({ maxDepth: 3 }), weight: 2 }, { arbitrary: fc.string({ maxLength: 8 }), weight: 1 });
  /** Absent `absent` times in `absent + present`. */
  const sometimes = <T>(arbitrary: fc.Arbitrary<T>, absent: number, present: number) =>
    fc.oneof({ arbitrary: fc.constant(undefined), weight: absent }, { arbitrary, weight: present });
  const fields = fc
    .record({
      query: sometimes(query, 1, 12),
      variables: sometimes(anyVariables, 1, 1),
      operationName: sometimes(operationName, 3, 2),
      extensions: sometimes(fc.oneof(fc.jsonValue({ maxDepth: 2 }), fc.constant({})), 6, 1),
      persisted: sometimes(fc.constantFrom('hash', 'hash only', 'wrong hash', 'version 2', 'not an object'), 4, 1),
    })
    .map((record) => Object.fromEntries(Object.entries(record).filter(([, value]) => value !== undefined)) as { persisted?: string } & Record<string, unknown>);
  // the fields as a body (or query string) would carry them; `persisted` makes a persistedQuery extension of the query
  const withPersisted = fields.map(({ persisted, ...rest }) => {
    const text = typeof rest.query === 'string' ? rest.query : '';
    const body: Record<string, unknown> = { ...rest };
    if (persisted === 'hash') body.extensions = { persistedQuery: { version: 1, sha256Hash: sha256(text) } };
    if (persisted === 'hash only') {
      delete body.query;
      body.extensions = { persistedQuery: { version: 1, sha256Hash: sha256(text) } };
    }
    if (persisted === 'wrong hash') body.extensions = { persistedQuery: { version: 1, sha256Hash: sha256(`${text} `) } };
    if (persisted === 'version 2') body.extensions = { persistedQuery: { version: 2, sha256Hash: sha256(text) } };
    if (persisted === 'not an object') body.extensions = { persistedQuery: 5 };
    return body;
  });
  const postText = fc.oneof(
    { arbitrary: withPersisted.map((body) => JSON.stringify(body)), weight: 20 },
    { arbitrary: fc.array(withPersisted, { maxLength: 2 }).map((bodies) => JSON.stringify(bodies)), weight: 1 },
    { arbitrary: fc.jsonValue({ maxDepth: 2 }).map((value) => JSON.stringify(value)), weight: 1 },
    { arbitrary: fc.constantFrom('', '{', 'query { x }'), weight: 1 },
  );
  const param = (value: unknown): string => (typeof value === 'string' ? value : JSON.stringify(value));
  const search = fc.tuple(withPersisted, fc.boolean()).map(([body, twice]) => {
    const params = new URLSearchParams();
    for (const [name, value] of Object.entries(body)) {
      if (value === undefined) continue;
      params.append(name, param(value));
      if (twice && name === 'operationName') params.append(name, param(value));
    }
    return `?${params.toString()}`;
  });
  const contentType = fc.oneof(
    { arbitrary: fc.constantFrom('application/json', 'application/json; charset=utf-8', 'application/graphql-response+json'), weight: 4 },
    { arbitrary: fc.constantFrom('text/plain', 'text/plain; charset=utf-8', 'application/x-www-form-urlencoded', 'none', 'nonsense'), weight: 1 },
  );
  const extraHeaders = fc.record({ preflight: fc.boolean(), accept: fc.constantFrom(...accepts) });
  return fc.oneof(
    {
      arbitrary: fc.tuple(postText, contentType, extraHeaders).map(([text, type, extra]): Envelope => ({
        method: 'POST',
        headers: headersOf(type, extra),
        search: '',
        text,
      })),
      weight: 6,
    },
    {
      arbitrary: fc.tuple(search, fc.constantFrom('none', 'none', 'application/json', 'text/plain'), extraHeaders).map(([query, type, extra]): Envelope => ({
        method: 'GET',
        headers: headersOf(type, extra),
        search: query,
        text: undefined,
      })),
      weight: 3,
    },
    {
      arbitrary: fc.tuple(fc.constantFrom('PUT', 'DELETE', 'PATCH'), extraHeaders).map(([method, extra]): Envelope => ({ method, headers: headersOf('application/json', extra), search: '', text: undefined })),
      weight: 1,
    },
  );
}

function headersOf(type: string, { preflight, accept }: { preflight: boolean; accept: string }): Record<string, string> {
  return {
    ...(type === 'none' ? {} : { 'content-type': type }),
    ...(preflight ? { 'apollo-require-preflight': '1' } : {}),
    ...(accept === 'none' ? {} : { accept }),
  };
}

const ACCEPTS = ['none', 'application/json', 'application/graphql-response+json', '*/*', 'application/json, text/plain;q=0.5', 'text/html'];
/** Well-formed requests of every Accept, so the takeover has learnt their answers. */
const warmUps = ACCEPTS.map((accept) => headersOf('application/json', { preflight: false, accept }));

describe.each([
  { name: 'introspection on', introspection: true },
  { name: 'introspection and suggestions off (production)', introspection: false },
])('the takeover against Apollo Server on a schema with every kind of cache hint, $name', ({ introspection }) => {
  const typeDefs = `
    enum CacheControlScope { PUBLIC PRIVATE }
    directive @cacheControl(maxAge: Int, scope: CacheControlScope, inheritMaxAge: Boolean) on FIELD_DEFINITION | OBJECT | INTERFACE | UNION
    type Query {
      shop(id: Int!): Shop @cacheControl(maxAge: 60)
      mine: Int @cacheControl(maxAge: 30, scope: PRIVATE)
      me: Me
      count: Int @cacheControl(maxAge: 120)
      fails: Int @cacheControl(maxAge: 60)
    }
    type Mutation { touch: Int add(items: [ItemIn!]!): Int! }
    input ItemIn { sku: String! n: Int }
    type Shop @cacheControl(maxAge: 300) { name: String price: Int @cacheControl(maxAge: 10) items: [Item!]! }
    type Item @cacheControl(inheritMaxAge: true) { sku: String }
    type Me @cacheControl(maxAge: 0, scope: PRIVATE) { name: String }
  `;
  const resolvers = {
    Query: {
      shop: (_: unknown, { id }: { id: number }) => (id === 0 ? null : { name: 'Corner', price: 5, items: [{ sku: 'a' }] }),
      mine: () => 3,
      me: () => ({ name: 'ann' }),
      count: () => 7,
      fails: () => {
        throw new Error('secret internals');
      },
    },
    Mutation: {
      touch: () => 1,
      add: (_: unknown, { items }: { items: { n?: number | null }[] }) => {
        if (items.length === 0) throw new GatewayError(ErrorCode.BAD_USER_INPUT, 'items: at least one', { field: 'items' });
        return items.reduce((sum, item) => sum + (item.n ?? 1), 0);
      },
    },
  };
  const formatError = gatewayFormatError(silentLogger);
  const options = {
    introspection, cache: new MemoryCache(), formatError,
    parseOptions: { maxTokens: DEFAULT_LIMITS.maxTokens }, validationRules: [queryLimitsRule(DEFAULT_LIMITS)],
  };
  // Apollo wraps the schema it is given: each side, and the takeover, has its own; the persisted
  // queries' cache is shared, so a query registered through one is known to the other
  const schema = () => makeExecutableSchema({ typeDefs, resolvers });
  let apollo: Awaited<ReturnType<typeof startApollo>>;
  let gatewaysApollo: Awaited<ReturnType<typeof startApollo>>;
  const takeover = new Takeover(schema(), 1000);
  let execute: ReturnType<typeof executor>;
  const context = () => ({ resolved: newResolved(), answerBudget: new AnswerBudget(1e9) }) as unknown as GatewayContext;
  const repeated = (field: string, times: number) => `{ ${Array.from({ length: times }, () => field).join(' ')} }`;
  const QUERIES = [
    '{ shop(id: 1) { name items { sku } } }',
    '{ shop(id: 0) { name } }',
    '{ mine }',
    '{ mine count }',
    '{ mine shop(id: 1) { name } }',
    '{ me { name } count }',
    'query Shop($id: Int!) { shop(id: $id) { name } }',
    'query A { count } query B { mine }',
    '{ fails count }',
    '{ shop(id: 1) { price } }',
    '{ __schema { queryType { name } } }',
    'mutation Touch { touch }',
    'mutation Add($items: [ItemIn!]!) { add(items: $items) }',
    'mutation Both($items: [ItemIn!]!) { add(items: $items) touch }',
    '{ nope }',
    '{ shop(id: 1) { nam } }',
    '{ shop(',
    '',
    repeated('count', 11),
    repeated('mine', 11).replace('}', 'nope }'),
    `{ ${'a: count '.repeat(2)} }`,
  ];
  const item = fc.oneof(fc.record({ sku: fc.constantFrom('a', '', 5), n: fc.constantFrom(1, null, 1.5, 'x') }, { requiredKeys: [] }), fc.jsonValue({ maxDepth: 1 }));
  const variables = fc.oneof(
    fc.constant(undefined),
    fc.constant(null),
    fc.record({ id: fc.constantFrom(1, 0, 'one', null, 2 ** 40), items: fc.oneof(fc.array(item, { maxLength: 3 }), item) }, { requiredKeys: [] }),
  );
  const arbitrary = envelopes(QUERIES, ['A', 'B', 'Shop', 'Touch', 'Add', 'Both', 'Nope', ''], variables, ACCEPTS);

  beforeAll(async () => {
    apollo = await startApollo({ ...options, schema: schema() });
    gatewaysApollo = await startApollo({ ...options, schema: schema() });
    execute = executor(gatewaysApollo, takeover);
  });
  afterAll(() => Promise.all([apollo?.stop(), gatewaysApollo?.stop()]));

  async function via(run: ReturnType<typeof executor>, { method, headers, search, text }: Envelope, body: unknown) {
    const answer = await run({ method, headers, search, body }, context());
    if (answer.body === undefined) throw new Error(`not a single result: ${text}`);
    return { status: answer.status, headers: answer.headers, body: answer.body };
  }
  const viaApollo = (envelope: Envelope, body: unknown) => via(executor(apollo, null), envelope, body);
  const viaGateway = (envelope: Envelope, body: unknown) => via(execute, envelope, body);

  it('gives the same answer to generated requests', async () => {
    for (const headers of warmUps) await viaGateway({ method: 'POST', headers, search: '', text: '' }, { query: '{ count }' });
    await fc.assert(
      fc.asyncProperty(arbitrary, async (envelope) => {
        // as src/http/server.ts reads a body: JSON for a JSON type (a body that is not JSON never reaches either path), text otherwise
        let body: unknown = envelope.text;
        if (envelope.text === '') body = undefined;
        else if (envelope.text !== undefined && isJsonContentType(envelope.headers['content-type'])) {
          try {
            body = JSON.parse(envelope.text);
          } catch {
            return;
          }
        }
        const expected = await viaApollo(envelope, body);
        expect(await viaGateway(envelope, body), `${envelope.method} ${envelope.search} ${envelope.text} ${JSON.stringify(envelope.headers)}`).toEqual(expected);
      }),
      { numRuns: propertyRuns(400, 3000) },
    );
    // well-formed queries asked again as they were first asked: the takeover answers them
    const answered = takeover.stats.answered;
    for (const query of QUERIES.slice(0, 11)) {
      for (const headers of warmUps) {
        for (let n = 0; n < 2; n++) {
          const envelope = { method: 'POST', headers, search: '', text: query };
          expect(await viaGateway(envelope, { query }), `${query} ${JSON.stringify(headers)}`).toEqual(await viaApollo(envelope, { query }));
        }
      }
    }
    expect(takeover.stats.answered - answered).toBeGreaterThan(30);
  }, 60_000);
});

describe.each(storeKinds.slice(0, 1))('the gateway with and without the takeover over HTTP, $name store', (kind) => {
  let withPrepared: TestGateway;
  let withoutPrepared: TestGateway;
  let dispose: () => Promise<void>;
  let key: string;

  beforeAll(async () => {
    const opened = await kind.open();
    dispose = opened.dispose;
    const backend: Backend = await embeddedWithUsers(opened.store);
    const shared = Object.assign(Object.create(backend) as Backend, { close: () => Promise.resolve() });
    const env = { RESPONSE_CACHE_MAX_ENTRIES: '0' };
    withPrepared = await startTestGateway(backend, env);
    withoutPrepared = await startTestGateway(shared, { ...env, PREPARED_OPERATIONS_MAX_DOCUMENTS: '0' });
    const created = await withPrepared.gql<{ createApiKey: { key: string } }>('mutation { createApiKey(input: {}) { key } }', {}, { authorization: basicAuthorization('alice', 'alice-password') });
    key = created.body.data!.createApiKey.key;
  });
  afterAll(async () => {
    await withoutPrepared?.stop().catch(() => undefined);
    await withPrepared?.stop().catch(() => undefined);
    await dispose?.();
  });

  async function send(gw: TestGateway, { method, headers, search, text }: Envelope) {
    const response = await fetch(`${gw.url}/graphql${search}`, { method, headers, body: text, signal: AbortSignal.timeout(10_000) });
    const kept = Object.fromEntries([...response.headers].filter(([name]) => !['date', 'x-request-id', 'connection', 'keep-alive'].includes(name)));
    return { status: response.status, headers: kept, body: await response.text() };
  }

  it('gives the same status, headers and bytes to generated requests', async () => {
    const QUERIES = [
      '{ item(itemId: 31000005) { itemId name } }',
      'query Item($id: ItemId!) { item(itemId: $id) { name } }',
      '{ viewer { username } }',
      '{ viewer { username } item(itemId: 31000005) { name } }',
      'query A { item(itemId: 31000005) { name } } query B { viewer { id } }',
      'mutation Make { createApiKey(input: {}) { id } }',
      '{ item(itemId: 31000005) { nme } }',
      '{ item(',
      '',
      `{ ${'viewer { id } '.repeat(12)}}`,
    ];
    const variables = fc.oneof(fc.constant(undefined), fc.record({ id: fc.constantFrom(31000005, '31000005', 'x', null) }, { requiredKeys: [] }));
    const arbitrary = fc.tuple(envelopes(QUERIES, ['A', 'B', 'Item', 'Make', 'Nope'], variables, ACCEPTS), fc.boolean());
    for (const headers of warmUps) {
      for (const gw of [withPrepared, withoutPrepared]) await send(gw, { method: 'POST', headers: { ...headers, authorization: key }, search: '', text: JSON.stringify({ query: '{ viewer { id } }' }) });
    }
    const before = { ...withPrepared.gateway.takeoverStats! };
    await fc.assert(
      fc.asyncProperty(arbitrary, async ([envelope, anonymous]) => {
        // no mutation is sent with a key: both gateways would create one, with different ids
        const sent = { ...envelope, headers: anonymous || /mutation/.test(`${envelope.text}${envelope.search}`) ? envelope.headers : { ...envelope.headers, authorization: key } };
        expect(await send(withPrepared, sent), JSON.stringify(sent)).toEqual(await send(withoutPrepared, sent));
      }),
      { numRuns: propertyRuns(150, 600) },
    );
    // each query asked again exactly as before: the takeover answers, as Apollo would
    for (const query of QUERIES.slice(0, 5)) {
      const sent = { method: 'POST', headers: { 'content-type': 'application/json', authorization: key }, search: '', text: JSON.stringify({ query }) };
      for (let n = 0; n < 2; n++) expect(await send(withPrepared, sent), query).toEqual(await send(withoutPrepared, sent));
    }
    expect(withPrepared.gateway.takeoverStats!.answered - before.answered).toBeGreaterThanOrEqual(3);
  }, 90_000);
});
