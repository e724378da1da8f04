import { getOperationAST, parse } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuthorization } from '../../src/auth/authorization.js';
import { FragmentBudget, ItemListPlan, itemListPlan } from '../../src/graphql/itemFragments.js';
import type { ItemModel } from '../../src/ports/backend.js';
import { COMPILE_AFTER_RUNS } from '../../src/graphql/preparedOperations.js';
import { buildGatewaySchema } from '../../src/graphql/schema.js';
import { embeddedWithUsers, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { storeKinds } from '../helpers/stores.js';

/**
 * Answers that are one list of items with scalar fields are serialised from each record's text,
 * kept per record (src/graphql/itemFragments.ts): the same bytes as JSON.stringify of the whole
 * answer, and a changed record's new text at once.
 */
const root = basicAuthorization('root', 'root-password');
const sqlite = storeKinds.find((kind) => kind.name === 'sqlite')!;
/** A demo-shop item with recommendations of both kinds. */
const ANCHOR = 31000124;

describe('which operations are serialised from their records', () => {
  const schema = buildGatewaySchema({ introspection: true });
  const planned = (query: string): string | null => {
    const operation = getOperationAST(parse(query));
    return operation ? (itemListPlan(schema, operation)?.key ?? null) : null;
  };

  it('a list of items with scalar fields, aliased or not, with __typename', () => {
    expect(planned('query R($id: ItemId!) { productRecommendations(itemId: $id) { itemId name salePrice brandName customerRating } }')).toBe('productRecommendations');
    expect(planned('{ recs: postBrowsedProducts(itemId: 1, first: 3) { __typename id: itemId name } }')).toBe('recs');
    expect(planned('{ items(itemIds: [1, 2]) { itemId stock } }')).toBe('items');
  });

  it('not where a part of the answer may depend on more than the record', () => {
    // an object field, a field with arguments, a directive, two root fields, a fragment, one item, a mutation, a list of entries
    expect(planned('{ productRecommendations(itemId: 1) { itemId parent { itemId } } }')).toBeNull();
    expect(planned('{ productRecommendations(itemId: 1) { itemId postBrowsedProducts(first: 2) { itemId } } }')).toBeNull();
    expect(planned('query R($n: Boolean!) { productRecommendations(itemId: 1) { itemId name @include(if: $n) } }')).toBeNull();
    expect(planned('{ productRecommendations(itemId: 1) @include(if: true) { itemId } }')).toBeNull();
    expect(planned('{ a: productRecommendations(itemId: 1) { itemId } b: productRecommendations(itemId: 2) { itemId } }')).toBeNull();
    expect(planned('{ productRecommendations(itemId: 1) { ...F } } fragment F on Item { itemId }')).toBeNull();
    expect(planned('{ productRecommendations(itemId: 1) { ... on Item { itemId } } }')).toBeNull();
    expect(planned('{ item(itemId: 1) { itemId } }')).toBeNull();
    expect(planned('{ recommendations(itemId: 1, kind: POST_BROWSE) { anchorId } }')).toBeNull();
    expect(planned('mutation { upsertItems(items: []) { upserted } }')).toBeNull();
  });
});

describe('what the records\' texts may hold', () => {
  const record = (itemId: number): ItemModel => ({ itemId, name: `item ${itemId}` }) as ItemModel;
  const answer = (items: ItemModel[]) => ({ list: items.map((item) => ({ itemId: item.itemId, name: item.name })) });

  it('keeps a plan within its share, starting again past it, and answers right throughout', () => {
    const budget = new FragmentBudget(200, 10_000);
    const plan = new ItemListPlan('list', budget);
    for (let round = 0; round < 20; round++) {
      const items = Array.from({ length: 10 }, (_, i) => record(round * 10 + i));
      const data = answer(items);
      expect(plan.serialise(data, items)).toBe(`${JSON.stringify({ data })}\n`);
      expect(plan.keptChars).toBeLessThanOrEqual(200);
      expect(budget.heldChars).toBe(plan.keptChars);
    }
  });

  it('keeps all plans within the budget: past it, a text is used once and not kept', () => {
    const budget = new FragmentBudget(1_000, 300);
    const plans = Array.from({ length: 5 }, (_, i) => new ItemListPlan(`list${i}`, budget));
    const items = Array.from({ length: 10 }, (_, i) => record(i));
    const data = answer(items);
    for (const plan of plans) {
      const renamed = { [`list${plans.indexOf(plan)}`]: data.list };
      expect(plan.serialise(renamed, items)).toBe(`${JSON.stringify({ data: renamed })}\n`);
    }
    expect(budget.heldChars).toBeLessThanOrEqual(300);
    expect(plans.reduce((sum, plan) => sum + plan.keptChars, 0)).toBe(budget.heldChars);
  });

  it('answers a list the resolver did not return whole (another length) as null: serialised whole by the caller', () => {
    const plan = new ItemListPlan('list', new FragmentBudget(1_000, 1_000));
    const items = [record(1), record(2)];
    expect(plan.serialise({ list: answer(items).list.slice(0, 1) }, items)).toBeNull();
    expect(plan.serialise({ list: null }, items)).toBeNull();
  });
});

describe('answers serialised from their records, over HTTP', () => {
  let gw: TestGateway;
  let dispose: () => Promise<void>;

  beforeAll(async () => {
    const opened = await sqlite.open();
    dispose = opened.dispose;
    // no response cache: every answer is executed
    gw = await startTestGateway(await embeddedWithUsers(opened.store), { RESPONSE_CACHE_MAX_ENTRIES: '0' });
  });
  afterAll(async () => {
    await gw?.stop();
    await dispose?.();
  });

  const post = async (query: string, variables?: Record<string, unknown>): Promise<{ status: number; text: string }> => {
    const response = await fetch(`${gw.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: root },
      body: JSON.stringify({ query, variables }),
    });
    return { status: response.status, text: await response.text() };
  };
  const fromRecords = (): number => gw.gateway.preparedStats!.fromRecords;
  /** Every run of a text, on graphql-js's execute and then compiled, and the texts of the answers. */
  const runs = async (query: string, variables?: Record<string, unknown>): Promise<string[]> => {
    const texts: string[] = [];
    for (let i = 0; i < COMPILE_AFTER_RUNS + 3; i++) {
      const { status, text } = await post(query, variables);
      expect(status).toBe(200);
      texts.push(text);
    }
    return texts;
  };

  it('gives the bytes the whole answer serialised gives, on both execution paths', async () => {
    const cases: [string, string, Record<string, unknown>?][] = [
      [
        'query R($id: ItemId!) { productRecommendations(itemId: $id) { itemId name salePrice brandName customerRating } }',
        'query R($id: ItemId!) { productRecommendations(itemId: $id) { itemId name salePrice brandName customerRating @include(if: true) } }',
        { id: ANCHOR },
      ],
      [
        `{ recs: postBrowsedProducts(itemId: ${ANCHOR}, first: 4) { __typename id: itemId msrp stock longDescription } }`,
        `{ recs: postBrowsedProducts(itemId: ${ANCHOR}, first: 4) { __typename id: itemId msrp stock longDescription @skip(if: false) } }`,
      ],
      [
        `{ items(itemIds: [${ANCHOR}, 31000005]) { itemId name customerRating upc } }`,
        `{ items(itemIds: [${ANCHOR}, 31000005]) { itemId name customerRating upc @include(if: true) } }`,
      ],
    ];
    for (const [query, whole, variables] of cases) {
      const before = fromRecords();
      const texts = await runs(query, variables);
      const served = fromRecords() - before;
      // the first request of an Accept is Apollo's; every later one is the prepared path's
      expect(served).toBeGreaterThanOrEqual(COMPILE_AFTER_RUNS);
      const afterPlanned = fromRecords();
      const reference = await runs(whole, variables);
      expect(fromRecords()).toBe(afterPlanned);
      expect(new Set(texts).size).toBe(1);
      expect(texts[0]).toBe(reference.at(-1));
      // and it is JSON.stringify's own text, with one newline, as Apollo ends its answers
      expect(texts[0]).toBe(`${JSON.stringify(JSON.parse(texts[0]!))}\n`);
      const { data } = JSON.parse(texts[0]!) as { data: Record<string, unknown[]> };
      expect(Object.values(data)[0]!.length).toBeGreaterThan(1);
    }
  });

  it('serialises an answer with errors whole: an unknown id among the items', async () => {
    const before = fromRecords();
    const texts = await runs(`{ items(itemIds: [${ANCHOR}, 5]) { itemId name } }`);
    expect(fromRecords()).toBe(before);
    const answer = JSON.parse(texts.at(-1)!) as { data: { items: unknown[] }; errors: { extensions: { code: string } }[] };
    expect(answer.data.items[1]).toBeNull();
    expect(answer.errors[0]!.extensions.code).toBe('NOT_FOUND');
  });

  it('answers a record sent again with its new text at once', async () => {
    const query = `{ items(itemIds: [${ANCHOR}]) { itemId name salePrice } }`;
    const first = await runs(query);
    expect((JSON.parse(first.at(-1)!) as { data: { items: { itemId: number }[] } }).data.items[0]!.itemId).toBe(ANCHOR);
    const upsert = await gw.gql(
      'mutation U($items: [ItemInput!]!) { upsertItems(items: $items) { upserted } }',
      { items: [{ itemId: ANCHOR, name: 'Renamed "quoted" \u00e9', salePrice: 12.5 }] },
      { authorization: root },
    );
    expect(upsert.body).toEqual({ data: { upsertItems: { upserted: 1 } } });
    const before = fromRecords();
    const after = await post(query);
    expect(fromRecords()).toBe(before + 1);
    expect(after.text).toBe(`${JSON.stringify({ data: { items: [{ itemId: ANCHOR, name: 'Renamed "quoted" \u00e9', salePrice: 12.5 }] } })}\n`);
  });
});

describe('a backend whose records are read anew for each request (REST mode)', () => {
  it('serialises its answers whole: texts kept with such records would only be thrown away', async () => {
    const opened = await sqlite.open();
    const backend = await embeddedWithUsers(opened.store);
    const gw = await startTestGateway({ ...backend, recordsAreValues: undefined }, { RESPONSE_CACHE_MAX_ENTRIES: '0' });
    try {
      for (let i = 0; i < COMPILE_AFTER_RUNS + 3; i++) {
        const answer = await gw.gql(`{ items(itemIds: [${ANCHOR}]) { itemId } }`, undefined, { authorization: root });
        expect(answer.body).toEqual({ data: { items: [{ itemId: ANCHOR }] } });
      }
      expect(gw.gateway.preparedStats!.answered).toBeGreaterThanOrEqual(COMPILE_AFTER_RUNS);
      expect(gw.gateway.preparedStats!.fromRecords).toBe(0);
    } finally {
      await gw.stop();
      await opened.dispose();
    }
  });
});
