import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuthorization } from '../../src/auth/authorization.js';
import { openBackend } from '../../src/main.js';
import { MemoryCache } from '../../src/cache/memory.js';
import { loadConfig } from '../../src/config/env.js';
import { createGateway } from '../../src/http/server.js';
import { codeOf, embeddedWithUsers, graphqlClient, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { NO_RATE_LIMITS } from '../helpers/processes.js';
import { startRestUpstream } from '../helpers/restUpstream.js';
import { storeKinds, type StoreKind } from '../helpers/stores.js';

/**
 * One contract, every implementation (STYLE.md habit 2): the embedded backend in-process on SQLite
 * and on PostgreSQL (a schema of its own per run), and the REST backend talking over real HTTP to
 * a second gateway process that serves the REST interfaces from its own embedded backend. The same
 * operations must give the same GraphQL answers and error codes; where an implementation
 * legitimately knows less, its `traits` say so and the case says what it answers instead.
 */
const PHONE = 31000005;
const alice = { authorization: basicAuthorization('alice', 'alice-password') };
const bob = { authorization: basicAuthorization('bob', 'bob-password', 'corp.example') };
const root = { authorization: basicAuthorization('root', 'root-password') };
const USERS = [
  { username: 'alice', password: 'alice-password' },
  { username: 'bob', domain: 'corp.example', password: 'bob-password' },
  { username: 'root', password: 'root-password', isAdmin: true },
];

type Gql = TestGateway['gql'];

/** What the first implementation answered, for the others to be held to: the contract is equality. */
const answers = new Map<string, unknown>();
function same(what: string, value: unknown): void {
  if (answers.has(what)) expect(value, `${what} differs between the implementations`).toEqual(answers.get(what));
  else answers.set(what, value);
}

/** Where implementations legitimately differ: each case that meets one of these branches on it. */
interface Traits {
  /**
   * After an API key authenticates, the gateway knows whose it is (username and domain). REST
   * mode does not: the key service's listing names no user, so viewer.username is null there.
   */
  namesKeyHolder: boolean;
  /**
   * The gateway knows who is an administrator. REST mode does not (the interface does not say):
   * viewer.isAdmin is false there, the gateway refuses to list another user's keys itself, and
   * leaves creating and deleting them to the key service, which knows.
   */
  knowsAdmins: boolean;
}

interface Subject {
  gql: Gql;
  traits: Traits;
  stop(): Promise<void>;
}

const EMBEDDED: Traits = { namesKeyHolder: true, knowsAdmins: true };
const REST: Traits = { namesKeyHolder: false, knowsAdmins: false };

async function embeddedSubject(kind: StoreKind): Promise<Subject> {
  const { store, dispose } = await kind.open();
  const gw = await startTestGateway(await embeddedWithUsers(store));
  return { gql: gw.gql, traits: EMBEDDED, stop: async () => (await gw.stop(), await dispose()) };
}

async function restSubject(): Promise<Subject> {
  const upstream = await startRestUpstream(USERS);
  const config = loadConfig({
    ...NO_RATE_LIMITS,
    BACKEND: 'rest',
    APIKEY_SERVICE_URL: upstream.url,
    RECS_SERVICE_URL: upstream.url,
    RECS_API_KEY: upstream.recsApiKey,
  });
  const cache = new MemoryCache();
  const backend = await openBackend(config, { cache });
  const gateway = await createGateway({ config, backend, cache });
  const url = await gateway.listen(0, '127.0.0.1');
  return {
    gql: graphqlClient(url),
    traits: REST,
    stop: async () => {
      await gateway.stop();
      await upstream.stop();
    },
  };
}

const ITEM_FIELDS = `itemId parentItemId name msrp salePrice upc categoryPath categoryNode brandName stock
  customerRating numReviews variants attributes { name value } giftOptions { allowGiftWrap }
  imageEntities { entityType largeImage } offerType availableOnline`;

const CREATE = `mutation($input: CreateApiKeyInput!) { createApiKey(input: $input) { ok id key apiKey { name } } }`;
const DELETE = `mutation($id: ID!) { deleteApiKey(id: $id) { ok result id } }`;
const AUTH_REQUIRED = 'Authentication required: send a valid API key or credentials in the Authorization header';

describe.each([
  { make: () => embeddedSubject(storeKinds[0]!), label: 'embedded on SQLite' },
  { make: () => embeddedSubject(storeKinds[1]!), label: 'embedded on PostgreSQL' },
  { make: restSubject, label: 'REST mode over HTTP' },
])('the GraphQL contract, $label', ({ make }) => {
  let s: Subject;
  beforeAll(async () => {
    s = await make();
  }, 120_000);
  afterAll(async () => {
    await s?.stop();
  });

  type Created = { createApiKey: { ok: boolean; key: string; id: string; apiKey: { name: string } } };
  const create = async (input: Record<string, unknown>, who: { authorization: string }): Promise<Created['createApiKey']> => {
    const created = await s.gql<Created>(CREATE, { input }, who);
    expect(created.body.errors).toBeUndefined();
    return created.body.data!.createApiKey;
  };

  it('creates keys named key#1, key#2 and lists them by name, metadata only', async () => {
    const first = await create({}, alice);
    const second = await create({}, alice);
    const named = await create({ name: 'mobile-app' }, alice);
    expect([first.apiKey.name, second.apiKey.name, named.apiKey.name]).toEqual(['key#1', 'key#2', 'mobile-app']);
    expect(first.key).toMatch(/^[A-Za-z0-9+/]{22}$/);
    const listed = await s.gql<{ apiKeys: { id: string; name: string }[] }>(`{ apiKeys { id name } }`, {}, { authorization: first.key });
    expect(listed.body.data!.apiKeys).toEqual([
      { id: first.id, name: 'key#1' },
      { id: second.id, name: 'key#2' },
      { id: named.id, name: 'mobile-app' },
    ]);
    const viewer = await s.gql(`{ viewer { authenticatedBy } }`, {}, { authorization: `Bearer ${first.key}` });
    expect(viewer.body.data).toEqual({ viewer: { authenticatedBy: 'API_KEY' } });
  });

  it('authenticates by password (Basic, user@domain) and by key (bare and Bearer)', async () => {
    const VIEWER = `{ viewer { username domain isAdmin authenticatedBy } }`;
    const byPassword = await s.gql(VIEWER, {}, bob);
    expect(byPassword.body).toEqual({
      data: { viewer: { username: 'bob', domain: 'corp.example', isAdmin: false, authenticatedBy: 'PASSWORD' } },
    });
    const { key } = await create({}, bob);
    for (const authorization of [key, `Bearer ${key}`]) {
      const byKey = await s.gql(VIEWER, {}, { authorization });
      expect(byKey.status).toBe(200);
      // REST mode: the key service's listing does not say whose key it is
      const holder = s.traits.namesKeyHolder ? { username: 'bob', domain: 'corp.example' } : { username: null, domain: null };
      expect(byKey.body).toEqual({ data: { viewer: { ...holder, isAdmin: false, authenticatedBy: 'API_KEY' } } });
    }
  });

  it.each([
    ['malformed', 'Token !!'],
    ['unknown key', 'AAECAwQFBgcICQoLDA0ODw'],
    ['wrong password', basicAuthorization('alice', 'wrong-password')],
  ])('answers a %s Authorization with 401 UNAUTHENTICATED and no hint', async (_, authorization) => {
    const response = await s.gql(`{ apiKeys { id } }`, {}, { authorization });
    expect([response.status, codeOf(response)]).toEqual([401, 'UNAUTHENTICATED']);
    expect(response.headers.get('www-authenticate')).toMatch(/^Basic/);
    expect(response.body.errors![0]!.message).toBe(AUTH_REQUIRED);
    expect(JSON.stringify(response.body)).not.toContain(authorization);
  });

  it('asks for credentials where none are sent, and gives viewer null', async () => {
    const none = await s.gql(`{ apiKeys { id } }`);
    expect([none.status, codeOf(none)]).toEqual([401, 'UNAUTHENTICATED']);
    expect((await s.gql(`{ viewer { id } }`)).body).toEqual({ data: { viewer: null } });
  });

  it('gives the same error codes for bad names, unknown and foreign ids, non-UUIDs, bad credentials', async () => {
    const badName = await s.gql(`mutation { createApiKey(input: { name: "x y" }) { id } }`, {}, alice);
    expect(badName.body.errors?.[0]?.extensions).toEqual({ code: 'BAD_USER_INPUT', field: 'name' });
    expect(badName.body.data).toBeNull();

    const foreignId = (await create({}, bob)).id;
    const del = (id: string) => s.gql(DELETE, { id }, alice);
    const foreign = await del(foreignId);
    const unknown = await del('00000000-0000-4000-8000-000000000000');
    expect([codeOf(foreign), codeOf(unknown)]).toEqual(['NOT_FOUND', 'NOT_FOUND']);
    // another user's key is answered exactly like an unknown one
    expect(foreign.body.errors).toEqual([
      expect.objectContaining({ message: `API key not found: ${foreignId}`, extensions: { code: 'NOT_FOUND' } }),
    ]);
    const notUuid = await del('not-a-uuid');
    expect(notUuid.body.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'id' });

    const wrong = await s.gql(`{ apiKeys { id } }`, {}, { authorization: basicAuthorization('alice', 'wrong-password') });
    expect([wrong.status, codeOf(wrong)]).toEqual([401, 'UNAUTHENTICATED']);
    const expiry = await s.gql(CREATE, { input: { expiresInDays: 0 } }, alice);
    expect(expiry.body.errors?.[0]?.extensions).toEqual({ code: 'BAD_USER_INPUT', field: 'expiresInDays' });
  });

  it('refuses a key deleted through the gateway on the next request', async () => {
    const { id, key } = await create({}, bob);
    expect((await s.gql(`{ apiKeys { id } }`, {}, { authorization: key })).status).toBe(200);
    const deleted = await s.gql(DELETE, { id }, { authorization: key });
    expect(deleted.body.data).toEqual({ deleteApiKey: { ok: true, result: 'DELETED', id } });
    expect((await s.gql(`{ apiKeys { id } }`, {}, { authorization: key })).status).toBe(401);
  });

  it('refuses a user another user’s keys with FORBIDDEN, and lets the administrator manage them', async () => {
    const forOther = await s.gql(CREATE, { input: { username: 'bob', userDomain: 'corp.example' } }, alice);
    expect([codeOf(forOther), forOther.body.errors?.[0]?.message]).toEqual(['FORBIDDEN', 'Operation is not permitted']);
    const listOther = await s.gql(`{ apiKeys(username: "bob", userDomain: "corp.example") { id } }`, {}, alice);
    expect(codeOf(listOther)).toBe('FORBIDDEN');

    // the administrator creates and deletes a key of bob's in both modes: the key service decides
    const byRoot = await create({ username: 'bob', userDomain: 'corp.example', name: 'by-root' }, root);
    expect(byRoot).toMatchObject({ ok: true, apiKey: { name: 'by-root' } });
    const bobs = await s.gql<{ apiKeys: { id: string; name: string }[] }>(`{ apiKeys { id name } }`, {}, bob);
    expect(bobs.body.data!.apiKeys).toContainEqual({ id: byRoot.id, name: 'by-root' });

    const rootViewer = await s.gql(`{ viewer { username isAdmin authenticatedBy } }`, {}, root);
    const rootListsBob = await s.gql<{ apiKeys: { name: string }[] }>(
      `{ apiKeys(username: "bob", userDomain: "corp.example") { name } }`,
      {},
      root,
    );
    if (s.traits.knowsAdmins) {
      expect(rootViewer.body.data).toEqual({ viewer: { username: 'root', isAdmin: true, authenticatedBy: 'PASSWORD' } });
      expect(rootListsBob.body.data!.apiKeys.map((k) => k.name)).toContain('by-root');
    } else {
      // REST mode: the interface lists the caller's own keys only, and does not say who is an administrator
      expect(rootViewer.body.data).toEqual({ viewer: { username: 'root', isAdmin: false, authenticatedBy: 'PASSWORD' } });
      expect(codeOf(rootListsBob)).toBe('FORBIDDEN');
    }
    const deleted = await s.gql(DELETE, { id: byRoot.id }, root);
    expect(deleted.body.data).toEqual({ deleteApiKey: { ok: true, result: 'DELETED', id: byRoot.id } });
    const after = await s.gql<{ apiKeys: { id: string }[] }>(`{ apiKeys { id } }`, {}, bob);
    expect(after.body.data!.apiKeys.map((k) => k.id)).not.toContain(byRoot.id);
  });

  it('looks up items with the same fields, and NOT_FOUND for an unknown one', async () => {
    const found = await s.gql<{ item: Record<string, unknown> }>(`{ item(itemId: ${PHONE}) { ${ITEM_FIELDS} } }`, {}, alice);
    expect(found.body.errors).toBeUndefined();
    expect(found.body.data!.item).toMatchObject({ itemId: PHONE, name: 'Bramwick Deluxe Smartphone 100, Slate', stock: 'Available' });
    same('item fields', found.body.data!.item);
    const missing = await s.gql(`{ item(itemId: 1) { name } }`, {}, alice);
    expect(codeOf(missing)).toBe('NOT_FOUND');
    expect(missing.body.errors?.[0]?.message).toBe('No item with itemId 1');
    expect(missing.body.data).toEqual({ item: null });
  });

  it('looks up several items in the order asked, null and NOT_FOUND for each unknown one', async () => {
    const several = await s.gql<{ items: ({ itemId: number } | null)[] }>(
      `{ items(itemIds: [31000007, 1, ${PHONE}, 2]) { itemId } }`,
      {},
      alice,
    );
    expect(several.body.data!.items).toEqual([{ itemId: 31000007 }, null, { itemId: PHONE }, null]);
    expect(several.body.errors?.map((e) => [e.path, e.extensions?.code])).toEqual([
      [['items', 1], 'NOT_FOUND'],
      [['items', 3], 'NOT_FOUND'],
    ]);
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

  it('lists the same trending and popular items, by kind and category, and refuses the same bad first', async () => {
    type Lists = { t: { itemId: number }[]; pb: { itemId: number }[]; nb: { itemId: number; categoryPath: string }[] };
    const lists = await s.gql<Lists>(
      `{ t: trendingItems(first: 20) { itemId } pb: popularItems(kind: POST_BROWSE) { itemId } nb: popularItems(categoryPath: "Gadgets & Devices/Mobile", first: 5) { itemId categoryPath } }`,
      {},
      alice,
    );
    expect(lists.body.errors).toBeUndefined();
    const { t, pb, nb } = lists.body.data!;
    expect(pb).toHaveLength(10);
    expect(t).toHaveLength(20);
    expect(nb).toHaveLength(5);
    for (const item of nb) expect(item.categoryPath).toMatch(/^Gadgets & Devices\/Mobile\//);
    same('trending and popular', { t, pb, nb });
    expect(codeOf(await s.gql('{ trendingItems(first: 51) { itemId } }', {}, alice))).toBe('BAD_USER_INPUT');
    expect(codeOf(await s.gql('{ popularItems(first: 0) { itemId } }', {}, alice))).toBe('BAD_USER_INPUT');
  });

  it('filters the lists alike: the same items passing, [] where none does, BAD_USER_INPUT for a bad filter', async () => {
    const FILTERED = `query($f: RecommendationFilter) {
      p: postBrowsedProducts(itemId: ${PHONE}, filter: $f) { itemId salePrice stock brandName categoryPath }
      n: item(itemId: ${PHONE}) { productRecommendations(first: 5, filter: $f) { itemId salePrice stock brandName categoryPath } }
    }`;
    type Listed = { itemId: number; salePrice: number; stock: string | null; brandName: string; categoryPath: string };
    const f = { inStockOnly: true, maxPrice: 60, excludeItemIds: [31000007], categoryPath: 'Gadgets & Devices' };
    const filtered = await s.gql<{ p: Listed[]; n: { productRecommendations: Listed[] } }>(FILTERED, { f }, alice);
    expect(filtered.body.errors).toBeUndefined();
    const { p, n } = filtered.body.data!;
    expect(p).toHaveLength(10);
    expect(n.productRecommendations).toHaveLength(5);
    for (const item of [...p, ...n.productRecommendations]) {
      expect(item.salePrice).toBeLessThanOrEqual(60);
      expect(item.stock ?? 'Available').toBe('Available');
      expect(item.itemId).not.toBe(31000007);
      expect(item.categoryPath.startsWith('Gadgets & Devices/')).toBe(true);
    }
    same('filtered recommendations', { p: p.map((i) => i.itemId), n: n.productRecommendations.map((i) => i.itemId) });
    const none = await s.gql<{ p: Listed[] }>(FILTERED, { f: { brandNames: ['No Such Brand'] } }, alice);
    expect(none.body.data!.p).toEqual([]);
    const bad = await s.gql(FILTERED, { f: { minPrice: 9, maxPrice: 1 } }, alice);
    expect([codeOf(bad), bad.body.errors?.[0]?.message]).toEqual(['BAD_USER_INPUT', 'minPrice (9) must not exceed maxPrice (1)']);
  });

  it('lists the same items for one shopper: the popular ones cold, then from their events, and refuses alike', async () => {
    type ForYou = { recommendedForYou: { edges: { node: { itemId: number }; because: { itemId: number } | null; source: string }[] } };
    const FOR_YOU = 'query($s: String, $n: Int) { recommendedForYou(sessionId: $s, first: $n) { edges { node { itemId } because { itemId } source } } }';
    const list = async (): Promise<ForYou['recommendedForYou']['edges']> => {
      const answer = await s.gql<ForYou>(FOR_YOU, { s: 'contract-shopper', n: 5 }, alice);
      expect(answer.body.errors).toBeUndefined();
      return answer.body.data!.recommendedForYou.edges;
    };
    const cold = await list();
    expect(cold).toHaveLength(5);
    expect(cold.every((e) => e.source === 'POPULAR' && e.because === null)).toBe(true);
    const recorded = await s.gql('mutation($e: [EventInput!]!) { recordEvents(events: $e) { accepted } }', { e: [{ kind: 'VIEW', itemId: PHONE, sessionId: 'contract-shopper' }] }, root);
    expect(recorded.body.errors).toBeUndefined();
    await expect.poll(async () => (await list())[0]?.because?.itemId, { timeout: 10_000, interval: 100 }).toBe(PHONE);
    const warm = await list();
    expect(warm.map((e) => e.node.itemId)).not.toContain(PHONE);
    same('for one shopper', { cold, warm });
    expect(codeOf(await s.gql('{ recommendedForYou { edges { rank } } }', {}, alice))).toBe('BAD_USER_INPUT');
    expect(codeOf(await s.gql('{ recommendedForYou(userId: "u", first: 51) { edges { rank } } }', {}, alice))).toBe('BAD_USER_INPUT');
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

  it('answers an unknown anchor with NOT_FOUND, a bad first with BAD_USER_INPUT, no credentials with UNAUTHENTICATED', async () => {
    for (const field of ['productRecommendations', 'postBrowsedProducts']) {
      const unknown = await s.gql(`{ ${field}(itemId: 1) { itemId } }`, {}, alice);
      expect([codeOf(unknown), unknown.body.errors?.[0]?.message]).toEqual(['NOT_FOUND', 'No item with itemId 1']);
    }
    expect(codeOf(await s.gql(`{ postBrowsedProducts(itemId: ${PHONE}, first: 11) { itemId } }`, {}, alice))).toBe('BAD_USER_INPUT');
    expect(codeOf(await s.gql(`{ productRecommendations(itemId: ${PHONE}, first: 0) { itemId } }`, {}, alice))).toBe('BAD_USER_INPUT');
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

  it('takes a call sent again with its eventIds once, and says so alike: duplicates, and the same refusal of a bad id', async () => {
    const RECORD = 'mutation($e: [EventInput!]!) { recordEvents(events: $e) { accepted duplicates } }';
    const call = [0, 1, 2].map((i) => ({ kind: 'VIEW', itemId: PHONE, sessionId: 'contract-again', eventId: `contract-${i}` }));
    const answers: unknown[] = [];
    for (const events of [call, call, [...call.slice(1), { ...call[0]!, eventId: 'contract-new' }]]) answers.push((await s.gql(RECORD, { e: events }, root)).body);
    expect(answers).toEqual([0, 3, 2].map((duplicates) => ({ data: { recordEvents: { accepted: 3, duplicates } } })));
    const bad = await s.gql(RECORD, { e: [{ ...call[0]!, eventId: 'x'.repeat(201) }] }, root);
    const refusal = [codeOf(bad), bad.body.errors?.[0]?.message];
    expect(refusal).toEqual(['BAD_USER_INPUT', 'events[0].eventId: at most 200 characters']);
    same('eventId', [answers, refusal]);
  });
});
