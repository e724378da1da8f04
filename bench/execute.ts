/**
 * The prepared path's execution of the lookup query, in-process (not a test):
 * `npx tsx bench/execute.ts [variant ...]`. Times PreparedOperations.execute over distinct demo
 * anchors, with per-request loaders as the server makes them, after warming up, in alternating
 * rounds of the variants, and prints the process's CPU µs a request for each round. Variants:
 *   own        the prepared path's own schema (as the server gives it)
 *   apollo     the schema after Apollo Server has wrapped its fields for plugins
 *   nojit      as `own`, never compiled (graphql-js's execute every time)
 *   promised   as `own`, the lists through the loaders' promises (no RecsNow: as REST mode reads them)
 * In-process timings are far less disturbed by other load on the machine than HTTP figures.
 */
import { ApolloServer } from '@apollo/server';
import { buildDemo } from '../src/backends/embedded/demo.js';
import { EmbeddedRecs } from '../src/backends/embedded/recs.js';
import type { Backend, PrincipalModel } from '../src/ports/backend.js';
import { RequestContext } from '../src/graphql/context.js';
import { PreparedOperations } from '../src/graphql/preparedOperations.js';
import { queryLimitsRule } from '../src/graphql/limits.js';
import { DEFAULT_LIMITS } from '../src/config/defaults.js';
import { createLoaders } from '../src/graphql/loaders.js';
import { silentLogger } from '../src/logger.js';
import { buildGatewaySchema } from '../src/graphql/schema.js';
import { gatewayFormatError } from '../src/graphql/formatError.js';

const variants = process.argv.slice(2).length > 0 ? process.argv.slice(2) : ['own', 'apollo'];
const demo = buildDemo();
const recs = new EmbeddedRecs(demo.catalog, demo.log);
const anchors = [...demo.catalog.values()].map((item) => item.itemId).filter((id) => recs.recommendNow('NEXT_BEST_PRODUCT', id).entries.length === 10);
const backend = { recs } as unknown as Backend;
const now = { item: (itemId: number) => recs.catalog.get(itemId) ?? null, recommend: recs.recommendNow.bind(recs) };
const principal = { userId: 'u', username: 'bench' } as unknown as PrincipalModel;
const query = 'query Recs($itemId: ItemId!) { productRecommendations(itemId: $itemId) { itemId name salePrice brandName customerRating } }';
const deadline = { signal: new AbortController().signal };

async function preparedFor(variant: string): Promise<PreparedOperations> {
  const schema = buildGatewaySchema({ introspection: false });
  if (variant === 'apollo') {
    // Apollo wraps the schema's fields on its first request with a plugin that resolves fields
    const apollo = new ApolloServer({ schema });
    await apollo.start();
    await apollo.executeOperation({ query: '{ __typename }' });
    await apollo.stop();
  }
  const prepared = new PreparedOperations({
    schema, parseOptions: { maxTokens: 2000 }, validationRules: [queryLimitsRule(DEFAULT_LIMITS)], formatError: gatewayFormatError(silentLogger), introspection: false, hideSchemaDetailsFromClientErrors: true,
  });
  prepared.learnContentType({}, 'application/json; charset=utf-8');
  return prepared;
}

const headers = { 'content-type': 'application/json' };
let next = 0;
async function run(prepared: PreparedOperations, count: number, variant: string): Promise<number> {
  const jit = variant !== 'nojit';
  const recsNow = variant === 'promised' ? null : now;
  // CPU time, not wall time: a busy machine takes the core away, which CPU time does not count
  const t0 = process.cpuUsage();
  for (let i = 0; i < count; i++) {
    const itemId = anchors[next++ % anchors.length]!;
    const request = prepared.prepare('POST', headers, { query, variables: { itemId } })!;
    if (!jit) request.operation.runs = 0;
    const context = new RequestContext(principal, backend, createLoaders(recs, deadline, {}, recsNow), deadline);
    const answer = await prepared.execute(request, context);
    if (answer?.status !== 200) throw new Error(answer?.body ?? 'handed over');
  }
  const used = process.cpuUsage(t0);
  return (used.user + used.system) / count;
}

const prepared = await Promise.all(variants.map(preparedFor));
for (const [i, p] of prepared.entries()) await run(p, 20_000, variants[i]!);
const results: number[][] = variants.map(() => []);
for (let round = 0; round < 9; round++) {
  for (const [i, p] of prepared.entries()) results[i]!.push(await run(p, 5_000, variants[i]!));
}
for (const [i, variant] of variants.entries()) {
  const sorted = [...results[i]!].sort((a, b) => a - b);
  console.log(`${variant.padEnd(8)} median ${sorted[4]!.toFixed(1)} µs CPU a request, least ${sorted[0]!.toFixed(1)} (rounds ${results[i]!.map((x) => x.toFixed(1)).join(', ')})`);
}
