/**
 * Benchmark targets (not tests): bare Apollo Server 5 (startStandaloneServer, its own
 * cors + body-parser stack) answering the benchmark query, in one of two shapes:
 *   BENCH_APOLLO=static  a static list read from BENCH_ITEMS_FILE (the framework alone)
 *   BENCH_APOLLO=naive   the naive peer: @apollo/datasource-rest over the REST interfaces at
 *                        BENCH_UPSTREAM_URL, as most teams write it: a data source per request,
 *                        the caller's key checked with the key service on every request, the
 *                        recommendation call made with the gateway's key (BENCH_RECS_KEY), no cache
 * Prints {"url": ...} once it listens.
 */
import { readFileSync } from 'node:fs';
import { ApolloServer } from '@apollo/server';
import { startStandaloneServer } from '@apollo/server/standalone';
import { RESTDataSource } from '@apollo/datasource-rest';
import { GraphQLError } from 'graphql';

const typeDefs = `#graphql
  scalar ItemId
  type Item { itemId: ItemId!, name: String, salePrice: Float, brandName: String, customerRating: Float }
  type Query { productRecommendations(itemId: ItemId!, first: Int = 10): [Item!]! }
`;

interface ItemRecord {
  itemId: number;
  name?: string;
  salePrice?: number;
  brandName?: string;
  customerRating?: string | number;
}

class KeysAPI extends RESTDataSource {
  override baseURL = process.env.BENCH_UPSTREAM_URL;
  async check(authorization: string): Promise<void> {
    await this.get('api/v1/apikey', { headers: { authorization } });
  }
}

class RecsAPI extends RESTDataSource {
  override baseURL = process.env.BENCH_UPSTREAM_URL;
  nextBestProducts(itemId: number): Promise<ItemRecord[]> {
    return this.get<ItemRecord[]>('v1/nbp', { params: { itemId: String(itemId), apiKey: process.env.BENCH_RECS_KEY! } });
  }
}

interface Context {
  recs?: RecsAPI;
}

const mode = process.env.BENCH_APOLLO ?? 'static';
const staticItems = mode === 'static' ? (JSON.parse(readFileSync(process.env.BENCH_ITEMS_FILE!, 'utf8')) as ItemRecord[]) : [];

const server = new ApolloServer<Context>({
  typeDefs,
  resolvers: {
    Query: {
      productRecommendations: async (_: unknown, args: { itemId: number; first: number }, context: Context) =>
        mode === 'static' ? staticItems : (await context.recs!.nextBestProducts(args.itemId)).slice(0, args.first),
    },
    Item: {
      customerRating: (item: ItemRecord) => (item.customerRating === undefined ? null : Number(item.customerRating)),
    },
  },
});

const { url } = await startStandaloneServer(server, {
  listen: { port: 0, host: '127.0.0.1' },
  context: async ({ req }): Promise<Context> => {
    if (mode === 'static') return {};
    const authorization = req.headers.authorization;
    const keys = new KeysAPI();
    try {
      if (!authorization) throw new Error('no credential');
      await keys.check(authorization);
    } catch {
      throw new GraphQLError('Unauthenticated', { extensions: { code: 'UNAUTHENTICATED', http: { status: 401 } } });
    }
    return { recs: new RecsAPI() };
  },
});
process.stdout.write(`${JSON.stringify({ url: url.replace(/\/$/, '') })}\n`);
process.on('SIGTERM', () => {
  server.stop().then(() => process.exit(0), () => process.exit(1));
});
