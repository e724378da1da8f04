import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { codeOf } from '../../../helpers/gateway.js';
import { OTHERS, PHONE, UNKNOWN, useCountedGateway } from './helpers.js';

const ENTITIES = `query Entities($representations: [_Any!]!) {
  _entities(representations: $representations) { ... on Item { itemId name postBrowsedProducts(first: 2) { itemId } } }
}`;

const item = (itemId: unknown) => ({ __typename: 'Item', itemId });

describe('the gateway as a federation subgraph, over HTTP', () => {
  const counted = useCountedGateway();

  it('answers _service { sdl } with the subgraph SDL (Item keyed by itemId), without credentials where introspection is on', async () => {
    const response = await counted.gw.gql<{ _service: { sdl: string } }>('{ _service { sdl } }');
    expect(response.status).toBe(200);
    const { sdl } = response.body.data!._service;
    expect(sdl).toContain('@link(url: "https://specs.apollo.dev/federation/v2.3", import: ["@key"])');
    expect(sdl).toMatch(/type Item\s+@key\(fields: "itemId"\)/);
    expect(sdl).toContain('postBrowsedProducts(first: Int = 10, filter: RecommendationFilter): [Item!]!');
  });

  it('resolves many representations with one backend call, in order, each as `items` would', async () => {
    const ids = [PHONE, ...OTHERS];
    counted.getItemsCalls.length = 0;
    const response = await counted.gw.gql<{ _entities: ({ itemId: number; name: string; postBrowsedProducts: { itemId: number }[] } | null)[] }>(
      ENTITIES,
      // an id as a digit string, as a subgraph keeping ids as text would send it
      { representations: [item(PHONE), item(String(OTHERS[0])), item(OTHERS[1])] },
      { authorization: counted.key },
    );
    expect(response.body.errors).toBeUndefined();
    expect(response.body.data!._entities.map((entity) => entity?.itemId)).toEqual(ids);
    // the first call carries every representation's id at once
    expect(counted.getItemsCalls[0]).toEqual(ids);
    expect(counted.getItemsCalls.filter((call) => call.some((id) => ids.includes(id)))).toHaveLength(1);

    const direct = await counted.gw.gql<{ items: unknown[] }>(
      `query($ids: [ItemId!]!) { items(itemIds: $ids) { itemId name postBrowsedProducts(first: 2) { itemId } } }`,
      { ids },
      { authorization: counted.key },
    );
    expect(response.body.data!._entities).toEqual(direct.body.data!.items);
  });

  it('gives an unknown item null with NOT_FOUND, and a representation that is not an Item null with BAD_USER_INPUT', async () => {
    const response = await counted.gw.gql<{ _entities: ({ itemId: number } | null)[] }>(
      ENTITIES,
      { representations: [item(UNKNOWN), { __typename: 'Product', id: 'p1' }, item(PHONE), item('abc')] },
      { authorization: counted.key },
    );
    expect(response.status).toBe(200);
    expect(response.body.data!._entities.map((entity) => entity?.itemId ?? null)).toEqual([null, null, PHONE, null]);
    const errors = Object.fromEntries((response.body.errors ?? []).map((e): [string, unknown] => [String(e.path?.[1]), e.extensions?.code]));
    expect(errors).toEqual({ 0: 'NOT_FOUND', 1: 'BAD_USER_INPUT', 3: 'BAD_USER_INPUT' });
  });

  it('answers only authenticated callers, like item', async () => {
    const entities = await counted.gw.gql(ENTITIES, { representations: [item(PHONE)] });
    const single = await counted.gw.gql(`{ item(itemId: ${PHONE}) { itemId } }`);
    expect(codeOf(entities)).toBe('UNAUTHENTICATED');
    expect(entities.status).toBe(single.status);
    expect(entities.status).toBe(401);
    expect(codeOf(single)).toBe('UNAUTHENTICATED');
  });

  it('refuses more than 100 representations with BAD_USER_INPUT, before any backend call', async () => {
    counted.getItemsCalls.length = 0;
    const representations = Array.from({ length: 101 }, (_, i) => item(PHONE + i));
    const response = await counted.gw.gql(ENTITIES, { representations }, { authorization: counted.key });
    expect(codeOf(response)).toBe('BAD_USER_INPUT');
    expect(response.body.errors?.[0]?.extensions?.field).toBe('representations');
    expect(counted.getItemsCalls).toEqual([]);
  });

  it('costs _entities by its real number of representations, which a router sends as a variable', async () => {
    // one representation costs 1 + 10 edges × (1 + node × 1 field), and so on: about 211
    const heavy = `query($r: [_Any!]!) { _entities(representations: $r) { ... on Item { recommendations(kind: NEXT_BEST_PRODUCT) { edges { node { name } } } } } }`;
    const one = await counted.gw.gql<{ _entities: { recommendations: { edges: unknown[] } }[] }>(heavy, { r: [item(PHONE)] }, { authorization: counted.key });
    expect(one.body.errors).toBeUndefined();
    expect(one.body.data!._entities[0]!.recommendations.edges.length).toBeGreaterThan(0);
    // thirty of them: over the default MAX_COST of 5000, refused before any backend call
    counted.getItemsCalls.length = 0;
    const representations = Array.from({ length: 30 }, (_, i) => item(PHONE + i));
    const response = await counted.gw.gql(heavy, { r: representations }, { authorization: counted.key });
    expect(codeOf(response)).toBe('QUERY_TOO_COMPLEX');
    expect(response.body.errors?.[0]?.extensions).toMatchObject({ limit: 'cost', max: 5000 });
    expect(counted.getItemsCalls).toEqual([]);
    // an inline list costs what it holds, too
    const light = heavy.replace('query($r: [_Any!]!)', 'query').replace('$r', `[{ __typename: "Item", itemId: ${PHONE} }]`);
    const answered = await counted.gw.gql<{ _entities: { recommendations: { edges: unknown[] } }[] }>(light, {}, { authorization: counted.key });
    expect(answered.body.errors).toBeUndefined();
  });

  it('the federation page\'s entity fetch is a valid selection, and costs what it says: answered for as many items as it says, refused for one more', async () => {
    // the probe sent the README's `recommendations(first: 2) { … }` as written: a 400, kind being required
    const page = readFileSync(new URL('../../../../docs/federation.md', import.meta.url), 'utf8').replace(/\s+/g, ' ');
    const said = /`(recommendations\([^`]*)`, (\d+) an item, may be fetched for (\d+) items at once under the default ([\d,]+)\./.exec(page);
    expect(said, 'docs/federation.md\'s example').not.toBeNull();
    const [, selection, perItem, items, maxCost] = said!;
    expect(Number(maxCost!.replace(/,/g, ''))).toBe(5000);
    const query = `query($r: [_Any!]!) { _entities(representations: $r) { ... on Item { ${selection!} } } }`;
    const representations = (n: number) => Array.from({ length: n }, () => item(PHONE));
    const answered = await counted.gw.gql<{ _entities: unknown[] }>(query, { r: representations(Number(items)) }, { authorization: counted.key });
    expect([answered.status, answered.body.errors]).toEqual([200, undefined]);
    expect(answered.body.data!._entities).toHaveLength(Number(items));
    const over = await counted.gw.gql(query, { r: representations(Number(items) + 1) }, { authorization: counted.key });
    expect([codeOf(over), over.body.errors?.[0]?.extensions]).toEqual(['QUERY_TOO_COMPLEX', expect.objectContaining({ limit: 'cost', max: 5000, actual: (Number(items) + 1) * Number(perItem) })]);
  });

  it('marks an answer of items public for as long as an Item may be kept, as @apollo/subgraph does', async () => {
    const response = await counted.gw.gql(ENTITIES, { representations: [item(OTHERS[1])] }, { authorization: counted.key });
    expect(response.body.errors).toBeUndefined();
    expect(response.headers.get('cache-control')).toBe('max-age=300, public');
  });
});

describe('the subgraph SDL where introspection is off', () => {
  const counted = useCountedGateway({ INTROSPECTION: 'false' });

  it('is not served, to strangers or to key holders, like introspection; entities still are', async () => {
    for (const headers of [{}, { authorization: counted.key }] as Record<string, string>[]) {
      const service = await counted.gw.gql('{ _service { sdl } }', {}, headers);
      expect(service.body.data).toBeNull();
      expect(codeOf(service)).toBe('FORBIDDEN');
      expect(JSON.stringify(service.body)).not.toContain('@key');
      const schema = await counted.gw.gql('{ __schema { queryType { name } } }', {}, headers);
      expect(codeOf(schema)).toBe('GRAPHQL_VALIDATION_FAILED');
      // the gateway's setting, not Apollo's advice to "pass introspection: true to ApolloServer"
      expect(schema.body.errors?.[0]?.message).toBe(
        'GraphQL introspection (__schema, __type) is off on this gateway: set INTROSPECTION=true to turn it on (NODE_ENV=production turns it off by default)',
      );
    }
    const entities = await counted.gw.gql<{ _entities: { itemId: number }[] }>(ENTITIES, { representations: [item(PHONE)] }, { authorization: counted.key });
    expect(entities.body.data!._entities[0]!.itemId).toBe(PHONE);
  });
});
