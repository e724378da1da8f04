/**
 * Two builds of the gateway side by side (not a test): `npx tsx bench/ab.ts --a dist-before --b dist`.
 * Each build is a directory beside dist/ (copy dist/ after `npx tsc -p tsconfig.build.json`);
 * both gateways are started together on CPU 1 with the same environment and loaded in turn,
 * A then B, for --rounds rounds of --seconds each after a round each unmeasured, so that the
 * machine's drift falls on both alike. Prints each round's req/s and server CPU µs a request,
 * and the median of B's CPU over A's. Environment variables pass through to both gateways.
 *
 * Scenarios (--scenario): `lookup` (7), distinct anchors in variables, no response cache;
 * `inline` (7b), the anchor written into the text, no response cache; `cached` (4), one query;
 * `cold` (5), REST mode in front of an embedded gateway (the upstream, on CPU 0 with the load
 * generator), distinct anchors in turn, the shared cache's TTLs at 1 s so that an anchor asked
 * again (after 10,843 others) is cold again, no response cache (every answer cold); `nested` (6),
 * the same with each item's variantItems, the items' TTL left at its default (the lists cold, the
 * items as a running gateway has them).
 *
 * `--a-root <checkout>` (or `--b-root`) runs that build with the checkout's own bench target and
 * its dist/ (built there): a build from before this target's imports, e.g. the code before issue
 * 22 (`git worktree add --detach /tmp/old 1ac3702`, node_modules linked, `npx tsc -p
 * tsconfig.build.json` there; --a is then ignored).
 *
 * `--cpu-prof <dir>` runs A and B under node's --cpu-prof (a sample every 100 µs; profiles in
 * <dir>/a and <dir>/b, written when they stop at the end): the shares of one step in two profiles
 * taken in the same rounds are steadier than the CPU a request on a busy machine
 * (`npx tsx bench/cpuprofile.ts <file>` summarises one).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { cpuMsOf } from './procCpu.js';
import { EVENTS_SHARE, MIXED_WARM, isEventsBody, mixedBodies } from './mix.js';
import { buildDemo } from '../src/backends/embedded/demo.js';
import { EmbeddedKeyService } from '../src/backends/embedded/keys/keyService.js';
import { SqliteKeyStore } from '../src/backends/embedded/keys/sqliteStore.js';
import { addUser } from '../src/backends/embedded/keys/users.js';
import { basicAuthorization } from '../src/auth/authorization.js';
import { EmbeddedRecs } from '../src/backends/embedded/recs.js';

const { values: flags } = parseArgs({
  options: {
    a: { type: 'string', default: 'dist-a' },
    b: { type: 'string', default: 'dist' },
    scenario: { type: 'string', default: 'lookup' },
    rounds: { type: 'string', default: '6' },
    seconds: { type: 'string', default: '4' },
    connections: { type: 'string', default: '20' },
    // distinct anchors each build is asked for (default all): the same build twice with two
    // counts tells whether the number of anchors cycled changes a request's cost
    'a-anchors': { type: 'string' },
    'b-anchors': { type: 'string' },
    'cpu-prof': { type: 'string' },
    // a checkout of another commit (its dist/ built) whose own bench/targets/gateway.ts runs build
    // A (or B): for builds older than this target's imports (the layout before config/ and http/)
    'a-root': { type: 'string' },
    'b-root': { type: 'string' },
    // node/V8 flags for one build's process besides `npm start`'s, space-separated: the same
    // build twice with and without a flag (e.g. --b-flags=--max-semi-space-size=32)
    'a-flags': { type: 'string' },
    'b-flags': { type: 'string' },
    // environment variables for one build's process, space-separated NAME=value: the same build
    // with and without a setting (e.g. --b-env=RESPONSE_CACHE_MAX_ENTRIES=0)
    'a-env': { type: 'string' },
    'b-env': { type: 'string' },
  },
});
const ROOT = new URL('../', import.meta.url).pathname;
const FIELDS = '{ itemId name salePrice brandName customerRating }';
const NESTED = '{ itemId name salePrice variantItems { itemId name salePrice color size } }';
const scenario = flags.scenario;
if (!['lookup', 'inline', 'cached', 'cold', 'nested', 'mixed'].includes(scenario)) throw new Error(`no scenario ${scenario}`);
const mixed = scenario === 'mixed';
const rest = scenario === 'cold' || scenario === 'nested';

execFileSync('taskset', ['-a', '-p', '-c', '0', String(process.pid)], { stdio: 'ignore' });
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'recs-ab-'));
const children: ChildProcess[] = [];
process.on('exit', () => {
  for (const child of children) child.kill('SIGKILL');
  rmSync(dataDir, { recursive: true, force: true });
});

const store = new SqliteKeyStore(path.join(dataDir, 'keys.db'));
await addUser(store, { username: 'bench', password: 'bench-password' });
const keys = new EmbeddedKeyService(store);
const principal = await keys.authenticate(basicAuthorization('bench', 'bench-password'));
const key = (await keys.createKey(principal, { name: 'client' })).key;
const recsKey = (await keys.createKey(principal, { name: 'gateway' })).key;
// the mix's recordEvents batches need an administrator
await addUser(store, { username: 'bench-admin', password: 'bench-admin-password', isAdmin: true });
const adminKey = (await keys.createKey(await keys.authenticate(basicAuthorization('bench-admin', 'bench-admin-password')), { name: 'events' })).key;
await store.close();
// the mix writes events: each build a store of its own, with the same keys
for (const side of ['a', 'b']) {
  mkdirSync(path.join(dataDir, side));
  copyFileSync(path.join(dataDir, 'keys.db'), path.join(dataDir, side, 'keys.db'));
}
const demo = buildDemo();
const recs = new EmbeddedRecs(demo.catalog, demo.log);
const anchors = [...demo.catalog.values()].map((item) => item.itemId).filter((id) => recs.recommendNow('NEXT_BEST_PRODUCT', id).entries.length === 10);
const bodies = mixed
  ? mixedBodies([...demo.catalog.values()].map((item) => item.itemId), EVENTS_SHARE)
  : scenario === 'inline'
    ? anchors.map((id) => JSON.stringify({ query: `{ productRecommendations(itemId: ${id}) ${FIELDS} }` }))
    : (scenario === 'cached' ? anchors.slice(0, 1) : anchors).map((itemId) =>
        JSON.stringify({ query: `query Recs($itemId: ItemId!) { productRecommendations(itemId: $itemId) ${scenario === 'nested' ? NESTED : FIELDS} }`, variables: { itemId } }),
      );

interface Gateway {
  url: string;
  origin: string;
  pid: number;
}
/** Starts a build; `profile` names its profile's directory under --cpu-prof (the builds compared, not the upstream). */
async function start(build: string, upstream?: Gateway, profile?: 'a' | 'b'): Promise<Gateway> {
  const env = {
    ...process.env, REDIS_URL: undefined, LOG_LEVEL: 'warn', NODE_ENV: 'production', BACKEND: 'embedded', BENCH_DIST: build,
    DATA_DIR: mixed && profile !== undefined ? path.join(dataDir, profile) : dataDir,
    RATE_LIMIT_RPS: '1000000', RATE_LIMIT_BURST: '10000000', AUTH_FAILURES_PER_MINUTE: '0', NEW_DOCUMENTS_RPS: '0',
    ...(scenario === 'cached' || mixed ? {} : { RESPONSE_CACHE_MAX_ENTRIES: '0' }),
    ...(upstream
      ? {
          BACKEND: 'rest', APIKEY_SERVICE_URL: upstream.origin, RECS_SERVICE_URL: upstream.origin, RECS_API_KEY: recsKey,
          // nested: the lists cold, the items (and the variants they name) as a running gateway has them
          CACHE_RECS_TTL_SECONDS: '1', ...(scenario === 'nested' ? {} : { CACHE_ITEM_TTL_SECONDS: '1' }),
        }
      : {}),
    ...Object.fromEntries((profile === undefined ? [] : (flags[`${profile}-env`]?.split(' ').filter(Boolean) ?? [])).map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)])),
  };
  const profiling = flags['cpu-prof'] !== undefined && profile !== undefined
    ? ['--cpu-prof', '--cpu-prof-interval=100', `--cpu-prof-dir=${path.resolve(flags['cpu-prof'], profile)}`]
    : [];
  const root = profile === undefined ? undefined : flags[`${profile}-root`];
  const own = profile === undefined ? [] : (flags[`${profile}-flags`]?.split(' ').filter(Boolean) ?? []);
  const child = spawn('taskset', ['-c', upstream || !rest ? '1' : '0', process.execPath, ...profiling, '--no-memory-reducer', ...own, '--import', 'tsx', 'bench/targets/gateway.ts'], { cwd: root ?? ROOT, env, stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  const url = await new Promise<string>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${build} exited with ${code}`)));
    createInterface({ input: child.stdout }).on('line', (line) => {
      if (line.startsWith('{"url"')) resolve((JSON.parse(line) as { url: string }).url);
    });
  });
  return { url: `${url}/graphql`, origin: url, pid: child.pid! };
}
const bodiesOf = (count: string | undefined): string[] => (count === undefined ? bodies : bodies.slice(0, Number(count)));
const bodiesFor = new Map<string, string[]>();
/** Where each build is in its bodies: the mix's events make a build's state follow what it was sent. */
const cursors = new Map<string, number>();
const adminHeaders = { 'content-type': 'application/json', authorization: adminKey };
async function round(target: Gateway, seconds: number, amount?: number): Promise<{ rps: number; cpuUs: number; p99: number; bad: number }> {
  const own = bodiesFor.get(target.url) ?? bodies;
  const headers = { 'content-type': 'application/json', authorization: key };
  const cpu0 = cpuMsOf(target.pid);
  const result = await autocannon({
    url: target.url, connections: Number(flags.connections), ...(amount === undefined ? { duration: seconds } : { amount }), method: 'POST',
    headers, body: own[0],
    requests: [{
      setupRequest: (request: Record<string, unknown>) => {
        const at = cursors.get(target.url) ?? 0;
        cursors.set(target.url, at + 1);
        const payload = own[at % own.length]!;
        return { ...request, body: payload, headers: mixed && isEventsBody(payload) ? adminHeaders : headers };
      },
    }],
  });
  const cpu = cpuMsOf(target.pid) - cpu0;
  return { rps: result.requests.total / result.duration, cpuUs: (cpu * 1000) / result.requests.total, p99: result.latency.p99, bad: result.non2xx + result.errors };
}

// cold: both builds in REST mode in front of one embedded gateway (the current build)
const upstream = rest ? await start('dist') : undefined;
const [a, b] = await Promise.all([start(flags.a, upstream, 'a'), start(flags.b, upstream, 'b')]);
bodiesFor.set(a.url, bodiesOf(flags['a-anchors']));
bodiesFor.set(b.url, bodiesOf(flags['b-anchors']));
const named = (side: 'a' | 'b'): string => (flags[`${side}-root`] !== undefined ? `${flags[`${side}-root`]}/dist` : flags[side]);
console.log(`${scenario}: A ${named('a')} (${bodiesFor.get(a.url)!.length} bodies), B ${named('b')} (${bodiesFor.get(b.url)!.length} bodies); load average ${os.loadavg()[0]!.toFixed(2)}`);
// warm-up: the JIT's, and the takeover's learning and compiling; the mix's, its response cache's steady state
await round(a, Number(flags.seconds), mixed ? MIXED_WARM : undefined);
await round(b, Number(flags.seconds), mixed ? MIXED_WARM : undefined);
const ratios: number[] = [];
for (let i = 0; i < Number(flags.rounds); i++) {
  const [first, second] = i % 2 === 0 ? [a, b] : [b, a];
  const r1 = await round(first, Number(flags.seconds));
  const r2 = await round(second, Number(flags.seconds));
  const [ra, rb] = first === a ? [r1, r2] : [r2, r1];
  ratios.push(rb.cpuUs / ra.cpuUs);
  console.log(
    `round ${i + 1}: A ${Math.round(ra.rps)} req/s ${ra.cpuUs.toFixed(1)} µs p99 ${ra.p99} ms${ra.bad ? ` (${ra.bad} bad)` : ''}; ` +
      `B ${Math.round(rb.rps)} req/s ${rb.cpuUs.toFixed(1)} µs p99 ${rb.p99} ms${rb.bad ? ` (${rb.bad} bad)` : ''}; B/A CPU ${(rb.cpuUs / ra.cpuUs).toFixed(3)}`,
  );
}
ratios.sort((x, y) => x - y);
console.log(`B/A server CPU a request: median ${ratios[Math.floor(ratios.length / 2)]!.toFixed(3)} (${ratios[0]!.toFixed(3)} to ${ratios.at(-1)!.toFixed(3)}); load average ${os.loadavg()[0]!.toFixed(2)}`);
if (flags['cpu-prof'] !== undefined) {
  // a profile is written when its process exits of itself: stop the gateways rather than kill them
  const stopped = children.map((child) => new Promise((resolve) => child.once('exit', resolve)));
  for (const child of children) child.kill('SIGTERM');
  await Promise.race([Promise.all(stopped), new Promise((resolve) => setTimeout(resolve, 10_000))]);
  console.log(`profiles: ${path.resolve(flags['cpu-prof'], 'a')}, ${path.resolve(flags['cpu-prof'], 'b')}`);
}
process.exit(0);
