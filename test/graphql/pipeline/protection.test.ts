import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuthorization } from '../../../src/auth/authorization.js';
import type { Backend } from '../../../src/ports/backend.js';
import { buildClientSchema, getIntrospectionQuery } from 'graphql';
import { DEFAULT_LIMITS, INTROSPECTION_MAX_DEPTH } from '../../../src/config/defaults.js';
import { codeOf, embeddedWithUsers, startTestGateway, type GraphQLResponse, type TestGateway } from '../../helpers/gateway.js';
import { storeKinds } from '../../helpers/stores.js';

const alice = { authorization: basicAuthorization('alice', 'alice-password') };

/** Generous: a refusal must not cost work in proportion to what was asked; the figure is printed. */
const FAST_MS = 1500;

async function timed<T>(run: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  const value = await run();
  return { value, ms: performance.now() - started };
}

const nested = (depth: number): string => `{ item(itemId: 1) { ${'variantItems { '.repeat(depth - 2)}name${' }'.repeat(depth - 2)} } }`;

const cases: [string, string, number][] = [
  ['depth', nested(DEFAULT_LIMITS.maxDepth + 1), DEFAULT_LIMITS.maxDepth],
  ['aliases', `{ ${Array.from({ length: DEFAULT_LIMITS.maxAliases + 1 }, (_, i) => `a${i}: viewer { username }`).join(' ')} }`, DEFAULT_LIMITS.maxAliases],
  ['directives', `{ viewer { ${Array.from({ length: DEFAULT_LIMITS.maxDirectives + 1 }, () => 'username @include(if: true)').join(' ')} } }`, DEFAULT_LIMITS.maxDirectives],
  ['cost', `{ items(itemIds: [${Array.from({ length: 100 }, (_, i) => i + 1).join(',')}]) { postBrowsedProducts(first: 10) { name variantItems { name } } } }`, DEFAULT_LIMITS.maxCost],
];

describe.each(storeKinds.slice(0, 1))('query limits, batching and body size over HTTP ($name store)', (kind) => {
  let gw: TestGateway;
  let dispose: () => Promise<void>;
  beforeAll(async () => {
    const opened = await kind.open();
    dispose = opened.dispose;
    gw = await startTestGateway(await embeddedWithUsers(opened.store), { BODY_LIMIT_BYTES: '65536' });
  });
  afterAll(async () => {
    await gw.stop().catch(() => undefined);
    await dispose();
  });

  it.each(cases)('refuses an operation over the %s limit with 400 QUERY_TOO_COMPLEX, fast', async (limit, query, max) => {
    const { value: response, ms } = await timed(() => gw.gql(query, {}, alice));
    expect(response.status).toBe(400);
    expect(codeOf(response)).toBe('QUERY_TOO_COMPLEX');
    expect(response.body.errors![0]!.extensions).toMatchObject({ limit, max });
    expect(response.body.data).toBeUndefined();
    console.log(`${limit} limit refused in ${ms.toFixed(1)} ms`);
    expect(ms).toBeLessThan(FAST_MS);
  });

  it('accepts an operation at the alias and directive limits', async () => {
    const aliases = Array.from({ length: DEFAULT_LIMITS.maxAliases }, (_, i) => `a${i}: username @include(if: true)`).slice(0, DEFAULT_LIMITS.maxDirectives);
    const response = await gw.gql(`{ viewer { ${aliases.join(' ')} ${Array.from({ length: DEFAULT_LIMITS.maxAliases - aliases.length }, (_, i) => `b${i}: isAdmin`).join(' ')} } }`, {}, alice);
    expect(response.status).toBe(200);
    expect(response.body.errors).toBeUndefined();
    expect(response.body.data).toMatchObject({ viewer: { a0: 'alice', b0: false } });
  });

  it('refuses a document over the token limit without parsing it whole, fast', async () => {
    // about 60 KB of fields: under the body limit, far over 2000 tokens
    const query = `{ viewer { ${'username '.repeat(6500)} } }`;
    const { value: response, ms } = await timed(() => gw.gql(query, {}, alice));
    expect(response.status).toBe(400);
    expect(codeOf(response)).toBe('QUERY_TOO_COMPLEX');
    // said as the other limits are, not as graphql-js's "Syntax Error: Document contains more that 2000 tokens"
    expect(response.body.errors![0]).toMatchObject({
      message: 'Query too complex: the document has more than 2000 tokens, the limit (MAX_TOKENS)',
      extensions: { code: 'QUERY_TOO_COMPLEX', limit: 'tokens', max: 2000 },
    });
    // and alike on GET, where a probe found it
    const got = await fetch(`${gw.url}/graphql?query=${encodeURIComponent(`{ viewer { ${'x '.repeat(2100)} } }`)}`, { headers: { ...alice, 'apollo-require-preflight': 'true' } });
    const gotBody = (await got.json()) as GraphQLResponse['body'];
    expect([got.status, gotBody.errors![0]!.message, gotBody.errors![0]!.extensions!.code]).toEqual([400, 'Query too complex: the document has more than 2000 tokens, the limit (MAX_TOKENS)', 'QUERY_TOO_COMPLEX']);
    console.log(`token limit refused in ${ms.toFixed(1)} ms`);
    expect(ms).toBeLessThan(FAST_MS);
  });

  it('refuses a batch (a JSON array body) with 400', async () => {
    const response = await fetch(`${gw.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...alice },
      body: JSON.stringify([{ query: '{ viewer { username } }' }, { query: '{ viewer { isAdmin } }' }]),
    });
    expect(response.status).toBe(400);
    const body = (await response.json()) as GraphQLResponse['body'];
    expect(body.errors?.[0]?.extensions?.code).toBe('BAD_REQUEST');
    expect(body.data).toBeUndefined();
  });

  it('refuses a body over BODY_LIMIT_BYTES with 413, declared or streamed, fast', async () => {
    const big = JSON.stringify({ query: `{ viewer { username } } # ${'x'.repeat(70_000)}` });
    const { value: declared, ms } = await timed(() =>
      fetch(`${gw.url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: big }),
    );
    expect(declared.status).toBe(413);
    expect(((await declared.json()) as GraphQLResponse['body']).errors?.[0]?.extensions?.code).toBe('BAD_REQUEST');
    expect(ms).toBeLessThan(FAST_MS);
    // no content-length: the limit is enforced while reading
    const streamed = await fetch(`${gw.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: new Blob([big]).stream(),
      duplex: 'half',
    });
    expect(streamed.status).toBe(413);
    // and the REST routes share it
    const rest = await fetch(`${gw.url}/api/v1/apikey`, { method: 'POST', headers: { 'content-type': 'application/json', ...alice }, body: big });
    expect(rest.status).toBe(413);
  });
});

describe.each(storeKinds.slice(0, 1))('development and production ($name store)', (kind) => {
  const gateways: TestGateway[] = [];
  const disposals: (() => Promise<void>)[] = [];
  const start = async (env: Record<string, string>, wrap: (backend: Backend) => Backend = (b) => b): Promise<TestGateway> => {
    const opened = await kind.open();
    disposals.push(opened.dispose);
    const gw = await startTestGateway(wrap(await embeddedWithUsers(opened.store)), env);
    gateways.push(gw);
    return gw;
  };
  afterAll(async () => {
    for (const gw of gateways) await gw.stop().catch(() => undefined);
    for (const dispose of disposals) await dispose();
  });

  let developed: Promise<TestGateway> | undefined;
  /** One development gateway for the cases that only read from it (each start builds the demo shop). */
  const development = (): Promise<TestGateway> => (developed ??= start({}));

  const INTROSPECT = '{ __schema { queryType { name } } }';
  const TYPO = '{ viewr { username } }';

  it('allows introspection and suggestions in development', async () => {
    const dev = await development();
    const schema = await dev.gql(INTROSPECT);
    expect(schema.body.data).toEqual({ __schema: { queryType: { name: 'Query' } } });
    const typo = await dev.gql(TYPO);
    expect(typo.body.errors![0]!.message).toMatch(/Did you mean "viewer"\?/);
  });

  it("answers the introspection query of the IDE and the code generators, anonymous or not, within the default limits", async () => {
    // graphql-js's getIntrospectionQuery nests 15 deep (MAX_DEPTH is 10): GraphiQL, Apollo Sandbox
    // and graphql-codegen send it, and were all refused with QUERY_TOO_COMPLEX
    const dev = await development();
    for (const options of [{}, { descriptions: true, specifiedByUrl: true, directiveIsRepeatable: true, schemaDescription: true, inputValueDeprecation: true, oneOf: true }]) {
      for (const headers of [{}, alice]) {
        const response = await dev.gql(getIntrospectionQuery(options), {}, headers);
        expect([response.status, response.body.errors]).toEqual([200, undefined]);
        const schema = buildClientSchema(response.body.data as never);
        expect(schema.getQueryType()?.getFields().productRecommendations).toBeDefined();
      }
    }
  });

  it('bounds introspection all the same: a chain of ofType past INTROSPECTION_MAX_DEPTH, and lists of types within lists of types', async () => {
    const dev = await development();
    const chain = (levels: number): string => `{ __type(name: "Query") { ${'ofType { '.repeat(levels)}name${' }'.repeat(levels)} } }`;
    const within = await dev.gql(chain(INTROSPECTION_MAX_DEPTH - 2));
    expect([within.status, within.body.errors]).toEqual([200, undefined]);
    const deep = await dev.gql(chain(INTROSPECTION_MAX_DEPTH - 1));
    expect(deep.status).toBe(400);
    expect(codeOf(deep)).toBe('QUERY_TOO_COMPLEX');
    expect(deep.body.errors![0]!.extensions).toMatchObject({ limit: 'introspectionDepth', max: INTROSPECTION_MAX_DEPTH, actual: INTROSPECTION_MAX_DEPTH + 1 });
    // the depth outside introspection is MAX_DEPTH's still, beside an introspection field
    const beside = await dev.gql(`{ __schema { queryType { name } } ${nested(DEFAULT_LIMITS.maxDepth + 1).slice(1, -1)} }`, {}, alice);
    expect([beside.status, beside.body.errors![0]!.extensions]).toMatchObject([400, { limit: 'depth', max: DEFAULT_LIMITS.maxDepth }]);
    // one __schema an operation: aliases of it (a probe's 21 made 2.9 MB an anonymous request), by fragments too
    const fragment = 'fragment T on __Type { fields { type { fields { name } } } }';
    const aliased = await dev.gql(`{ a: __schema { types { ...T } } b: __schema { types { ...T } } } ${fragment}`);
    expect([aliased.status, aliased.body.errors![0]!.extensions]).toMatchObject([400, { code: 'QUERY_TOO_COMPLEX', limit: 'schemaFields', max: 1, actual: 2 }]);
    const spread = await dev.gql('{ ...S ...S2 } fragment S on Query { __schema { queryType { name } } } fragment S2 on Query { s2: __schema { queryType { name } } }');
    expect([spread.status, spread.body.errors![0]!.extensions]).toMatchObject([400, { limit: 'schemaFields', actual: 2 }]);
    const types = await dev.gql('{ a: __type(name: "Query") { name } b: __type(name: "Item") { name } __schema { queryType { name } } }');
    expect([types.status, types.body.errors]).toEqual([200, undefined]);
    // fan-out: graphql-js's MaxIntrospectionDepthRule (fields of types of fields of ... )
    const fanOut = await dev.gql('{ __schema { types { fields { type { fields { type { fields { type { fields { name } } } } } } } } } }');
    expect(fanOut.status).toBe(400);
    expect(codeOf(fanOut)).toBe('GRAPHQL_VALIDATION_FAILED');
    expect(fanOut.body.errors![0]!.message).toMatch(/Maximum introspection depth exceeded/);
  });

  it('turns both off in production, unless INTROSPECTION says otherwise', async () => {
    const prod = await start({ NODE_ENV: 'production' });
    const schema = await prod.gql(INTROSPECT);
    expect(schema.status).toBe(400);
    expect(codeOf(schema)).toBe('GRAPHQL_VALIDATION_FAILED');
    const typo = await prod.gql(TYPO);
    expect(typo.status).toBe(400);
    expect(typo.body.errors![0]!.message).not.toMatch(/Did you mean/);

    const opened = await start({ NODE_ENV: 'production', INTROSPECTION: 'true' });
    expect((await opened.gql(INTROSPECT)).body.data).toEqual({ __schema: { queryType: { name: 'Query' } } });
  });

  it('masks an unexpected error in production: no message, no stack', async () => {
    const prod = await start({ NODE_ENV: 'production' }, (backend) => ({
      ...backend,
      recs: {
        ...backend.recs,
        getItems: () => Promise.reject(new Error('connection string postgres://admin:hunter2@db/secret failed')),
        recommend: backend.recs.recommend.bind(backend.recs),
      },
    }));
    const response = await prod.gql('{ item(itemId: 1) { name } }', {}, alice);
    const text = JSON.stringify(response.body);
    expect(codeOf(response)).toBe('INTERNAL_SERVER_ERROR');
    expect(response.body.errors![0]!.message).toBe('Internal server error');
    expect(text).not.toContain('hunter2');
    expect(text).not.toMatch(/stacktrace|at .*\.ts:/);
  });
});
