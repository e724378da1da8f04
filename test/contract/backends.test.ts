import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuthorization } from '../../src/auth/authorization.js';
import { openBackend } from '../../src/main.js';
import { MemoryCache } from '../../src/cache/memory.js';
import { loadConfig } from '../../src/config/env.js';
import { createGateway } from '../../src/http/server.js';
import { codeOf, embeddedWithUsers, startTestGateway, type GraphQLResponse, type TestGateway } from '../helpers/gateway.js';
import { startRestUpstream, type RestUpstream } from '../helpers/restUpstream.js';
import { storeKinds } from '../helpers/stores.js';

/**
 * One contract, both backends: the embedded backend in-process, and the REST backend talking over
 * real HTTP to a second gateway process that serves the REST interfaces. The same operations must
 * give the same GraphQL answers and error codes.
 */
const PHONE = 31000005;
const alice = { authorization: basicAuthorization('alice', 'alice-password') };
const bob = { authorization: basicAuthorization('bob', 'bob-password', 'corp.example') };

type Gql = TestGateway['gql'];

/** What the first backend answered, for the second to be held to: the contract is equality. */
const answers = new Map<string, unknown>();
function same(what: string, value: unknown): void {
  if (answers.has(what)) expect(value, `${what} differs between the backends`).toEqual(answers.get(what));
  else answers.set(what, value);
}

interface Subject {
  name: string;
  gql: Gql;
  stop(): Promise<void>;
}

async function embeddedSubject(): Promise<Subject> {
  const { store, dispose } = await storeKinds[0]!.open();
  const gw = await startTestGateway(await embeddedWithUsers(store));
  return { name: 'embedded', gql: gw.gql, stop: async () => (await gw.stop(), await dispose()) };
}

async function restSubject(): Promise<Subject & { upstream: RestUpstream }> {
  const upstream = await startRestUpstream([
    { username: 'alice', password: 'alice-password' },
    { username: 'bob', domain: 'corp.example', password: 'bob-password' },
  ]);
  const config = loadConfig({
    BACKEND: 'rest',
    APIKEY_SERVICE_URL: upstream.url,
    RECS_SERVICE_URL: upstream.url,
    RECS_API_KEY: upstream.recsApiKey,
  });
  const cache = new MemoryCache();
  const backend = await openBackend(config, { cache });
  const gateway = await createGateway({ config, backend, cache });
  const url = await gateway.listen(0, '127.0.0.1');
  const gql: Gql = async (query, variables, headers = {}) => {
    const response = await fetch(`${url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ query, variables }),
    });
    return { status: response.status, headers: response.headers, body: (await response.json()) as GraphQLResponse<never>['body'] };
  };
  return {
    name: 'rest',
    gql,
    upstream,
    stop: async () => {
      await gateway.stop();
      await upstream.stop();
    },
  };
}

const ITEM_FIELDS = `itemId parentItemId name msrp salePrice upc categoryPath categoryNode brandName stock
  customerRating numReviews variants attributes { name value } giftOptions { allowGiftWrap }
  imageEntities { entityType largeImage } offerType availableOnline`;

describe.each([
  { make: embeddedSubject, label: 'embedded' },
  { make: restSubject, label: 'rest over HTTP' },
])('the GraphQL contract, $label backend', ({ make }) => {
  let s: Subject;
  beforeAll(async () => {
    s = await make();
  }, 120_000);
  afterAll(async () => {
    await s?.stop();
  });

  it('creates keys named key#1, key#2 and lists them by name, metadata only', async () => {
    const create = (input: Record<string, unknown>) =>
      s.gql<{ createApiKey: { ok: boolean; key: string; id: string; apiKey: { name: string } } }>(
        `mutation($input: CreateApiKeyInput!) { createApiKey(input: $input) { ok id key apiKey { name } } }`,
        { input },
        alice,
      );
    const first = (await create({})).body.data!.createApiKey;
    const second = (await create({})).body.data!.createApiKey;
    const named = (await create({ name: 'mobile-app' })).body.data!.createApiKey;
    expect([first.apiKey.name, second.apiKey.name, named.apiKey.name]).toEqual(['key#1', 'key#2', 'mobile-app']);
    const listed = await s.gql<{ apiKeys: { id: string; name: string }[] }>(`{ apiKeys { id name } }`, {}, { authorization: first.key });
    expect(listed.body.data!.apiKeys).toEqual([
      { id: first.id, name: 'key#1' },
      { id: second.id, name: 'key#2' },
      { id: named.id, name: 'mobile-app' },
    ]);
    const viewer = await s.gql(`{ viewer { authenticatedBy } }`, {}, { authorization: `Bearer ${first.key}` });
    expect(viewer.body.data).toEqual({ viewer: { authenticatedBy: 'API_KEY' } });
  });

  it('gives the same error codes for bad names, unknown and foreign ids, non-UUIDs, bad credentials', async () => {
    const badName = await s.gql(`mutation { createApiKey(input: { name: "x y" }) { id } }`, {}, alice);
    expect(badName.body.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'name' });

    const bobs = await s.gql<{ createApiKey: { id: string } }>(`mutation { createApiKey(input: {}) { id } }`, {}, bob);
    const foreignId = bobs.body.data!.createApiKey.id;
    const del = (id: string) => s.gql(`mutation($id: ID!) { deleteApiKey(id: $id) { ok } }`, { id }, alice);
    const foreign = await del(foreignId);
    const unknown = await del('00000000-0000-4000-8000-000000000000');
    expect([codeOf(foreign), codeOf(unknown)]).toEqual(['NOT_FOUND', 'NOT_FOUND']);
    expect(foreign.body.errors?.[0]?.message).toBe(`API key not found: ${foreignId}`);
    expect(codeOf(await del('not-a-uuid'))).toBe('BAD_USER_INPUT');

    const wrong = await s.gql(`{ apiKeys { id } }`, {}, { authorization: basicAuthorization('alice', 'wrong-password') });
    expect([wrong.status, codeOf(wrong)]).toEqual([401, 'UNAUTHENTICATED']);
  });

  it('refuses a key deleted through the gateway on the next request', async () => {
    const created = await s.gql<{ createApiKey: { id: string; key: string } }>(`mutation { createApiKey(input: {}) { id key } }`, {}, bob);
    const { id, key } = created.body.data!.createApiKey;
    expect((await s.gql(`{ apiKeys { id } }`, {}, { authorization: key })).status).toBe(200);
    const deleted = await s.gql(`mutation($id: ID!) { deleteApiKey(id: $id) { ok result } }`, { id }, { authorization: key });
    expect(deleted.body.data).toEqual({ deleteApiKey: { ok: true, result: 'DELETED' } });
    expect((await s.gql(`{ apiKeys { id } }`, {}, { authorization: key })).status).toBe(401);
  });

  it('looks up items with the same fields, and NOT_FOUND for an unknown one', async () => {
    const found = await s.gql<{ item: Record<string, unknown> }>(`{ item(itemId: ${PHONE}) { ${ITEM_FIELDS} } }`, {}, alice);
    expect(found.body.errors).toBeUndefined();
    expect(found.body.data!.item).toMatchObject({ itemId: PHONE, name: 'Bramwick Deluxe Smartphone 100, Slate', stock: 'Available' });
    same('item fields', found.body.data!.item);
    const missing = await s.gql(`{ item(itemId: 1) { name } }`, {}, alice);
    expect(codeOf(missing)).toBe('NOT_FOUND');
    expect(missing.body.data).toEqual({ item: null });
  });

  it('recommends the same items in the same order, both kinds, top level and as Item fields', async () => {
    const top = await s.gql<{ p: { itemId: number }[]; n: { itemId: number }[] }>(
      `{ p: postBrowsedProducts(itemId: ${PHONE}) { itemId } n: productRecommendations(itemId: ${PHONE}, first: 4) { itemId } }`,
      {},
      alice,
    );
    const nested = await s.gql<{ item: { postBrowsedProducts: { itemId: number }[]; productRecommendations: { itemId: number; name: string }[] } }>(
      `{ item(itemId: ${PHONE}) { postBrowsedProducts { itemId } productRecommendations(first: 4) { itemId name } } }`,
      {},
      alice,
    );
    const p = top.body.data!.p.map((i) => i.itemId);
    const n = top.body.data!.n.map((i) => i.itemId);
    expect(p).toHaveLength(10);
    expect(n).toHaveLength(4);
    expect(p).not.toContain(PHONE);
    expect(nested.body.data!.item.postBrowsedProducts.map((i) => i.itemId)).toEqual(p);
    expect(nested.body.data!.item.productRecommendations.map((i) => i.itemId)).toEqual(n);
    // the planted complement of a smartphone: a charger first
    expect(nested.body.data!.item.productRecommendations[0]!.name).toMatch(/Charger/);
    same('recommendations', { p, n });
  });

  it('walks from an item to its recommendations to their variants in one query', async () => {
    const walked = await s.gql<{ item: { recommendations: { nodes: { itemId: number; parentItemId: number; variantItems: { itemId: number; parentItemId: number }[] }[] } } }>(
      `{ item(itemId: ${PHONE}) { recommendations(kind: NEXT_BEST_PRODUCT, first: 3) { nodes { itemId parentItemId variantItems { itemId parentItemId } } } } }`,
      {},
      alice,
    );
    expect(walked.body.errors).toBeUndefined();
    const nodes = walked.body.data!.item.recommendations.nodes;
    expect(nodes).toHaveLength(3);
    for (const node of nodes) for (const v of node.variantItems) expect(v.parentItemId).toBe(node.parentItemId);
    expect(nodes.some((node) => node.variantItems.length > 0)).toBe(true);
    same('nested walk', nodes);
  });

  it('answers an unknown anchor with NOT_FOUND and a bad first with BAD_USER_INPUT', async () => {
    expect(codeOf(await s.gql(`{ productRecommendations(itemId: 1) { itemId } }`, {}, alice))).toBe('NOT_FOUND');
    expect(codeOf(await s.gql(`{ postBrowsedProducts(itemId: ${PHONE}, first: 11) { itemId } }`, {}, alice))).toBe('BAD_USER_INPUT');
    expect(codeOf(await s.gql(`{ postBrowsedProducts(itemId: ${PHONE}) { itemId } }`))).toBe('UNAUTHENTICATED');
  });

  it('takes events and item records from administrators only: the same codes for everyone else', async () => {
    const record = (headers?: Record<string, string>) =>
      s.gql('mutation($e: [EventInput!]!) { recordEvents(events: $e) { accepted } }', { e: [{ kind: 'VIEW', itemId: PHONE, sessionId: 's-1' }] }, headers);
    const upsert = (headers?: Record<string, string>) =>
      s.gql('mutation($i: [ItemInput!]!) { upsertItems(items: $i) { upserted } }', { i: [{ itemId: PHONE, name: 'Mine' }] }, headers);
    const codes: unknown[] = [];
    for (const headers of [alice, bob, { authorization: basicAuthorization('alice', 'wrong-password') }, undefined]) {
      codes.push(codeOf(await record(headers)), codeOf(await upsert(headers)));
    }
    expect(codes).toEqual(['FORBIDDEN', 'FORBIDDEN', 'FORBIDDEN', 'FORBIDDEN', 'UNAUTHENTICATED', 'UNAUTHENTICATED', 'UNAUTHENTICATED', 'UNAUTHENTICATED']);
    same('ingest refusals', codes);
    const malformed = await s.gql('mutation($e: [EventInput!]!) { recordEvents(events: $e) { accepted } }', { e: [{ kind: 'CLICK', itemId: PHONE }] }, alice);
    expect([malformed.status, codeOf(malformed)]).toEqual([400, 'BAD_USER_INPUT']);
  });
});
