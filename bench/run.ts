/**
 * The benchmark suite (not a test): `npm run bench [-- options]` (USAGE below lists them).
 *
 * Starts everything it measures on 127.0.0.1, each server in its own process pinned to CPU 1
 * (taskset) while this process, the load generator (autocannon, in-process), runs on CPU 0; runs
 * the comparisons of issue 8 in one run, prints a table of req/s, p50, p99 and ratios, and writes
 * BENCHMARKS.md with the machine and the command.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import pg from 'pg';
import { cpuMsOf } from './procCpu.js';
import { EVENTS_PER_BATCH, EVENTS_SHARE, ITEMS_SHARE, MIXED_WARM, isEventsBody, mixedBodies } from './mix.js';
import { EmbeddedKeyService } from '../src/backends/embedded/keys/keyService.js';
import { SqliteKeyStore } from '../src/backends/embedded/keys/sqliteStore.js';
import { PostgresKeyStore } from '../src/backends/embedded/keys/postgresStore.js';
import { addUser } from '../src/backends/embedded/keys/users.js';
import { basicAuthorization } from '../src/auth/authorization.js';
import { buildDemo } from '../src/backends/embedded/demo.js';
import { EmbeddedRecs } from '../src/backends/embedded/recs.js';
import { openRecsData } from '../src/backends/embedded/loadFromStore.js';
import { parseItemRecord } from '../src/model/itemRecord.js';

const ROOT = new URL('../', import.meta.url).pathname;

const SCENARIOS = ['raw', 'apollo', 'naive', 'emb', 'emb-basic', 'pg-key', 'pg-basic', 'emb-noauth', 'lookup', 'inline', 'mixed', 'mixed-reads', 'roles-mix', 'roles', 'rest', 'emb-redis', 'cold', 'nested', 'keys', 'recommender', 'filters', 'foryou', 'attribution'];

const USAGE = `Usage: npm run bench [-- options]

Measures this gateway beside raw node:http, bare Apollo Server and a naive Apollo peer, all on
127.0.0.1, and writes the table to BENCHMARKS.md.

Options:
  --duration <s>       measured seconds per load scenario (default 10; 3 with --quick)
  --warmup <s>         unmeasured seconds before each (default 2; 1 with --quick)
  --connections <n>    concurrent connections (default 20)
  --cold-requests <n>  distinct anchors for the cold scenarios (default 1000; 300 with --quick)
  --quick              every scenario but the recommender's build (unless --only names it), shorter:
                       for checking the run and its report, not for figures to keep
  --only <ids>         comma-separated scenario ids (${SCENARIOS.join(',')})
  --with-10m           also the 10M-event cases: the recommender's, and a roles store (slow: minutes, several GB)
  --roles-events <n,n> store sizes of the roles scenario's serve-replica start-up (default 10000,100000,
                       and 10000000 with --with-10m; 10000 with --quick; 10M events take about four minutes)
  --no-write           print only; leave BENCHMARKS.md alone
  --out <file>         where to write the report (default BENCHMARKS.md)
  --cpu-prof <dir>     run the embedded gateway and the cold and nested REST-mode gateways under --cpu-prof
                       (a sample every 50 µs), profiles into <dir>
  -h, --help           this text

Environment: UPSTREAM_CPU (taskset list for the REST upstream; default both cores);
BENCH_DATABASE_URL (the PostgreSQL of pg-key and pg-basic, each run in a schema of its own;
default postgres://postgres@127.0.0.1:5432/test); anything else passes through to the servers
(REDIS_URL excepted: only the emb-redis scenario sets it).
`;

/** A usage mistake: one line and exit code 2, as the gateway's own command line does. */
function usageError(message: string): never {
  process.stderr.write(`bench: ${message} (npm run bench -- --help lists the options)\n`);
  process.exit(2);
}

let parsed;
try {
  parsed = parseArgs({
    options: {
      help: { type: 'boolean', short: 'h', default: false },
      duration: { type: 'string' },
      warmup: { type: 'string' },
      connections: { type: 'string', default: '20' },
      'cold-requests': { type: 'string' },
      quick: { type: 'boolean', default: false },
      only: { type: 'string' },
      'with-10m': { type: 'boolean', default: false },
      'roles-events': { type: 'string' },
      'no-write': { type: 'boolean', default: false },
      out: { type: 'string', default: 'BENCHMARKS.md' },
      'cpu-prof': { type: 'string' },
    },
  });
} catch (error) {
  usageError((error as Error).message);
}
const flags = parsed.values;
if (flags.help) {
  process.stdout.write(USAGE);
  process.exit(0);
}
const QUICK = flags.quick;
/** Each sizing option's default, and the shorter one of --quick; an option given wins over both. */
const sized = { duration: QUICK ? '3' : '10', warmup: QUICK ? '1' : '2', connections: '20', 'cold-requests': QUICK ? '300' : '1000' };
for (const name of ['duration', 'warmup', 'connections', 'cold-requests'] as const) {
  flags[name] ??= sized[name];
  const value = Number(flags[name]);
  if (!Number.isFinite(value) || value < 0 || (name !== 'warmup' && value === 0)) usageError(`--${name} must be a positive number, got "${flags[name]}"`);
}
if (flags['roles-events'] !== undefined && !flags['roles-events'].split(',').every((n) => /^[1-9]\d*$/.test(n))) {
  usageError(`--roles-events must be positive whole numbers, comma-separated, got "${flags['roles-events']}"`);
}
for (const id of flags.only?.split(',') ?? []) {
  if (!SCENARIOS.includes(id)) usageError(`--only: no scenario "${id}"`);
}
const DURATION = Number(flags.duration);
const WARMUP = Number(flags.warmup);
const CONNECTIONS = Number(flags.connections);
const COLD_REQUESTS = Number(flags['cold-requests']);
/** Requests of the one-at-a-time latency run of scenario (7). */
const LOOKUP_SEQUENTIAL = QUICK ? 500 : 2000;
const only = flags.only ? new Set(flags.only.split(',')) : null;
// --quick leaves out the recommender's build (minutes on a loaded machine) unless --only names it
const wanted = (id: string): boolean => (only === null ? !(QUICK && id === 'recommender') : only.has(id));

// ---------------------------------------------------------------------------------------------
// processes

const children = new Set<ChildProcess>();
const SERVER_CPU = '1';
const ANY_CPU = '0-1';

interface Target {
  url: string;
  /** CPU time the process has used so far, user + system, in ms (cpuMsOf). */
  cpuMs(): number;
  stop(): Promise<void>;
}

/** Starts bench/targets/<script>.ts pinned to `cpu` and waits for its {"url"} line. */
/** Rate limits too high to refuse anything, so the limiter's work is measured but not its 429s. */
const UNLIMITED = { RATE_LIMIT_RPS: '1000000', RATE_LIMIT_BURST: '10000000', AUTH_FAILURES_PER_MINUTE: '0', NEW_DOCUMENTS_RPS: '0' };

async function start(script: string, env: Record<string, string>, cpu = SERVER_CPU, nodeFlags: string[] = []): Promise<Target> {
  // the gateways with the V8 flag `npm start` passes (package.json)
  const v8Flags = script === 'gateway' ? ['--no-memory-reducer'] : [];
  const child = spawn('taskset', ['-c', cpu, process.execPath, ...v8Flags, ...nodeFlags, '--import', 'tsx', `bench/targets/${script}.ts`], {
    cwd: ROOT,
    // the rate limiter stays on the path (its cost is part of every figure) but never refuses
    // REDIS_URL only where a scenario asks for it: one set in the shell must not change the others
    env: { ...process.env, REDIS_URL: undefined, LOG_LEVEL: 'warn', NODE_ENV: 'production', ...UNLIMITED, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${script} exited with ${code}: ${stderr}`)));
    createInterface({ input: child.stdout }).on('line', (line) => {
      try {
        const parsed = JSON.parse(line) as { url?: string };
        if (parsed.url) resolve(parsed.url);
      } catch {
        // not our line
      }
    });
  });
  return {
    url,
    cpuMs: () => cpuMsOf(child.pid!),
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => {
          children.delete(child);
          resolve();
        });
        child.kill('SIGTERM');
      }),
  };
}

// the servers run the compiled dist/, as `npm start` does: build it from the current source
console.log('building dist/ ...');
execFileSync(process.execPath, [path.join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { cwd: ROOT, stdio: 'inherit' });

// the load generator keeps to CPU 0, every thread of it
execFileSync('taskset', ['-a', '-p', '-c', '0', String(process.pid)], { stdio: 'ignore' });

process.on('exit', () => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
});

// ---------------------------------------------------------------------------------------------
// load

interface Measured {
  rps: number;
  /** CPU time of the server under test per request, in µs: robust to other load on the machine. */
  cpuUs: number;
  p50: number;
  p99: number;
  requests: number;
  non2xx: number;
  errors: number;
}

interface LoadSpec {
  url: string;
  /** The server under test, whose CPU time is measured. */
  target: Target;
  headers: Record<string, string>;
  /** The request bodies, taken in turn. */
  bodies: string[];
  connections?: number;
  /** A fixed number of requests instead of a duration (cold runs: one request per body). */
  amount?: number;
  /** Headers of a body of its own (the mix's recordEvents batches go as an administrator). */
  headersOf?: (body: string) => Record<string, string> | undefined;
}

function percentile(sorted: Float64Array, p: number): number {
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;
}

/** One autocannon run; latencies kept at full resolution (autocannon's histogram is whole ms). */
async function cannon(spec: LoadSpec, seconds: number, record: boolean): Promise<Measured> {
  let next = 0;
  const latencies: number[] = [];
  const instance = autocannon({
    url: spec.url,
    connections: spec.connections ?? CONNECTIONS,
    ...(spec.amount ? { amount: spec.amount } : { duration: seconds }),
    method: 'POST',
    headers: { 'content-type': 'application/json', ...spec.headers },
    body: spec.bodies[0],
    ...(spec.bodies.length > 1
      ? {
          requests: [
            {
              setupRequest: (request: Record<string, unknown>) => {
                const payload = spec.bodies[next++ % spec.bodies.length]!;
                const own = spec.headersOf?.(payload);
                return own ? { ...request, body: payload, headers: { ...(request.headers as Record<string, string>), ...own } } : { ...request, body: payload };
              },
            },
          ],
        }
      : {}),
  });
  // on() answers the instance itself, which is awaited below
  if (record) void instance.on('response', (_client: unknown, _status: number, _bytes: number, ms: number) => latencies.push(ms));
  const cpu0 = spec.target.cpuMs();
  const result = await instance;
  const cpu = spec.target.cpuMs() - cpu0;
  const sorted = Float64Array.from(latencies).sort();
  return {
    rps: result.requests.total / result.duration,
    cpuUs: (cpu * 1000) / result.requests.total,
    p50: percentile(sorted, 0.5),
    p99: percentile(sorted, 0.99),
    requests: result.requests.total,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
  };
}

async function load(spec: LoadSpec, seconds = DURATION): Promise<Measured> {
  if (!spec.amount && WARMUP > 0) await cannon(spec, WARMUP, false);
  return cannon(spec, seconds, true);
}

type Latency = { p50: number; p99: number; mean: number };
type Request = { url: string; init: RequestInit };

async function timed({ url, init }: Request): Promise<number> {
  const t = performance.now();
  const response = await fetch(url, init);
  await response.arrayBuffer();
  const ms = performance.now() - t;
  if (response.status !== 200) throw new Error(`${url}: HTTP ${response.status}`);
  return ms;
}

function latency(times: Float64Array): Latency {
  times.sort();
  return { p50: percentile(times, 0.5), p99: percentile(times, 0.99), mean: times.reduce((a, b) => a + b, 0) / times.length };
}

/** Sequential requests, one at a time, with their latencies: for latency comparisons without queueing. */
async function sequential(requests: Request[]): Promise<Latency> {
  return (await interleaved(requests.length, [(i) => requests[i]!]))[0]!;
}

/**
 * `count` rounds, one request at a time; in each round every path's request in turn. Latencies
 * to compare are taken this way so that the machine's drift over the run (which moves a
 * millisecond figure by more than the differences measured) falls on every path alike.
 */
async function interleaved(count: number, paths: ((i: number) => Request)[]): Promise<Latency[]> {
  const times = paths.map(() => new Float64Array(count));
  for (let i = 0; i < count; i++) {
    for (const [p, request] of paths.entries()) times[p]![i] = await timed(request(i));
  }
  return times.map(latency);
}

// ---------------------------------------------------------------------------------------------
// fixtures

const RECS_QUERY =
  'query Recs($itemId: ItemId!) { productRecommendations(itemId: $itemId) { itemId name salePrice brandName customerRating } }';
const NESTED_QUERY =
  'query Nested($itemId: ItemId!) { productRecommendations(itemId: $itemId) { itemId name salePrice variantItems { itemId name salePrice color size } } }';
const body = (query: string, itemId: number): string => JSON.stringify({ query, variables: { itemId } });

async function post(url: string, payload: string, headers: Record<string, string>): Promise<{ status: number; text: string }> {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: payload });
  return { status: response.status, text: await response.text() };
}

function expectRecs(name: string, answer: { status: number; text: string }, length = 10): void {
  const parsed = JSON.parse(answer.text) as { data?: { productRecommendations?: unknown[] }; errors?: unknown };
  if (answer.status !== 200 || parsed.errors || parsed.data?.productRecommendations?.length !== length) {
    throw new Error(`${name} answered ${answer.status} ${answer.text.slice(0, 300)}`);
  }
}

const dataDir = mkdtempSync(path.join(os.tmpdir(), 'recs-bench-'));
const cleanup = (): void => rmSync(dataDir, { recursive: true, force: true });
process.on('exit', cleanup);

console.log(`setting up in ${dataDir} ...`);
const store = new SqliteKeyStore(path.join(dataDir, 'keys.db'));
const benchUser = await addUser(store, { username: 'bench', password: 'bench-password' });
const keyService = new EmbeddedKeyService(store);
const principal = await keyService.authenticate(basicAuthorization('bench', 'bench-password'));
const clientKey = (await keyService.createKey(principal, { name: 'client' })).key;
const recsKey = (await keyService.createKey(principal, { name: 'gateway' })).key;
// the mix's recordEvents batches need an administrator
await addUser(store, { username: 'bench-admin', password: 'bench-admin-password', isAdmin: true });
const adminKey = (await keyService.createKey(await keyService.authenticate(basicAuthorization('bench-admin', 'bench-admin-password')), { name: 'events' })).key;

// anchors with a full list of next-best products, from the same deterministic demo shop the servers build
const demo = buildDemo();
const demoRecs = new EmbeddedRecs(demo.catalog, demo.log);
const anchors = [...demo.catalog.values()].map((item) => item.itemId).filter((id) => demoRecs.recommendNow('NEXT_BEST_PRODUCT', id).entries.length === 10);
const hotAnchor = anchors[0]!;
console.log(`${anchors.length} anchors with 10 recommendations; hot anchor ${hotAnchor}`);
/** Anchors of the unmeasured warm-up before the cold runs. */
const WARM_ANCHORS = QUICK ? 500 : 2000;
/** Anchors of the unmeasured warm-up before the nested cold run (6), from the same warm set. */
const NESTED_WARM_ANCHORS = 300;
/** Sets of distinct anchors: (5) one at a time, (5) at 20 connections, (6), (5)'s timed phases. */
const COLD_SETS = 4;
if (anchors.length < COLD_REQUESTS * COLD_SETS + WARM_ANCHORS) throw new Error('not enough anchors for the cold runs');
const coldSets = Array.from({ length: COLD_SETS }, (_, n) => anchors.slice(n * COLD_REQUESTS, (n + 1) * COLD_REQUESTS));
const warmSet = anchors.slice(COLD_REQUESTS * COLD_SETS, COLD_REQUESTS * COLD_SETS + WARM_ANCHORS);

const embeddedEnv = { BACKEND: 'embedded', DATA_DIR: dataDir };
const auth = { authorization: clientKey };

// ---------------------------------------------------------------------------------------------
// the run

interface Row {
  id: string;
  name: string;
  m: Measured;
  note?: string;
}
const rows: Row[] = [];
const notes: string[] = [];
if (QUICK) notes.push('a --quick run: shorter scenarios and fewer cold anchors, so noisier figures; for checking the run, not for keeping');
const fmt = (x: number, digits = 2): string => (Number.isFinite(x) ? x.toFixed(digits) : '–');

/** The cold gateway's phases (bench/targets/gateway.ts, BENCH_PHASES), medians in ms. */
const describePhases = (p: Record<string, number>): string =>
  `in the gateway, medians of ${p.requests} requests one at a time: whole ${fmt(p.whole!)} ms = before the upstream call ${fmt(p.before!)} ` +
  `(CPU ${fmt(p.cpuBefore!)}) + upstream call ${fmt(p.upstream!)} (CPU in the gateway meanwhile ${fmt(p.cpuDuringUpstream!)}) + after it ${fmt(p.after!)} (CPU ${fmt(p.cpuAfter!)})`;

function report(row: Row): void {
  rows.push(row);
  const { m } = row;
  console.log(
    `  ${row.name}: ${Math.round(m.rps)} req/s, ${Math.round(m.cpuUs)} µs CPU/req, p50 ${fmt(m.p50)} ms, p99 ${fmt(m.p99)} ms` +
      (m.non2xx || m.errors ? `, ${m.non2xx} non-2xx, ${m.errors} errors` : ''),
  );
  if (m.non2xx > 0 || m.errors > 0) notes.push(`${row.name}: ${m.non2xx} non-2xx answers and ${m.errors} errors`);
}

// UPSTREAM_CPU=0 pins the upstream to the load generator's core, away from the server under test
const upstream = await start('gateway', { ...embeddedEnv, BENCH_COUNT_CALLS: '1' }, process.env.UPSTREAM_CPU ?? ANY_CPU);
const restEnv = {
  BACKEND: 'rest',
  APIKEY_SERVICE_URL: upstream.url,
  RECS_SERVICE_URL: upstream.url,
  RECS_API_KEY: recsKey,
};
const upstreamCalls = async (): Promise<Record<string, number>> =>
  (await fetch(`${upstream.url}/__bench/calls`)).json() as Promise<Record<string, number>>;
const totalCalls = (calls: Record<string, number>): number => Object.values(calls).reduce((a, b) => a + b, 0);

const profileFlags = flags['cpu-prof'] ? ['--cpu-prof', '--cpu-prof-interval=50', `--cpu-prof-dir=${path.resolve(flags['cpu-prof'])}`] : [];
// The bytes every target answers with: the gateway's own answer, from a process used for nothing
// else. Every measured process is started just before its scenario (a process that sat idle for a
// minute after start-up served 10 to 15% slower for minutes after with V8's defaults, about 3%
// with --no-memory-reducer: BENCHMARKS.md, "seventh pass").
const hotBody = body(RECS_QUERY, hotAnchor);
const bodyFile = path.join(dataDir, 'body.json');
const itemsFile = path.join(dataDir, 'items.json');
{
  const first = await start('gateway', embeddedEnv);
  try {
    const reference = await post(`${first.url}/graphql`, hotBody, auth);
    expectRecs('embedded gateway', reference);
    writeFileSync(bodyFile, reference.text);
    writeFileSync(itemsFile, JSON.stringify((JSON.parse(reference.text) as { data: { productRecommendations: unknown[] } }).data.productRecommendations));
    const unauth = await post(`${first.url}/graphql`, hotBody, { authorization: 'AAAAAAAAAAAAAAAAAAAAAA' });
    if (unauth.status !== 401) throw new Error(`a bad key got ${unauth.status}`);
  } finally {
    await first.stop();
  }
}

const extra: {
  lookup?: Latency & { requests: number };
  cold?: { upstream: Latency; hop: Latency; gateway: Latency; phases: Record<string, number>; hopCpuUs: number };
  /** Authentication's share: medians over the paired rounds, of req/s and of CPU per request. */
  auth?: { rps: number; cpu: number; pairs: number[] };
  /** Authentication timed in place: µs per authentication (authenticateKnown, or authenticate after it), against the server's CPU µs per request. */
  authTimed?: { us: number; cpuUs: number };
  nestedCalls?: { cold: number; warm: number; coldDetail: Record<string, number> };
  keyRates?: { apiKey: number; basic: number };
  mixed?: Partial<Record<'mixed' | 'mixed-reads' | 'roles-mix' | 'roles-mix-reads', { hitRate: number; batches: number }>>;
  /** (8s): the learner's CPU over the serve replica's measured requests, per request, in µs. */
  learnerCpuUs?: number;
  /** req/s of the load generator with scenario (7)'s bodies against raw node:http. */
  lookupCeiling?: number;
} = {};

const oneTarget = async (id: string, name: string, run: () => Promise<Row | null>): Promise<void> => {
  if (!wanted(id)) return;
  console.log(`${id}: ${name}`);
  const row = await run();
  if (row) report(row);
};

/** Scenario (1): raw node:http answering the gateway's bytes. */
async function measureRaw(): Promise<Measured> {
  const raw = await start('raw', { BENCH_BODY_FILE: bodyFile });
  try {
    return await load({ target: raw, url: `${raw.url}/graphql`, headers: auth, bodies: [hotBody] });
  } finally {
    await raw.stop();
  }
}

/** Scenario (2): bare Apollo Server with a static list. */
async function measureApollo(): Promise<Measured> {
  const apollo = await start('apollo', { BENCH_APOLLO: 'static', BENCH_ITEMS_FILE: itemsFile, NODE_ENV: 'production' });
  try {
    expectRecs('bare apollo', await post(apollo.url, hotBody, {}));
    return await load({ target: apollo, url: apollo.url, headers: {}, bodies: [hotBody] });
  } finally {
    await apollo.stop();
  }
}

await oneTarget('raw', 'raw node:http, same JSON bytes', async () => ({ id: 'raw', name: '(1) raw node:http, same bytes', m: await measureRaw() }));
await oneTarget('apollo', 'bare Apollo Server 5, static list', async () => ({ id: 'apollo', name: '(2) bare Apollo Server 5, static list', m: await measureApollo() }));

await oneTarget('naive', 'Apollo + RESTDataSource over REST, no cache', async () => {
  const naive = await start('apollo', { BENCH_APOLLO: 'naive', BENCH_UPSTREAM_URL: `${upstream.url}/`, BENCH_RECS_KEY: recsKey });
  try {
    expectRecs('naive peer', await post(naive.url, hotBody, auth));
    const bad = await post(naive.url, hotBody, { authorization: 'AAAAAAAAAAAAAAAAAAAAAA' });
    if (bad.status !== 401) throw new Error(`naive peer let a bad key through: ${bad.status}`);
    // distinct anchors in turn, as the cold gateway is asked (5): the upstream does the same work
    // for both, and the peer, which caches nothing, is cold on every request anyway
    const bodies = anchors.map((id) => body(RECS_QUERY, id));
    return { id: 'naive', name: '(3) naive peer: Apollo + RESTDataSource, no cache', m: await load({ target: naive, url: naive.url, headers: auth, bodies }) };
  } finally {
    await naive.stop();
  }
});

// (4) alone, like (1), for its ratios.
const embSpecOf = (target: Target): LoadSpec => ({ target, url: `${target.url}/graphql`, headers: auth, bodies: [hotBody] });
await oneTarget('emb', 'gateway cached, embedded', async () => {
  const emb = await start('gateway', embeddedEnv, SERVER_CPU, profileFlags);
  try {
    return { id: 'emb', name: '(4) gateway cached, embedded, API key', m: await load(embSpecOf(emb)) };
  } finally {
    await emb.stop();
  }
});

// (4b) the same cached query signed in with a password: verified once (scrypt), then kept under a
// keyed hash (VERIFIED_PASSWORD_TTL_SECONDS), so a request costs about what a key's does.
await oneTarget('emb-basic', 'gateway cached, embedded, Basic credentials', async () => {
  const emb = await start('gateway', embeddedEnv, SERVER_CPU, profileFlags);
  try {
    const basic = { authorization: basicAuthorization('bench', 'bench-password') };
    expectRecs('gateway with Basic', await post(`${emb.url}/graphql`, hotBody, basic));
    return { id: 'emb-basic', name: '(4b) gateway cached, embedded, Basic credentials', m: await load({ target: emb, url: `${emb.url}/graphql`, headers: basic, bodies: [hotBody] }) };
  } finally {
    await emb.stop();
  }
});

// (4c, 4d) the same two on PostgreSQL (DATABASE_URL), where the store's data version, which says
// whether a verified credential still holds, is a query (one a turn of the event loop, shared).
if (wanted('pg-key') || wanted('pg-basic')) {
  const pgBase = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  const pgSchema = `bench_keys_${process.pid}`;
  const pgStore = new PostgresKeyStore({ connectionString: pgBase, schema: pgSchema, max: 2 });
  try {
    await pgStore.migrate();
    await addUser(pgStore, { username: 'bench', password: 'bench-password' });
    const pgKeys = new EmbeddedKeyService(pgStore);
    const pgKey = (await pgKeys.createKey(await pgKeys.authenticate(basicAuthorization('bench', 'bench-password')), { name: 'client' })).key;
    const pgUrl = new URL(pgBase);
    pgUrl.searchParams.set('options', `-c search_path=${pgSchema}`);
    const pgEnv = { ...embeddedEnv, DATABASE_URL: pgUrl.toString() };
    const runs = [
      ['pg-key', '(4c) gateway cached, embedded on PostgreSQL, API key', { authorization: pgKey }],
      ['pg-basic', '(4d) gateway cached, embedded on PostgreSQL, Basic credentials', { authorization: basicAuthorization('bench', 'bench-password') }],
    ] as const;
    for (const [id, name, headers] of runs) {
      await oneTarget(id, name, async () => {
        const gateway = await start('gateway', pgEnv, SERVER_CPU, profileFlags);
        try {
          expectRecs(name, await post(`${gateway.url}/graphql`, hotBody, headers));
          return { id, name, m: await load({ target: gateway, url: `${gateway.url}/graphql`, headers, bodies: [hotBody] }) };
        } finally {
          await gateway.stop();
        }
      });
    }
  } finally {
    await pgStore.close();
    const admin = new pg.Client({ connectionString: pgBase });
    await admin.connect();
    await admin.query(`DROP SCHEMA IF EXISTS ${pgSchema} CASCADE`);
    await admin.end();
  }
}

// Authentication's share: the gateway against a twin whose authentication is stubbed, both
// started together, loaded at once and pinned to the same core. The scheduler shares a core evenly
// between two busy processes, so their req/s stand in the inverse ratio of their costs, and
// whatever disturbs the machine falls on both in the same second. Loaded in turn instead, single
// rounds moved by ±20% on this host and the pairs spread from −23% to +35%; and a gateway idle for
// a minute before, paired with a new stub, came out 11 to 15% slower however little its
// authentication cost, as did a real twin (BENCHMARKS.md, "seventh pass"). Each round gives a
// pair; the median of AUTH_ROUNDS pairs is reported, of req/s and of CPU per request.
const AUTH_ROUNDS = 6;
if (wanted('emb-noauth')) {
  // twins of one history: started together, loaded together from their first request
  const [real, stub] = await Promise.all([start('gateway', embeddedEnv), start('gateway', { ...embeddedEnv, BENCH_STUB_AUTH: '1' })]);
  try {
    const embSpec = embSpecOf(real);
    const stubSpec = embSpecOf(stub);
    expectRecs('gateway', await post(embSpec.url, hotBody, auth));
    expectRecs('stubbed gateway', await post(stubSpec.url, hotBody, auth));
    console.log('emb-noauth: gateway cached, embedded, at once with a twin whose authentication is stubbed (bench only), on one core');
    const both = (seconds: number): Promise<Measured[]> => Promise.all([cannon(embSpec, seconds, false), cannon(stubSpec, seconds, false)]);
    if (WARMUP > 0) await both(WARMUP);
    const pairs: { rps: number; cpu: number }[] = [];
    for (let round = 0; round < AUTH_ROUNDS; round++) {
      const [real, stubbed] = await both(DURATION / 3);
      pairs.push({ rps: 1 - real!.rps / stubbed!.rps, cpu: 1 - stubbed!.cpuUs / real!.cpuUs });
      console.log(`  round ${round + 1}: ${Math.round(real!.rps)} and ${Math.round(stubbed!.rps)} req/s, ${fmt(real!.cpuUs, 1)} and ${fmt(stubbed!.cpuUs, 1)} µs CPU per request`);
    }
    const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
    extra.auth = { rps: median(pairs.map((p) => p.rps)), cpu: median(pairs.map((p) => p.cpu)), pairs: pairs.map((p) => p.rps) };
    console.log(`  authentication's share, median of ${pairs.length} pairs: ${fmt(extra.auth.rps * 100, 1)}% of req/s, ${fmt(extra.auth.cpu * 100, 1)}% of CPU per request (pairs: ${extra.auth.pairs.map((x) => fmt(x * 100, 1)).join(', ')}%)`);
  } finally {
    await Promise.all([real.stop(), stub.stop()]);
  }
  // Authentication is also timed where it runs: a third gateway times every authenticateKnown()
  // and authenticate() call (a verified key is answered synchronously, so the time around the call
  // is all of its work) under the same load, against that process's CPU per request from /proc
  // over the same requests.
  const timing = await start('gateway', { ...embeddedEnv, BENCH_TIME_AUTH: '1' });
  try {
    const spec: LoadSpec = { target: timing, url: `${timing.url}/graphql`, headers: auth, bodies: [hotBody] };
    const authTime = async (): Promise<{ calls: number; ns: number }> =>
      (await fetch(`${timing.url}/__bench/auth`)).json() as Promise<{ calls: number; ns: number }>;
    await cannon(spec, WARMUP, false);
    await authTime();
    const m = await cannon(spec, DURATION / 3, true);
    const { calls, ns } = await authTime();
    extra.authTimed = { us: ns / calls / 1000, cpuUs: m.cpuUs };
    console.log(
      `  authentication timed in place: ${fmt(extra.authTimed.us)} µs a call over ${calls} calls, ` +
        `of ${fmt(m.cpuUs, 1)} µs server CPU per request: ${fmt((extra.authTimed.us / m.cpuUs) * 100, 1)}%`,
    );
  } finally {
    await timing.stop();
  }
}

await oneTarget('lookup', 'lookup through GraphQL, embedded, no response cache, distinct anchors', async () => {
  // Every request runs the whole path: authentication, GraphQL execution, the model's lookup and
  // the item fields; with distinct anchors in turn and RESPONSE_CACHE_MAX_ENTRIES=0 nothing is
  // answered from a cache (the embedded backend has no recommendation cache of its own).
  const uncached = await start('gateway', { ...embeddedEnv, RESPONSE_CACHE_MAX_ENTRIES: '0' }, SERVER_CPU, profileFlags);
  try {
    const url = `${uncached.url}/graphql`;
    const bodies = anchors.map((id) => body(RECS_QUERY, id));
    expectRecs('uncached gateway', await post(url, bodies[0]!, auth));
    const one = (payload: string): { url: string; init: RequestInit } => ({
      url,
      init: { method: 'POST', headers: { 'content-type': 'application/json', ...auth }, body: payload },
    });
    // one pass unmeasured, so that the measured one is not the JIT's warm-up
    await sequential(bodies.slice(-LOOKUP_SEQUENTIAL).map(one));
    const latency = await sequential(bodies.slice(0, LOOKUP_SEQUENTIAL).map(one));
    extra.lookup = { ...latency, requests: Math.min(LOOKUP_SEQUENTIAL, bodies.length) };
    console.log(`  one at a time (${extra.lookup.requests} distinct anchors): p50 ${fmt(latency.p50)} ms, p99 ${fmt(latency.p99)} ms, mean ${fmt(latency.mean)} ms`);
    const m = await load({ target: uncached, url, headers: auth, bodies });
    // The load generator's own ceiling with these bodies (each request set up anew from a list of
    // distinct bodies costs it far more than one body sent again): raw node:http answering them.
    await uncached.stop();
    const raw = await start('raw', { BENCH_BODY_FILE: bodyFile });
    try {
      const ceiling = await load({ target: raw, url: `${raw.url}/graphql`, headers: auth, bodies });
      extra.lookupCeiling = ceiling.rps;
      console.log(`  the load generator with the same ${bodies.length} bodies against raw node:http: ${Math.round(ceiling.rps)} req/s, ${Math.round(ceiling.cpuUs)} µs server CPU/req`);
    } finally {
      await raw.stop();
    }
    return { id: 'lookup', name: `(7) lookup through GraphQL, embedded, uncached (${bodies.length} distinct anchors in turn)`, m };
  } finally {
    await uncached.stop();
  }
});

// (7b) the same lookups with the anchor written into the query text, as hand-written clients do:
// every text is new to Apollo, which parses and validates it
const inlineQuery = (id: number): string => `{ productRecommendations(itemId: ${id}) { itemId name salePrice brandName customerRating } }`;
await oneTarget('inline', 'lookup through GraphQL, embedded, no response cache, the anchor inline', async () => {
  const uncached = await start('gateway', { ...embeddedEnv, RESPONSE_CACHE_MAX_ENTRIES: '0' }, SERVER_CPU, profileFlags);
  try {
    const url = `${uncached.url}/graphql`;
    const bodies = anchors.map((id) => JSON.stringify({ query: inlineQuery(id) }));
    expectRecs('uncached gateway, inline', await post(url, bodies[0]!, auth));
    const m = await load({ target: uncached, url, headers: auth, bodies });
    return { id: 'inline', name: `(7b) the same, the anchor written into the query text (${bodies.length} distinct texts in turn)`, m };
  } finally {
    await uncached.stop();
  }
});

/** Where the mix is sent: the embedded gateway (by default), or a serve replica with its learner beside it. */
interface MixSetup {
  env: Record<string, string>;
  auth: Record<string, string>;
  adminKey: string;
  /** A process whose CPU over the measured requests is reported beside the target's (the learner). */
  beside?: Target;
}

/** The mix against a new gateway; the hit rate and the batches sent go to extra.mixed. */
async function runMixed(id: 'mixed' | 'mixed-reads' | 'roles-mix' | 'roles-mix-reads', eventsShare: number, setup: MixSetup = { env: embeddedEnv, auth, adminKey }): Promise<Row> {
  const target = await start('gateway', { ...setup.env, BENCH_STATS: '1' }, SERVER_CPU, profileFlags);
  const { auth, adminKey } = setup;
  const warm = MIXED_WARM;
  try {
    const url = `${target.url}/graphql`;
    const bodies = mixedBodies([...demo.catalog.values()].map((item) => item.itemId), eventsShare);
    const headersOf = (payload: string): Record<string, string> | undefined => (isEventsBody(payload) ? { authorization: adminKey } : undefined);
    const first = bodies.findIndex(isEventsBody);
    for (const payload of [...bodies.slice(0, 4), ...(first >= 0 ? [bodies[first]!] : [])]) {
      const answer = await post(url, payload, headersOf(payload) ?? auth);
      if (answer.status !== 200 || answer.text.includes('"errors"')) throw new Error(`${id}: ${answer.status} ${answer.text.slice(0, 300)}`);
    }
    type Stats = { responseCache: { hits: number; misses: number; rechecked?: number; changed?: number } };
    const stats = async (): Promise<Stats> => (await fetch(`${target.url}/__bench/stats`)).json() as Promise<Stats>;
    await cannon({ target, url, headers: auth, headersOf, bodies: bodies.slice(0, warm), amount: warm }, 0, false);
    const before = await stats();
    const besideCpu0 = setup.beside?.cpuMs() ?? 0;
    // the bodies after the warm-up's, never the same ones again (unless a run takes 250,000)
    const m = await cannon({ target, url, headers: auth, headersOf, bodies: bodies.slice(warm) }, DURATION, true);
    if (setup.beside) extra.learnerCpuUs = ((setup.beside.cpuMs() - besideCpu0) * 1000) / m.requests;
    const after = await stats();
    const hits = after.responseCache.hits - before.responseCache.hits;
    const misses = after.responseCache.misses - before.responseCache.misses;
    const batches = Math.round(m.requests * (bodies.slice(warm).filter(isEventsBody).length / (bodies.length - warm)));
    (extra.mixed ??= {})[id] = { hitRate: hits / (hits + misses), batches };
    // of the hits, those on answers kept from before a batch and checked against the data; of the misses, those a batch changed
    const rechecked = (after.responseCache.rechecked ?? 0) - (before.responseCache.rechecked ?? 0);
    const changed = (after.responseCache.changed ?? 0) - (before.responseCache.changed ?? 0);
    console.log(`  response cache hit rate ${fmt((hits / (hits + misses)) * 100, 1)}% (${hits} hits, ${rechecked} of them after a check; ${misses} misses, ${changed} of them changed by events)${eventsShare > 0 ? `; about ${batches} batches of ${EVENTS_PER_BATCH} events` : ''}`);
    const what = `Zipf(1.0) anchors over the catalogue, 3 selections, ${ITEMS_SHARE * 100}% item lookups`;
    if (id === 'roles-mix') return { id, name: `(8s) the realistic mix with its batches on a RECS_ROLE=serve replica (a learner beside it, on the load generator's core)`, m };
    if (id === 'roles-mix-reads') return { id, name: '(8sr) the same mix without its batches on a serve replica (reads only)', m };
    return eventsShare > 0
      ? { id, name: `(8) realistic mix: ${what}, ${eventsShare * 100}% recordEvents batches of ${EVENTS_PER_BATCH}, response cache on`, m }
      : { id, name: `(8r) the same mix without its recordEvents batches (reads only)`, m };
  } finally {
    await target.stop();
  }
}

await oneTarget('mixed', 'a realistic mix with events, embedded, the response cache at its default size', () => runMixed('mixed', EVENTS_SHARE));
await oneTarget('mixed-reads', 'the same mix without its events', () => runMixed('mixed-reads', 0));

// (8s) the same mix on a RECS_ROLE=serve replica (issue 43): the demo shop's records and events in a
// PostgreSQL schema of its own, a learner (RECS_ROLE=learn) that has published its lists before the
// load starts, on the load generator's core so that the replica's core is its own; both CPUs reported.
await oneTarget('roles-mix', 'the realistic mix on a serve replica, its learner beside it', async () => {
  const pgBase = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  const schema = `bench_roles_mix_${process.pid}`;
  const keyStore = new PostgresKeyStore({ connectionString: pgBase, schema, max: 2 });
  const admin = new pg.Client({ connectionString: pgBase });
  await admin.connect();
  let learner: Target | null = null;
  try {
    await keyStore.migrate();
    const recsStore = (await openRecsData({ kind: 'postgres', connectionString: pgBase, schema }))!;
    await recsStore.upsertItems(demo.data.records.map((record) => parseItemRecord(record)));
    for (let at = 0; at < demo.data.events.length; at += 5000) await recsStore.appendEvents(demo.data.events.slice(at, at + 5000));
    const head = (await recsStore.head()).lastEventId;
    await recsStore.close();
    const keys = new EmbeddedKeyService(keyStore);
    await addUser(keyStore, { username: 'bench', password: 'bench-password' });
    await addUser(keyStore, { username: 'bench-admin', password: 'bench-admin-password', isAdmin: true });
    const client = (await keys.createKey(await keys.authenticate(basicAuthorization('bench', 'bench-password')), { name: 'client' })).key;
    const events = (await keys.createKey(await keys.authenticate(basicAuthorization('bench-admin', 'bench-admin-password')), { name: 'events' })).key;
    await keys.close();
    const url = new URL(pgBase);
    url.searchParams.set('options', `-c search_path=${schema}`);
    const roleEnv = (role: string): Record<string, string> => ({ ...embeddedEnv, DATA_DIR: path.join(dataDir, `roles-${role}`), DATABASE_URL: url.toString(), RECS_ROLE: role });
    learner = await start('gateway', roleEnv('learn'), '0');
    // its first publish reflects the whole store once publishedEventId reaches the head
    const deadline = Date.now() + 120_000;
    for (;;) {
      const { rows } = await admin.query<{ value: string }>(`SELECT value FROM ${schema}.recs_meta WHERE key = 'publishedEventId'`).catch(() => ({ rows: [] as { value: string }[] }));
      if (Number(rows[0]?.value ?? 0) >= head) break;
      if (Date.now() > deadline) throw new Error('roles-mix: the learner did not publish its lists within 120 s');
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const setup = { env: roleEnv('serve'), auth: { authorization: client }, adminKey: events, beside: learner };
    // the reads alone first, on a replica of their own: what the batches add is the difference
    report(await runMixed('roles-mix-reads', 0, setup));
    return await runMixed('roles-mix', EVENTS_SHARE, setup);
  } finally {
    await learner?.stop();
    await keyStore.close();
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin.end();
  }
});

await oneTarget('rest', 'gateway cached, REST mode', async () => {
  const rest = await start('gateway', restEnv);
  try {
    expectRecs('REST-mode gateway', await post(`${rest.url}/graphql`, hotBody, auth));
    return { id: 'rest', name: '(4) gateway cached, REST mode, API key', m: await load({ target: rest, url: `${rest.url}/graphql`, headers: auth, bodies: [hotBody] }) };
  } finally {
    await rest.stop();
  }
});

/** Whether a Redis answers PING at url (redis://host:port only). */
async function redisAnswers(url: string): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = net.connect(Number(port || 6379), hostname || '127.0.0.1');
    socket.setTimeout(500, () => (socket.destroy(), resolve(false)));
    socket.once('error', () => resolve(false));
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.once('data', (data) => (socket.destroy(), resolve(data.toString().startsWith('+PONG'))));
  });
}

await oneTarget('emb-redis', 'gateway cached, embedded, with REDIS_URL (rate limits and persisted queries in Redis)', async () => {
  const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  if (!(await redisAnswers(redisUrl))) {
    notes.push(`(4) with Redis: skipped, no Redis answered at ${redisUrl}`);
    return null;
  }
  // keys of its own (they expire by themselves); nothing else in that Redis is touched
  const target = await start('gateway', { ...embeddedEnv, REDIS_URL: redisUrl, REDIS_KEY_PREFIX: `recs-gateway-bench:${process.pid}:` });
  try {
    expectRecs('gateway with Redis', await post(`${target.url}/graphql`, hotBody, auth));
    return { id: 'emb-redis', name: '(4) same, with REDIS_URL: rate limits in Redis', m: await load({ target, url: `${target.url}/graphql`, headers: auth, bodies: [hotBody] }) };
  } finally {
    await target.stop();
  }
});

await oneTarget('cold', 'gateway cold, REST mode, distinct anchors', async () => {
  const rest = await start('gateway', { ...restEnv, BENCH_PHASES: '1' }, SERVER_CPU, profileFlags);
  // the reference: the same hop with nothing else on it (bench/targets/proxy.ts), on the same core
  const proxy = await start('proxy', { BENCH_UPSTREAM_URL: upstream.url, RECS_API_KEY: recsKey });
  try {
    // one request authenticates the key (then the REST backend's auth cache has it, as in service)
    expectRecs('REST-mode gateway', await post(`${rest.url}/graphql`, body(RECS_QUERY, anchors.at(-1)!), auth));
    // Cold caches, not cold code: the new processes' JIT (and the upstream's) is warmed first with
    // WARM_ANCHORS other anchors, none of which the measured runs ask for.
    const warmBodies = warmSet.map((id) => body(RECS_QUERY, id));
    await load({ target: rest, url: `${rest.url}/graphql`, headers: auth, bodies: warmBodies, amount: warmSet.length });
    await load({ target: proxy, url: `${proxy.url}/graphql`, headers: auth, bodies: warmBodies, amount: warmSet.length });
    const phasesOf = async (): Promise<Record<string, number>> => (await fetch(`${rest.url}/__bench/phases`)).json() as Promise<Record<string, number>>;
    await phasesOf();
    // one request at a time, each anchor asked of the three in turn: the upstream's own latency
    // for the call the gateway makes, the bare hop, the gateway (whose caches never saw it); and
    // in the same rounds, another new anchor of the gateway's with its phases timed (apart, since
    // timing them costs the request system calls)
    const ask = (url: string, id: number, headers: Record<string, string> = {}): Request => ({
      url,
      init: { method: 'POST', headers: { 'content-type': 'application/json', ...auth, ...headers }, body: body(RECS_QUERY, id) },
    });
    const ids = coldSets[0]!;
    const [direct, hop, gateway] = await interleaved(ids.length, [
      (i) => ({ url: `${upstream.url}/v1/nbp?itemId=${ids[i]}&apiKey=${encodeURIComponent(recsKey)}`, init: {} }),
      (i) => ask(`${proxy.url}/graphql`, ids[i]!),
      (i) => ask(`${rest.url}/graphql`, ids[i]!),
      (i) => ask(`${rest.url}/graphql`, coldSets[3]![i]!, { 'x-bench-phases': '1' }),
    ]);
    const phases = await phasesOf();
    // then the same number of other new anchors at 20 connections, for the table's row (after
    // the one-at-a-time runs, so that both of those follow the same warm-up and nothing else)
    const m = await load({ target: rest, url: `${rest.url}/graphql`, headers: auth, bodies: coldSets[1]!.map((id) => body(RECS_QUERY, id)), amount: COLD_REQUESTS });
    // the bare hop's CPU a request under the same load: the floor under the gateway's (node:http
    // in, undici out, no GraphQL, parsing or cache)
    const hopLoad = await load({ target: proxy, url: `${proxy.url}/graphql`, headers: auth, bodies: coldSets[1]!.map((id) => body(RECS_QUERY, id)), amount: COLD_REQUESTS });
    extra.cold = { upstream: direct!, hop: hop!, gateway: gateway!, phases, hopCpuUs: hopLoad.cpuUs };
    console.log(`  the bare hop under the same load: ${Math.round(hopLoad.cpuUs)} µs CPU/req, p99 ${fmt(hopLoad.p99)} ms`);
    console.log(
      `  one at a time, p50: upstream ${fmt(direct!.p50)} ms, bare hop ${fmt(hop!.p50)} ms (+${fmt(hop!.p50 - direct!.p50)}), ` +
        `gateway ${fmt(gateway!.p50)} ms (+${fmt(gateway!.p50 - direct!.p50)}; +${fmt(gateway!.p50 - hop!.p50)} over the hop)`,
    );
    console.log(`  ${describePhases(phases)}`);
    return { id: 'cold', name: `(5) gateway cold, REST mode (${COLD_REQUESTS} distinct anchors)`, m };
  } finally {
    await proxy.stop();
    await rest.stop();
  }
});

await oneTarget('nested', 'nested query, REST mode, cold then warm', async () => {
  const rest = await start('gateway', restEnv, SERVER_CPU, profileFlags);
  try {
    const nestedBodies = coldSets[2]!.map((id) => body(NESTED_QUERY, id));
    expectRecs('nested query', await post(`${rest.url}/graphql`, body(NESTED_QUERY, warmSet[0]!), auth));
    // Cold caches, not cold code, as in (5): the query compiled and its paths through the JIT
    // before the measured anchors. Fewer warm anchors than (5)'s: their items' variants go into
    // the item cache, and the measured lookups should mostly still reach the upstream.
    const warmBodies = warmSet.slice(1, NESTED_WARM_ANCHORS).map((id) => body(NESTED_QUERY, id));
    await load({ target: rest, url: `${rest.url}/graphql`, headers: auth, bodies: warmBodies, amount: warmBodies.length });
    await upstreamCalls();
    const m = await load({ target: rest, url: `${rest.url}/graphql`, headers: auth, bodies: nestedBodies, amount: nestedBodies.length });
    const coldDetail = await upstreamCalls();
    report({ id: 'nested-cold', name: `(6) nested query, cold, REST mode (${nestedBodies.length} distinct anchors)`, m });
    const warm = await load({ target: rest, url: `${rest.url}/graphql`, headers: auth, bodies: nestedBodies });
    const warmCalls = totalCalls(await upstreamCalls());
    const nestedCalls = { cold: totalCalls(coldDetail) / m.requests, warm: warmCalls / warm.requests, coldDetail };
    extra.nestedCalls = nestedCalls;
    console.log(`  upstream calls per request: cold ${fmt(nestedCalls.cold)}, warm ${fmt(nestedCalls.warm, 4)} (${JSON.stringify(coldDetail)})`);
    return { id: 'nested-warm', name: '(6) nested query, warm, REST mode (same anchors again)', m: warm };
  } finally {
    await rest.stop();
  }
});
await upstream.stop();

// ---------------------------------------------------------------------------------------------
// key verification, in this process, with no load running

if (wanted('keys')) {
  console.log('keys: authenticate() per second');
  // one call a turn of the event loop, as requests come: the store version, read once a turn,
  // is then paid by every call (the setImmediate between calls is in the figure too)
  const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
  const rate = async (fn: () => Promise<unknown>, ms: number): Promise<number> => {
    let n = 0;
    const t0 = performance.now();
    while (performance.now() - t0 < ms) {
      await nextTurn();
      await fn();
      n++;
    }
    return (n * 1000) / (performance.now() - t0);
  };
  const basic = basicAuthorization('bench', 'bench-password');
  await rate(() => keyService.authenticate(clientKey), 300);
  const keyRates = {
    apiKey: await rate(() => keyService.authenticate(clientKey), 2000),
    basic: await rate(() => keyService.authenticate(basic), 2000),
  };
  extra.keyRates = keyRates;
  console.log(`  API key against SQLite: ${Math.round(keyRates.apiKey)}/s; Basic (scrypt N=2^15): ${fmt(keyRates.basic, 1)}/s`);
}
await store.close();
void benchUser;

// ---------------------------------------------------------------------------------------------
// the recommender's own benchmark, in a child on both cores: nothing else of the bench runs
// meanwhile, and a large build ranks its anchors in two threads (pinned to the server core, the
// 10M build had one: 22.7 s against 11.9 s)

let recommenderOutput = '';
if (wanted('recommender')) {
  console.log(`recommender: bench/recommender.ts${flags['with-10m'] ? '' : ' --skip-10m'}`);
  // (this process keeps to the load generator's core, and a child inherits that: every core again)
  const child = spawn(
    'taskset',
    ['-c', `0-${os.cpus().length - 1}`, process.execPath, '--expose-gc', '--import', 'tsx', 'bench/recommender.ts', ...(flags['with-10m'] ? [] : ['--skip-10m'])],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  child.stdout.on('data', (chunk: Buffer) => (recommenderOutput += chunk.toString()));
  await new Promise((resolve) => child.once('exit', resolve));
  console.log(recommenderOutput);
}

/** Runs an in-process bench file in a child on both cores, as the recommender's, and returns what it printed. */
async function inChild(file: string): Promise<string> {
  console.log(`${file}`);
  let output = '';
  const child = spawn('taskset', ['-c', `0-${os.cpus().length - 1}`, process.execPath, '--import', 'tsx', file], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  await new Promise((resolve) => child.once('exit', resolve));
  console.log(output);
  return output;
}

// the filtered lookups against unfiltered ones
let filtersOutput = '';
type FiltersResult = { unfilteredUs: number; worst: { name: string; ratio: number } };
let filtersResult: FiltersResult | null = null;
if (wanted('filters')) {
  filtersOutput = await inChild('bench/filters.ts');
  const json = /^filters-json (.*)$/m.exec(filtersOutput);
  if (json) filtersResult = JSON.parse(json[1]!) as FiltersResult;
  filtersOutput = filtersOutput.replace(/^filters-json .*\n?/m, '');
}
// a shopper's list against an anchored one; what attribution adds to a request
const forYouOutput = wanted('foryou') ? await inChild('bench/forYou.ts') : '';
const attributionOutput = wanted('attribution') ? await inChild('bench/attribution.ts') : '';

// RECS_ROLE (issue 43), as processes on PostgreSQL and Redis, in children on both cores likewise:
// bench/freshness.ts --roles (freshness across serve replicas, the standby's takeover after SIGKILL)
// and bench/roles.ts (a serve replica's start-up and memory against stores of --roles-events sizes)
type RolesFresh = { roundsFresh: number; freshP50Ms: number; freshP99Ms: number; publishP50Ms: number; publishP99Ms: number; takeoverMs: number; standbyActiveMs: number; reads: number; readsFailed: number; batches: number; batchesFailed: number; acknowledged: number; stored: number };
type RolesSize = { events: number; fillMs: number; learnerStartMs: number; learnerFirstPublishMs: number; learnerRssMb: number; serveStartMs: number; serveStartCpuMs: number; serveStarts: number[]; serveRssStartMb: number; serveRssAfterAnchorsMb: number; sameListsAsModel: string };
let rolesFresh: RolesFresh | null = null;
let rolesSizes: RolesSize[] | null = null;
const ROLES_EVENTS = flags['roles-events'] ?? (QUICK ? '10000' : `10000,100000${flags['with-10m'] ? ',10000000' : ''}`);
/** Runs bench/<script> in a child on every core and answers the JSON of its `<tag> ...` line (null without one). */
async function childJson<T>(script: string, args: string[], tag: string, env: Record<string, string> = {}): Promise<T | null> {
  console.log(`${tag}: bench/${script} ${args.join(' ')}`);
  const child = spawn('taskset', ['-c', `0-${os.cpus().length - 1}`, process.execPath, '--import', 'tsx', `bench/${script}`, ...args], {
    cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const code = await new Promise((resolve) => child.once('exit', resolve));
  console.log(output.replace(new RegExp(`^${tag} .*\n?`, 'm'), ''));
  const json = new RegExp(`^${tag} (.*)$`, 'm').exec(output);
  if (!json) notes.push(`bench/${script} ${args.join(' ')}: no figures (exit ${String(code)})`);
  return json ? (JSON.parse(json[1]!) as T) : null;
}
if (wanted('roles')) {
  rolesFresh = await childJson<RolesFresh>('freshness.ts', ['--roles'], 'freshness-json', { ROUNDS: QUICK ? '5' : '10' });
  rolesSizes = await childJson<RolesSize[]>('roles.ts', ['--events', ROLES_EVENTS], 'roles-json');
}

// ---------------------------------------------------------------------------------------------
// the host's speed, again: the references measured first are measured once more at the end, so
// that a host whose speed moved during the run (a shared machine: bare Apollo went from 297 to
// 512 µs a request within half an hour on one host) says so beside ratios taken minutes apart

/** Past this change of a reference's CPU a request between the run's start and end, the run is marked unsteady. */
const DRIFT_LIMIT = 0.15;
const drift: { name: string; before: Measured; after: Measured }[] = [];
if (rows.some((row) => row.id !== 'raw' && row.id !== 'apollo')) {
  for (const [id, name, measure] of [['raw', '(1) raw node:http', measureRaw], ['apollo', '(2) bare Apollo', measureApollo]] as const) {
    const before = rows.find((row) => row.id === id)?.m;
    if (before === undefined) continue;
    console.log(`${id}, again: the host's speed at the end of the run`);
    drift.push({ name, before, after: await measure() });
  }
}
const driftOf = (d: (typeof drift)[number]): number => d.after.cpuUs / d.before.cpuUs - 1;
const unsteady = drift.filter((d) => Math.abs(driftOf(d)) > DRIFT_LIMIT);
if (unsteady.length > 0) {
  notes.push(
    `the host's speed moved during the run (${unsteady.map((d) => `${d.name} ${fmt(driftOf(d) * 100, 0)}%`).join(', ')} CPU a request from the start to the end, ` +
      `over the ${fmt(DRIFT_LIMIT * 100, 0)}% allowed): ratios between scenarios measured far apart are not to be trusted; run again, or compare builds with bench/ab.ts`,
  );
}

// ---------------------------------------------------------------------------------------------
// the table

const byId = new Map(rows.map((row) => [row.id, row]));
const rps = (id: string): number => byId.get(id)?.m.rps ?? NaN;
const table = [
  '| scenario | req/s | server CPU µs/req | p50 ms | p99 ms | vs (1) raw | vs (2) Apollo | vs (3) naive |',
  '|---|---:|---:|---:|---:|---:|---:|---:|',
  ...rows.map(
    (row) =>
      `| ${row.name} | ${Math.round(row.m.rps)} | ${Math.round(row.m.cpuUs)} | ${fmt(row.m.p50)} | ${fmt(row.m.p99)} | ${fmt(row.m.rps / rps('raw'))} | ${fmt(row.m.rps / rps('apollo'))} | ${fmt(row.m.rps / rps('naive'))} |`,
  ),
];

const verdict = (ok: boolean): string => (ok ? 'met' : '**missed**');
const targets: string[] = [];
const embRow = byId.get('emb');
for (const [keyId, basicId, label] of [['emb', 'emb-basic', '(4b)'], ['pg-key', 'pg-basic', '(4d) on PostgreSQL:']] as const) {
  const keyRow = byId.get(keyId);
  const passwordRow = byId.get(basicId);
  if (!keyRow || !passwordRow) continue;
  const ratio = passwordRow.m.cpuUs / keyRow.m.cpuUs;
  targets.push(`| ${label} Basic credentials cost ≤ 2x an API key's (server CPU per request) | ${fmt(ratio)}x (${Math.round(passwordRow.m.cpuUs)} against ${Math.round(keyRow.m.cpuUs)} µs) | ${verdict(ratio <= 2)} |`);
}
if (embRow) {
  targets.push(`| (4) embedded ≥ 50% of (1) | ${fmt((embRow.m.rps / rps('raw')) * 100, 0)}% | ${verdict(embRow.m.rps >= 0.5 * rps('raw'))} |`);
  targets.push(`| (4) embedded ≥ 3x (2) | ${fmt(embRow.m.rps / rps('apollo'))}x | ${verdict(embRow.m.rps >= 3 * rps('apollo'))} |`);
  targets.push(`| (4) embedded ≥ 10x (3) | ${fmt(embRow.m.rps / rps('naive'))}x | ${verdict(embRow.m.rps >= 10 * rps('naive'))} |`);
  targets.push(`| (4) embedded p99 ≤ 5 ms at ${CONNECTIONS} connections | ${fmt(embRow.m.p99)} ms | ${verdict(embRow.m.p99 <= 5)} |`);
  if (extra.auth) {
    const { rps: cost, cpu, pairs } = extra.auth;
    targets.push(
      `| authentication ≤ 5% of throughput (embedded; median of ${pairs.length} paired rounds) | ${fmt(cost * 100, 1)}% of req/s ` +
        `(pairs ${pairs.map((x) => fmt(x * 100, 1)).join(', ')}); ${fmt(cpu * 100, 1)}% of CPU per request | ${verdict(cost <= 0.05)} |`,
    );
  }
  if (extra.authTimed) {
    const { us, cpuUs } = extra.authTimed;
    targets.push(
      `| authentication ≤ 5% of throughput (embedded; timed in place) | ${fmt(us)} µs a call of ${fmt(cpuUs, 1)} µs CPU per request: ` +
        `${fmt((us / cpuUs) * 100, 1)}% | ${verdict(us / cpuUs <= 0.05)} |`,
    );
  }
}
if (filtersResult) {
  const { worst, unfilteredUs } = filtersResult;
  targets.push(`| filtered lookup ≤ 2x an unfiltered one (bench/filters.ts, worst filter) | ${fmt(worst.ratio)}x (${worst.name}; unfiltered ${fmt(unfilteredUs)} µs) | ${verdict(worst.ratio <= 2)} |`);
}
const lookupRow = byId.get('lookup');
if (lookupRow) {
  // Where the load generator, not the gateway, sets the pace (see extra.lookupCeiling), req/s
  // cannot show 4x; the servers' CPU per request says what each could answer on its core.
  const apolloRow = byId.get('apollo');
  const capacity = apolloRow ? `; server CPU a request: (2)'s ${fmt(apolloRow.m.cpuUs)} µs ÷ ${fmt(lookupRow.m.cpuUs)} µs = ${fmt(apolloRow.m.cpuUs / lookupRow.m.cpuUs)}x` : '';
  const ceiling = extra.lookupCeiling === undefined ? '' : `; the load generator's ceiling with these bodies ${Math.round(extra.lookupCeiling)} req/s = ${fmt(extra.lookupCeiling / rps('apollo'))}x (2)`;
  targets.push(`| (7) uncached lookups ≥ 2x (2) | ${fmt(lookupRow.m.rps / rps('apollo'))}x${capacity}${ceiling} | ${verdict(lookupRow.m.rps >= 2 * rps('apollo'))} |`);
  targets.push(`| (7) uncached lookups p99 ≤ 5 ms at ${CONNECTIONS} connections | ${fmt(lookupRow.m.p99)} ms | ${verdict(lookupRow.m.p99 <= 5)} |`);
}
const inlineRow = byId.get('inline');
if (inlineRow) {
  // not a target: each text is new to Apollo, which parses and validates it
  targets.push(`| (7b) inline literals, against (2) | ${fmt(inlineRow.m.rps / rps('apollo'))}x | reported |`);
}
const mixedRow = byId.get('mixed');
if (mixedRow) {
  const reads = extra.mixed?.['mixed-reads'];
  targets.push(
    `| (8) realistic mix ≥ 3x (2) | ${fmt(mixedRow.m.rps / rps('apollo'))}x (response cache hit rate ${fmt((extra.mixed?.mixed?.hitRate ?? NaN) * 100, 1)}%` +
      `${reads ? `; without the events ${fmt(reads.hitRate * 100, 1)}%` : ''}) | ${verdict(mixedRow.m.rps >= 3 * rps('apollo'))} |`,
  );
  targets.push(`| (8) realistic mix p99 ≤ 5 ms at ${CONNECTIONS} connections | ${fmt(mixedRow.m.p99)} ms | ${verdict(mixedRow.m.p99 <= 5)} |`);
}
const rolesMixRow = byId.get('roles-mix');
const apolloCpu = byId.get('apollo')?.m.cpuUs ?? NaN;
if (rolesMixRow) {
  const ratio = rolesMixRow.m.cpuUs / apolloCpu;
  const learnerUs = extra.learnerCpuUs ?? NaN;
  targets.push(
    `| (8s) a serve replica's CPU a request in the mix with batches ≤ 1/2.5 of (2)'s (ratio ≤ 0.4) | ${fmt(ratio)} (${Math.round(rolesMixRow.m.cpuUs)} against ${Math.round(apolloCpu)} µs; ` +
      `the learner beside it ${Math.round(learnerUs)} µs a replica's request, ${fmt(learnerUs / apolloCpu)} of (2)'s; together ${fmt((rolesMixRow.m.cpuUs + learnerUs) / apolloCpu)}; ` +
      `response cache hit rate ${fmt((extra.mixed?.['roles-mix']?.hitRate ?? NaN) * 100, 1)}%) | ${Number.isFinite(ratio) ? verdict(ratio <= 0.4) : 'no (2) in this run'} |`,
  );
}
const rolesReadsRow = byId.get('roles-mix-reads');
if (rolesReadsRow) {
  targets.push(`| (8sr) the same replica's CPU a request without the batches, against (2)'s | ${fmt(rolesReadsRow.m.cpuUs / apolloCpu)} (${Math.round(rolesReadsRow.m.cpuUs)} µs; ` +
    `response cache hit rate ${fmt((extra.mixed?.['roles-mix-reads']?.hitRate ?? NaN) * 100, 1)}%) | reported |`);
}
if (rolesFresh) {
  const f = rolesFresh;
  targets.push(`| (R1) roles: an event acknowledged by either serve replica changes the lists both serve, p99 ≤ 2 s | p50 ${f.freshP50Ms} ms, p99 ${f.freshP99Ms} ms (${f.roundsFresh} batches, both kinds; of which the learner's until it has published through the batch: p50 ${f.publishP50Ms} ms, p99 ${f.publishP99Ms} ms) | ${verdict(f.freshP99Ms <= 2000)} |`);
  targets.push(`| (R2) roles: SIGKILL of the active learner, the standby publishes the lists of new events ≤ 10 s | ${fmt(f.takeoverMs / 1000, 1)} s (the standby held the lock after ${fmt(f.standbyActiveMs / 1000, 1)} s) | ${verdict(f.takeoverMs <= 10_000)} |`);
  targets.push(`| (R2) roles: the serve replicas never stop answering during the takeover (failed requests) | ${f.readsFailed} of ${f.reads} reads, ${f.batchesFailed} of ${f.batches} event batches | ${verdict(f.readsFailed + f.batchesFailed === 0)} |`);
  targets.push(`| (R2) roles: no acknowledged event lost (stored ≥ acknowledged) | ${f.stored} stored, ${f.acknowledged} acknowledged | ${verdict(f.stored >= f.acknowledged)} |`);
}
for (const size of rolesSizes ?? []) {
  targets.push(
    `| (R3) roles: a serve replica against ${size.events.toLocaleString('en')} events ready ≤ 3 s, RSS < 250 MB after 2,000 anchors of each kind | ` +
      `ready in ${fmt(size.serveStartMs / 1000, 1)} s (CPU ${fmt(size.serveStartCpuMs / 1000, 2)} s); ${size.serveRssAfterAnchorsMb} MB (${size.serveRssStartMb} MB at ready) | ${verdict(size.serveStartMs <= 3000 && size.serveRssAfterAnchorsMb < 250)} |`,
  );
}
const restRow = byId.get('rest');
if (restRow) {
  targets.push(`| (4) REST mode ≥ 50% of (1) | ${fmt((restRow.m.rps / rps('raw')) * 100, 0)}% | ${verdict(restRow.m.rps >= 0.5 * rps('raw'))} |`);
  targets.push(`| (4) REST mode ≥ 3x (2) | ${fmt(restRow.m.rps / rps('apollo'))}x | ${verdict(restRow.m.rps >= 3 * rps('apollo'))} |`);
  targets.push(`| (4) REST mode ≥ 10x (3) | ${fmt(restRow.m.rps / rps('naive'))}x | ${verdict(restRow.m.rps >= 10 * rps('naive'))} |`);
  targets.push(`| (4) REST mode p99 ≤ 5 ms at ${CONNECTIONS} connections | ${fmt(restRow.m.p99)} ms | ${verdict(restRow.m.p99 <= 5)} |`);
}
if (extra.cold) {
  const c = extra.cold;
  targets.push(
    `| (5) cold adds ≤ 1 ms to the upstream's latency (p50, one at a time) | upstream ${fmt(c.upstream.p50)} ms, gateway ${fmt(c.gateway.p50)} ms: +${fmt(c.gateway.p50 - c.upstream.p50)} ms (p99 +${fmt(c.gateway.p99 - c.upstream.p99)} ms); ` +
      `the bare hop alone (reference) ${fmt(c.hop.p50)} ms: +${fmt(c.hop.p50 - c.upstream.p50)} ms, so the gateway's own share is +${fmt(c.gateway.p50 - c.hop.p50)} ms | ${verdict(c.gateway.p50 - c.upstream.p50 <= 1)} |`,
  );
}

const cpu = /model name\s*:\s*(.*)/.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? 'unknown';
const command = `npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`;
const load1 = os.loadavg()[0]!.toFixed(2);
const lines = [
  `Machine: ${os.cpus().length} cores (nproc), ${cpu}; node ${process.version}; ${new Date().toISOString()}`,
  `Command: \`${command}\` (${DURATION} s per scenario after ${WARMUP} s of warm-up, ${CONNECTIONS} connections; load average at the end ${load1})`,
  '',
  ...table,
  '',
  '| target | measured | |',
  '|---|---|---|',
  ...targets,
  '',
  ...(drift.length > 0
    ? [
        `The host's speed, the references again at the end of the run: ${drift
          .map((d) => `${d.name} ${Math.round(d.before.cpuUs)} then ${Math.round(d.after.cpuUs)} µs CPU a request (${driftOf(d) >= 0 ? '+' : ''}${fmt(driftOf(d) * 100, 0)}%), ${Math.round(d.before.rps)} then ${Math.round(d.after.rps)} req/s`)
          .join('; ')}${unsteady.length > 0 ? ': **unsteady** (see the note below)' : `: steady (within ±${fmt(DRIFT_LIMIT * 100, 0)}%)`}.`,
        '',
      ]
    : []),
  ...(extra.lookup
    ? [
        `(7) lookup through GraphQL, embedded, uncached, one request at a time over ${extra.lookup.requests} distinct anchors: ` +
          `p50 ${fmt(extra.lookup.p50)} ms, p99 ${fmt(extra.lookup.p99)} ms, mean ${fmt(extra.lookup.mean)} ms (the table's row is ${CONNECTIONS} connections).`,
        '',
      ]
    : []),
  ...(extra.cold
    ? [
        `(5) cold, one request at a time, each anchor asked of the three in turn: the upstream directly p50 ${fmt(extra.cold.upstream.p50)} ms; ` +
          `the bare hop (bench/targets/proxy.ts: node:http in, the same undici call out, the bytes back; no GraphQL, no parsing, no cache) ` +
          `${fmt(extra.cold.hop.p50)} ms; the gateway ${fmt(extra.cold.gateway.p50)} ms.`,
        '',
        `(5) cold, ${describePhases(extra.cold.phases)}.`,
        `(5) cold, server CPU a request at ${CONNECTIONS} connections: the gateway ${Math.round(byId.get('cold')?.m.cpuUs ?? NaN)} µs, the bare hop ${Math.round(extra.cold.hopCpuUs)} µs` +
          `${byId.get('naive') ? `, the naive peer (3) ${Math.round(byId.get('naive')!.m.cpuUs)} µs: the gateway at ${fmt(((byId.get('cold')?.m.cpuUs ?? NaN) / byId.get('naive')!.m.cpuUs) * 100, 0)}% of the naive peer's (40% asked)` : ''}.`,
        '',
      ]
    : []),
  ...(extra.nestedCalls
    ? [
        `Nested query upstream calls per request: cold ${fmt(extra.nestedCalls.cold)} ` +
          `(${JSON.stringify(extra.nestedCalls.coldDetail)} over ${COLD_REQUESTS} requests), warm ${fmt(extra.nestedCalls.warm, 4)}.`,
        '',
      ]
    : []),
  ...(extra.keyRates
    ? [
        `Key verification, one caller, in-process, one call a turn of the event loop: \`authenticate()\` with an API key against SQLite ${Math.round(extra.keyRates.apiKey)}/s; ` +
          `with Basic credentials (scrypt N=2^15, r=8, p=3) ${fmt(extra.keyRates.basic, 1)}/s.`,
        '',
      ]
    : []),
  ...notes.map((note) => `Note: ${note}`),
  ...(rolesSizes && rolesSizes.length > 0
    ? [
        'RECS_ROLE by store size (`bench/roles.ts`: processes from dist/, 10,000 items, a learner then a serve replica on PostgreSQL):',
        '',
        '| events stored | learner: ready / first full publish | learner RSS | serve replica: spawn to ready, median of 3 (each) | its CPU time to ready | serve RSS at ready / after 2,000 anchors of each kind | serve lists equal to the model\'s |',
        '|---:|---:|---:|---:|---:|---:|---:|',
        ...rolesSizes.map((r) => `| ${r.events.toLocaleString('en')} | ${fmt(r.learnerStartMs / 1000, 1)} s / ${fmt(r.learnerFirstPublishMs / 1000, 1)} s | ${r.learnerRssMb} MB | ${fmt(r.serveStartMs / 1000, 1)} s (${r.serveStarts.map((ms) => fmt(ms / 1000, 1)).join(', ')}) | ${fmt(r.serveStartCpuMs / 1000, 2)} s | ${r.serveRssStartMb} / ${r.serveRssAfterAnchorsMb} MB | ${r.sameListsAsModel} |`),
        '',
      ]
    : []),
  ...(recommenderOutput ? ['Recommender (`bench/recommender.ts`, on both cores):', '', '```', recommenderOutput.trim(), '```', ''] : []),
  ...(filtersOutput ? ['Filtered lookups (`bench/filters.ts`, in-process, on both cores):', '', '```', filtersOutput.trim(), '```', ''] : []),
  ...(forYouOutput ? ['Lists for one shopper (`bench/forYou.ts`, in-process):', '', '```', forYouOutput.trim(), '```', ''] : []),
  ...(attributionOutput ? ['Attribution and A/B assignment (`bench/attribution.ts`, in-process):', '', '```', attributionOutput.trim(), '```', ''] : []),
];
const text = lines.join('\n');
console.log(`\n${text}`);

if (!flags['no-write']) {
  const file = path.resolve(ROOT, flags.out);
  const marker = '<!-- bench:latest -->';
  let previous = '';
  try {
    previous = readFileSync(file, 'utf8');
  } catch {
    // first run
  }
  const [head, , tail] = previous.split(marker);
  const updated =
    previous.includes(marker) && tail !== undefined
      ? `${head}${marker}\n${text}\n${marker}${tail}`
      : `# Benchmarks\n\n${marker}\n${text}\n${marker}\n`;
  writeFileSync(file, updated);
  console.log(`\nwrote ${file}`);
}
cleanup();
process.exit(0);
