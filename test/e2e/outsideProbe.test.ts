import { getIntrospectionQuery, getNamedType, isLeafType, type GraphQLObjectType } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuthorization } from '../../src/auth/authorization.js';
import { buildGatewaySchema } from '../../src/graphql/schema/schema.js';
import { typeAliasesQuery } from '../helpers/attacks.js';
import { codeOf, embeddedWithUsers, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { storeKinds } from '../helpers/stores.js';

// Issue 41: what an outside probe of `npm start` still made work against the GraphQL route, each
// over real HTTP on the embedded backend, bounded in requests, with a valid client answered too.

const alice = basicAuthorization('alice', 'alice-password');
const root = basicAuthorization('root', 'root-password');
const ITEM = 31000005;
/** Ten more items of the demo shop. */
const CACHED = `{ item(itemId: ${ITEM}) { itemId name } }`;

/** A gateway over the demo shop on a fresh SQLite store, with `env`; stopped with its store. */
async function gatewayWith(env: Record<string, string> = {}): Promise<TestGateway & { dispose(): Promise<void> }> {
  const opened = await storeKinds[0]!.open();
  const gateway = await startTestGateway(await embeddedWithUsers(opened.store), env);
  return {
    ...gateway,
    async dispose() {
      await gateway.stop();
      await opened.dispose();
    },
  };
}


describe('introspection (finding 1)', () => {
  let gw: Awaited<ReturnType<typeof gatewayWith>>;
  beforeAll(async () => {
    gw = await gatewayWith();
  });
  afterAll(() => gw.dispose());

  it('refuses an anonymous body whose __type aliases multiply the answer, on both paths, and answers the standard query and a valid key', async () => {
    const full = getIntrospectionQuery({ descriptions: true, specifiedByUrl: true, directiveIsRepeatable: true, schemaDescription: true, inputValueDeprecation: true, oneOf: true });
    // five aliases are within MAX_TYPE_FIELDS, and what they answer is not
    const five = typeAliasesQuery(5);
    // Apollo answers first; the takeover answers the same query after
    for (const path of ['apollo', 'prepared']) {
      const refused = await gw.gql(typeAliasesQuery(30));
      expect(refused.status, path).toBe(400);
      expect(codeOf(refused)).toBe('QUERY_TOO_COMPLEX');
      expect(refused.body.errors?.[0]?.message).toContain('typeFields 30 exceeds the limit of 5');
      const counted = await gw.gql(five);
      expect(counted.status, path).toBe(400);
      expect(counted.body.errors?.[0]?.extensions).toMatchObject({ code: 'QUERY_TOO_COMPLEX', limit: 'introspectionCost', max: 10_000 });
      expect(counted.body.errors?.[0]?.message).toContain('MAX_INTROSPECTION_COST');
      const standard = await gw.gql<{ __schema: { types: unknown[] } }>(full);
      expect(standard.status, path).toBe(200);
      expect(standard.body.data?.__schema.types.length).toBeGreaterThan(20);
    }
    const valid = await gw.gql<{ item: { itemId: number } }>(CACHED, undefined, { authorization: alice });
    expect(valid.body.data?.item.itemId).toBe(ITEM);
  });
});

describe('the bytes an answer holds (finding 3)', () => {
  let gw: Awaited<ReturnType<typeof gatewayWith>>;
  const ids = Array.from({ length: 100 }, (_, i) => 900_001 + i);
  // records with a long text each: 8,000 two-byte characters, 16 KB of JSON
  const records = ids.map((itemId) => ({ itemId, name: `Long ${itemId}`, longDescription: 'é'.repeat(8000) }));
  const ALIASED = `query($ids: [ItemId!]!) { ${Array.from({ length: 30 }, (_, i) => `a${i}: items(itemIds: $ids) { longDescription }`).join(' ')} }`;
  const leaves = (() => {
    const item = buildGatewaySchema({ introspection: true }).getType('Item') as GraphQLObjectType;
    return Object.values(item.getFields()).filter((field) => field.args.length === 0 && isLeafType(getNamedType(field.type))).map((field) => field.name);
  })();

  beforeAll(async () => {
    gw = await gatewayWith();
    const stored = await gw.gql('mutation($items: [ItemInput!]!) { upsertItems(items: $items) { upserted } }', { items: records }, { authorization: root });
    expect(stored.body.data).toEqual({ upsertItems: { upserted: 100 } });
  });
  afterAll(() => gw.dispose());

  it('refuses aliases of items over long records with QUERY_TOO_COMPLEX before the answer is built, and answers a valid key meanwhile', async () => {
    const started = performance.now();
    const [refused, cached] = await Promise.all([
      fetch(`${gw.url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: alice }, body: JSON.stringify({ query: ALIASED, variables: { ids } }) }),
      gw.gql<{ item: { itemId: number } }>(CACHED, undefined, { authorization: alice }),
    ]);
    const text = await refused.text();
    // 30 x 100 records of 16 KB: 48 MB before
    expect(text.length).toBeLessThan(64 * 1024);
    const body = JSON.parse(text) as { data: unknown; errors: { extensions: { code: string } }[] };
    expect(body.errors[0]!.extensions.code).toBe('QUERY_TOO_COMPLEX');
    expect(body.data).toBeNull();
    expect(performance.now() - started).toBeLessThan(10_000);
    expect(cached.body.data?.item.itemId).toBe(ITEM);
  });

  it('answers 100 items with every field once, and keeps an answer over a 64th of the response cache out of it', async () => {
    const query = `query($ids: [ItemId!]!) { items(itemIds: $ids) { ${leaves.join(' ')} } }`;
    const stats = gw.gateway.responseCacheStats!;
    const before = { ...stats };
    for (let i = 0; i < 2; i++) {
      const answer = await gw.gql<{ items: { itemId: number; longDescription: string }[] }>(query, { ids }, { authorization: alice });
      expect(answer.status).toBe(200);
      expect(answer.body.data?.items.map((item) => item.itemId)).toEqual(ids);
      expect(answer.body.data?.items[99]?.longDescription).toHaveLength(8000);
    }
    // 1.6 MB, over a 64th of RESPONSE_CACHE_MAX_BYTES (64 MiB): asked twice, computed twice
    expect(stats.oversized - before.oversized).toBe(2);
    expect(stats.stored).toBe(before.stored);
    expect(stats.hits).toBe(before.hits);
    // a small answer is still kept
    await gw.gql(`{ items(itemIds: [${ids[0]}]) { itemId name } }`, undefined, { authorization: alice });
    expect(stats.stored).toBe(before.stored + 1);
  });
});

describe('new documents (finding 6)', () => {
  let gw: Awaited<ReturnType<typeof gatewayWith>>;
  const bob = basicAuthorization('bob@corp.example', 'bob-password');
  // dense: 40 fragments, each spread in one selection set, compared pairwise by validation
  const fields = ['name', 'upc', 'msrp', 'salePrice', 'brandName', 'color', 'size', 'stock', 'age', 'gender'];
  const dense = (name: string) => {
    const fragments = Array.from({ length: 40 }, (_, i) => `fragment ${name}F${i} on Item { ${fields[i % 10]} ${fields[(i * 7 + 3) % 10]} }`);
    return `query ${name} { item(itemId: ${ITEM}) { ${fragments.map((_, i) => `...${name}F${i}`).join(' ')} } } ${fragments.join(' ')}`;
  };
  const get = async (query: string, authorization: string) => {
    const response = await fetch(`${gw.url}/graphql?${new URLSearchParams({ query }).toString()}`, { headers: { authorization, 'apollo-require-preflight': 'true' } });
    return { status: response.status, headers: response.headers, body: (await response.json()) as { data?: unknown; errors?: { extensions?: Record<string, unknown> }[] } };
  };

  /**
   * New texts sent one after the other until one is refused: at most the burst (3) and a token a
   * second since the first (1/s) are answered, and one is refused within 20.
   */
  async function untilRefused<T extends { status: number }>(send: (n: number) => Promise<T>, spent = 0): Promise<{ refused: T }> {
    const started = performance.now();
    for (let n = 0; n < 20; n++) {
      const answer = await send(n);
      if (answer.status === 429) {
        expect(n).toBeLessThanOrEqual(3 - spent + Math.ceil((performance.now() - started) / 1000));
        expect(n).toBeGreaterThanOrEqual(3 - spent);
        return { refused: answer };
      }
      expect(answer.status).toBe(200);
    }
    throw new Error('20 new texts, none refused');
  }

  beforeAll(async () => {
    gw = await gatewayWith({ NEW_DOCUMENTS_RPS: '1', NEW_DOCUMENTS_BURST: '3' });
  });
  afterAll(() => gw.dispose());

  it('refuses a user\'s new query texts past NEW_DOCUMENTS_BURST, on both paths, and still answers their known ones and other users', async () => {
    // a query alice asks often, cached: a new text the first time, which spends a token
    expect((await gw.gql(CACHED, undefined, { authorization: alice })).status).toBe(200);
    // POSTs
    const posted = await untilRefused((n) => gw.gql(dense(`A${n}`), undefined, { authorization: alice }), 1);
    const refused = posted.refused;
    expect(refused.status).toBe(429);
    expect(codeOf(refused)).toBe('RATE_LIMITED');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(refused.body.errors?.[0]?.message).toContain('NEW_DOCUMENTS_RPS');
    // texts it sent before spend nothing, and are answered while it may send no new one
    const known = await gw.gql<{ item: { name: string } }>(dense('A1'), undefined, { authorization: alice });
    expect(known.status).toBe(200);
    expect(known.body.data?.item.name).toEqual(expect.any(String));

    // GETs: another user's bucket
    const got = await untilRefused((n) => get(dense(`B${n}`), bob));
    expect(got.refused.body.errors?.[0]?.extensions?.code).toBe('RATE_LIMITED');
    expect((await get(dense('B0'), bob)).status).toBe(200);

    // a third user is untouched, and a text it sent before spends nothing of its bucket
    expect((await gw.gql(dense('C1'), undefined, { authorization: root })).status).toBe(200);
    for (let n = 0; n < 10; n++) expect((await gw.gql(dense('C1'), undefined, { authorization: root })).status).toBe(200);
    expect((await gw.gql(dense('C2'), undefined, { authorization: root })).status).toBe(200);
    // alice's cached query, while her texts may still be refused
    const hits = gw.gateway.responseCacheStats!.hits;
    const cached = await gw.gql<{ item: { itemId: number } }>(CACHED, undefined, { authorization: alice });
    expect(cached.body.data?.item.itemId).toBe(ITEM);
    expect(gw.gateway.responseCacheStats!.hits).toBe(hits + 1);
  });
});
