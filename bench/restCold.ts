/**
 * REST mode's cold request without its HTTP, in-process, two builds side by side (not a test):
 * `npx tsx bench/restCold.ts --a dist-a --b dist [--scenario cold|nested]`. Each build is a
 * directory beside dist/ (`npx tsc -p tsconfig.build.json`, then copy dist/), both imported into
 * this one process. Per build: the REST recommendations client over an upstream that answers at
 * once with the bytes the bench upstream serves (the demo shop's records, as the embedded REST
 * twin writes them), the shared cache in front of it (in memory, TTLs of 1 s as bench/ab.ts sets
 * them for `cold`, the lists' a millisecond; for `nested` the items keep the default), and the prepared GraphQL path with
 * per-request loaders, as the server runs a request. Rounds alternate A and B, 20 requests at a
 * time over distinct anchors in turn, and print the process's CPU µs a request (the cache's
 * writes behind the answers included) and the median of B over A.
 *
 * What it leaves out is the HTTP on both sides (node:http in, undici out, the request's deadline)
 * and what the server does around execution (body, envelope, authentication): bench/ab.ts measures
 * those together with this, by server CPU, and is far noisier on a shared machine. What is left
 * here is the gateway's own work on a cold answer: parsing the upstream's body and records, the
 * cache, DataLoader, execution and the answer's JSON.
 */
import { parseArgs } from 'node:util';
import path from 'node:path';
import { buildDemo } from '../src/backends/embedded/demo.js';
import { EmbeddedRecs } from '../src/backends/embedded/recs.js';
import { toItemRecord } from '../src/ports/itemRecord.js';
import type { Backend, PrincipalModel, RecsService } from '../src/ports/backend.js';
import type * as RestRecsModule from '../src/backends/rest/recs.js';
import type * as UpstreamModule from '../src/backends/rest/upstream.js';
import type * as CachingModule from '../src/cache/cachingRecs.js';
import type * as MemoryModule from '../src/cache/memory.js';
import type * as PreparedModule from '../src/graphql/preparedOperations.js';
import type * as SchemaModule from '../src/graphql/schema.js';
import type * as LoadersModule from '../src/graphql/loaders.js';
import type * as ContextModule from '../src/graphql/context.js';
import type * as LimitsModule from '../src/graphql/limits.js';
import type * as DefaultsModule from '../src/config/defaults.js';
import type * as FormatErrorModule from '../src/graphql/formatError.js';
import type * as LoggerModule from '../src/logger.js';

const { values: flags } = parseArgs({
  options: {
    a: { type: 'string', default: 'dist-a' },
    b: { type: 'string', default: 'dist' },
    scenario: { type: 'string', default: 'cold' },
    rounds: { type: 'string', default: '10' },
    requests: { type: 'string', default: '4000' },
  },
});
const scenario = flags.scenario;
if (scenario !== 'cold' && scenario !== 'nested') throw new Error(`no scenario ${scenario}`);
const ROOT = path.resolve(import.meta.dirname, '..');
const FIELDS = '{ itemId name salePrice brandName customerRating }';
const NESTED = '{ itemId name salePrice variantItems { itemId name salePrice color size } }';
const query = `query Recs($itemId: ItemId!) { productRecommendations(itemId: $itemId) ${scenario === 'nested' ? NESTED : FIELDS} }`;
const CONCURRENCY = 20;

// The upstream's answers, as the embedded REST twin writes them (src/rest/recommendations.ts),
// made once for ANCHORS anchors (16 KB each) and every item a list or a variant names; the demo
// shop itself is dropped after, so that it does not weigh on this process's garbage collection
// as it does not on a REST-mode gateway's.
const ANCHORS = 1000;
const { anchors, lists, records } = (() => {
  const demo = buildDemo();
  const recs = new EmbeddedRecs(demo.catalog, demo.log);
  const ids = [...demo.catalog.values()].map((item) => item.itemId).filter((id) => recs.recommendNow('NEXT_BEST_PRODUCT', id).entries.length === 10).slice(0, ANCHORS);
  const record = (id: number): Record<string, unknown> => toItemRecord(demo.catalog.get(id)!);
  const texts = new Map(ids.map((id) => [id, JSON.stringify(recs.recommendNow('NEXT_BEST_PRODUCT', id).entries.map((e) => record(e.itemId)))]));
  const named = new Set(ids.flatMap((id) => recs.recommendNow('NEXT_BEST_PRODUCT', id).entries.flatMap((e) => [e.itemId, ...(demo.catalog.get(e.itemId)!.variants ?? [])])));
  return { anchors: ids, lists: texts, records: new Map([...named].map((id) => [id, record(id)])) };
})();
function answer(target: string): string {
  const url = new URL(target, 'http://upstream');
  const anchor = url.searchParams.get('itemId');
  if (anchor !== null) return lists.get(Number(anchor))!;
  const ids = url.searchParams.get('ids');
  if (ids !== null) return JSON.stringify({ items: ids.split(',').map((id) => records.get(Number(id))).filter(Boolean) });
  return JSON.stringify(records.get(Number(url.pathname.split('/').at(-1))) ?? { errors: [{ code: 4002, message: 'Invalid itemId' }] });
}
const upstream = {
  request: ({ path: target }: { path: string }) => Promise.resolve({ status: 200, headers: {}, text: answer(target) }),
} as unknown as UpstreamModule.Upstream;

interface Build {
  name: string;
  run(itemId: number): Promise<void>;
}
async function load(name: string): Promise<Build> {
  const of = <T>(file: string): Promise<T> => import(path.join(ROOT, name, file)) as Promise<T>;
  const { RestRecsService } = await of<typeof RestRecsModule>('backends/rest/recs.js');
  const { CachingRecsService } = await of<typeof CachingModule>('cache/cachingRecs.js');
  const { MemoryCache } = await of<typeof MemoryModule>('cache/memory.js');
  const { PreparedOperations } = await of<typeof PreparedModule>('graphql/preparedOperations.js');
  const { buildGatewaySchema } = await of<typeof SchemaModule>('graphql/schema.js');
  const { createLoaders } = await of<typeof LoadersModule>('graphql/loaders.js');
  const { RequestContext } = await of<typeof ContextModule>('graphql/context.js');
  const { queryLimitsRule } = await of<typeof LimitsModule>('graphql/limits.js');
  const { DEFAULT_LIMITS } = await of<typeof DefaultsModule>('config/defaults.js');
  const { gatewayFormatError } = await of<typeof FormatErrorModule>('graphql/formatError.js');
  const { silentLogger } = await of<typeof LoggerModule>('logger.js');
  // every list cold (a millisecond's TTL: the anchors come round every few hundred ms here); the
  // items' TTL as bench/ab.ts sets it
  const service: RecsService = new CachingRecsService(new RestRecsService(upstream, 'bench-key'), new MemoryCache(), {
    recsTtlSeconds: 0.001, ...(scenario === 'nested' ? {} : { itemTtlSeconds: 1 }),
  });
  const prepared = new PreparedOperations({
    schema: buildGatewaySchema({ introspection: false }), parseOptions: { maxTokens: 2000 }, validationRules: [queryLimitsRule(DEFAULT_LIMITS)],
    formatError: gatewayFormatError(silentLogger), introspection: false, hideSchemaDetailsFromClientErrors: true,
  });
  prepared.learnContentType({}, 'application/json; charset=utf-8');
  const backend = { recs: service } as unknown as Backend;
  const principal = { userId: 'u', username: 'bench' } as unknown as PrincipalModel;
  const deadline = { signal: new AbortController().signal };
  const headers = { 'content-type': 'application/json' };
  return {
    name,
    async run(itemId) {
      const request = prepared.prepare('POST', headers, { query, variables: { itemId } })!;
      const context = new RequestContext(principal, backend, createLoaders(service, deadline), deadline);
      const answered = await prepared.execute(request, context);
      if (answered?.status !== 200 || answered.body.includes('"errors"')) throw new Error(`${name}: ${answered?.body ?? 'handed over'}`);
    },
  };
}

let next = 0;
/** CPU µs a request over `count` requests, CONCURRENCY at a time, each group after a turn of the event loop (the writes behind run there). */
async function round(build: Build, count: number): Promise<number> {
  const t0 = process.cpuUsage();
  for (let done = 0; done < count; done += CONCURRENCY) {
    await Promise.all(Array.from({ length: CONCURRENCY }, () => build.run(anchors[next++ % anchors.length]!)));
    await new Promise((resolve) => setImmediate(resolve));
  }
  const used = process.cpuUsage(t0);
  return (used.user + used.system) / count;
}

const builds = [await load(flags.a), await load(flags.b)] as const;
const count = Number(flags.requests);
for (const build of builds) await round(build, count * 2);
const ratios: number[] = [];
let totalA = 0;
let totalB = 0;
for (let i = 0; i < Number(flags.rounds); i++) {
  const order = i % 2 === 0 ? builds : ([builds[1], builds[0]] as const);
  const cpu = new Map<Build, number>();
  for (const build of order) cpu.set(build, await round(build, count));
  const [a, b] = [cpu.get(builds[0])!, cpu.get(builds[1])!];
  ratios.push(b / a);
  totalA += a;
  totalB += b;
  console.log(`round ${i + 1}: A ${a.toFixed(1)} µs, B ${b.toFixed(1)} µs, B/A ${(b / a).toFixed(3)}`);
}
ratios.sort((x, y) => x - y);
console.log(
  `${scenario}, A ${flags.a}, B ${flags.b}: B/A CPU a request, median ${ratios[Math.floor(ratios.length / 2)]!.toFixed(3)} ` +
    `(${ratios[0]!.toFixed(3)} to ${ratios.at(-1)!.toFixed(3)}); over all rounds A ${(totalA / ratios.length).toFixed(1)} µs, ` +
    `B ${(totalB / ratios.length).toFixed(1)} µs, B/A ${(totalB / totalA).toFixed(3)}`,
);
