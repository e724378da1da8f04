import { ApolloServer } from '@apollo/server';
import { ApolloServerPluginInlineTraceDisabled } from '@apollo/server/plugin/disabled';
import { startStandaloneServer } from '@apollo/server/standalone';
import { composeServices } from '@apollo/composition';
import { ApolloGateway, RemoteGraphQLDataSource } from '@apollo/gateway';
import { buildSubgraphSchema } from '@apollo/subgraph';
import { parse } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { match } from '../../../helpers/matchers.js';
import type { GraphQLResponse } from '../../../helpers/gateway.js';
import { OTHERS, PHONE, PRODUCTS_SDL, UNKNOWN, useCountedGateway } from './helpers.js';

const PRODUCTS = [
  { id: 'p1', title: 'The phone', walmartItemId: PHONE },
  { id: 'p2', title: 'Another phone', walmartItemId: OTHERS[0] },
  { id: 'p3', title: 'A third phone', walmartItemId: OTHERS[1] },
  { id: 'p4', title: 'Gone', walmartItemId: UNKNOWN },
];

/**
 * Within the default MAX_COST: a router sends the representations as a variable, so the entity
 * fetch is costed as 100 items (edges { node } instead of nodes would cost 100 × 83, over 5000).
 */
const SUPERGRAPH_QUERY = `query ProductsWithRecommendations {
  products {
    id
    title
    walmartItemId
    item {
      name
      postBrowsedProducts(first: 3) { itemId name }
      productRecommendations(first: 2) { itemId }
      recommendations(kind: NEXT_BEST_PRODUCT, first: 2) { kind nodes { itemId } }
    }
  }
}`;

/** What the recs subgraph answers for one item, asked of it directly. */
const ITEM_FIELDS = `name
  postBrowsedProducts(first: 3) { itemId name }
  productRecommendations(first: 2) { itemId }
  recommendations(kind: NEXT_BEST_PRODUCT, first: 2) { kind nodes { itemId } }`;

interface Product {
  id: string;
  title: string;
  walmartItemId: number;
  item: { name: string; postBrowsedProducts: { itemId: number; name: string }[] } | null;
}

describe('a supergraph of this gateway and a products subgraph, behind @apollo/gateway, over HTTP', () => {
  const recs = useCountedGateway();
  const stops: (() => Promise<void>)[] = [];
  let routerUrl: string;

  beforeAll(async () => {
    const products = new ApolloServer({
      schema: buildSubgraphSchema({
        typeDefs: parse(PRODUCTS_SDL),
        resolvers: {
          Query: { products: () => PRODUCTS },
          Product: { item: (product: { walmartItemId: number }) => ({ itemId: product.walmartItemId }) },
        },
      }),
      plugins: [ApolloServerPluginInlineTraceDisabled()],
    });
    const { url: productsUrl } = await startStandaloneServer(products, { listen: { port: 0, host: '127.0.0.1' } });
    stops.push(() => products.stop());

    // the recs subgraph's SDL as rover would fetch it (rover subgraph introspect), composed here at test time
    const service = await recs.gw.gql<{ _service: { sdl: string } }>('{ _service { sdl } }');
    const composed = composeServices([
      { name: 'recs', typeDefs: parse(service.body.data!._service.sdl), url: `${recs.gw.url}/graphql` },
      { name: 'products', typeDefs: parse(PRODUCTS_SDL), url: productsUrl },
    ]);
    expect(composed.errors).toBeUndefined();

    // @apollo/gateway otherwise reports usage to Apollo and probes cloud metadata endpoints
    process.env.APOLLO_TELEMETRY_DISABLED = 'true';
    const gateway = new ApolloGateway({
      supergraphSdl: composed.supergraphSdl!,
      // the caller's credential goes on to the recs subgraph, which authenticates every entity fetch
      buildService: ({ url }) =>
        new RemoteGraphQLDataSource<{ authorization?: string }>({
          url,
          willSendRequest({ request, context }) {
            // typed any: the context of a health check or a schema load is any record
            const authorization: unknown = context.authorization;
            if (typeof authorization === 'string' && authorization !== '') request.http?.headers.set('authorization', authorization);
          },
        }),
    });
    const router = new ApolloServer<{ authorization?: string }>({ gateway });
    const started = await startStandaloneServer(router, {
      listen: { port: 0, host: '127.0.0.1' },
      context: ({ req }) => Promise.resolve({ authorization: req.headers.authorization }),
    });
    routerUrl = started.url;
    stops.push(() => router.stop());
  });
  afterAll(async () => {
    for (const stop of stops.reverse()) await stop();
    delete process.env.APOLLO_TELEMETRY_DISABLED;
  });

  const ask = async (query: string, headers: Record<string, string>): Promise<GraphQLResponse<{ products: Product[] }>> => {
    const response = await fetch(routerUrl, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ query }) });
    return { status: response.status, headers: response.headers, body: (await response.json()) as GraphQLResponse<never>['body'] };
  };

  it('runs one query across both: products from one subgraph, their items and recommendations from this one, fetched together', async () => {
    recs.getItemsCalls.length = 0;
    const response = await ask(SUPERGRAPH_QUERY, { authorization: recs.key });
    expect(response.status).toBe(200);
    const products = response.body.data!.products;
    expect(products.map((p) => [p.id, p.title, p.walmartItemId])).toEqual(PRODUCTS.map((p) => [p.id, p.title, p.walmartItemId]));

    // each item as this gateway answers it when asked directly
    for (const product of products.slice(0, 3)) {
      const direct = await recs.gw.gql<{ item: unknown }>(`{ item(itemId: ${product.walmartItemId}) { ${ITEM_FIELDS} } }`, {}, { authorization: recs.key });
      expect(product.item).toEqual(direct.body.data!.item);
    }
    expect(products[0]!.item!.name).toMatch(/Smartphone/);
    expect(products[0]!.item!.postBrowsedProducts).toHaveLength(3);

    // the unknown item: null, with this subgraph's NOT_FOUND passed on
    expect(products[3]!.item).toBeNull();
    expect(response.body.errors).toEqual([
      match.objectContaining({ path: ['products', 3, 'item'], extensions: match.objectContaining({ code: 'NOT_FOUND', serviceName: 'recs' }) }),
    ]);
  });

  it('sends this subgraph one entity fetch for all the products, which costs one backend call for their items', async () => {
    recs.getItemsCalls.length = 0;
    const response = await ask(`{ products { item { name } } }`, { authorization: recs.key });
    expect(response.body.data!.products.map((p) => p.item?.name ?? null)).toEqual([expect.any(String), expect.any(String), expect.any(String), null]);
    expect(recs.getItemsCalls).toEqual([PRODUCTS.map((p) => p.walmartItemId)]);
  });

  it('passes on UNAUTHENTICATED from this subgraph to a caller without credentials', async () => {
    const response = await ask(`{ products { title item { name } } }`, {});
    expect(response.body.data!.products.map((p) => p.title)).toEqual(PRODUCTS.map((p) => p.title));
    // the entity fetch is refused whole (HTTP 401, as for `item`): no item field is answered
    expect(response.body.data!.products.map((p) => p.item?.name ?? null)).toEqual([null, null, null, null]);
    expect(response.body.errors).toHaveLength(1);
    expect(response.body.errors?.[0]?.extensions).toMatchObject({ code: 'UNAUTHENTICATED', response: { status: 401 } });
  });
});
