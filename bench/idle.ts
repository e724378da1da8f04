/**
 * What a minute of idling after start-up does to the gateway (not a test):
 *   npx tsx bench/idle.ts [--idle 70] [--rounds 4] [--seconds 5]
 * Starts the gateway the way `npm start` does (node bin/recs-gateway.js serve, on the compiled
 * dist/), lets it answer one request and sit idle, then starts a second one and loads both at
 * once, pinned to the same core, with the benchmark's cached query (20 connections each): the
 * scheduler shares the core evenly, so their req/s stand in the inverse ratio of their costs.
 * Done twice: with V8's defaults, and with --no-memory-reducer (what `npm start` passes). Prints
 * each round's req/s and the ratio idled/new, and each process's resident memory when idle and
 * after the load (BENCHMARKS.md, "seventh pass").
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { buildDemo } from '../src/backends/embedded/demo.js';
import { EmbeddedRecs } from '../src/backends/embedded/recs.js';

const { values: flags } = parseArgs({
  options: {
    idle: { type: 'string', default: '70' },
    rounds: { type: 'string', default: '4' },
    seconds: { type: 'string', default: '5' },
  },
});
const IDLE_S = Number(flags.idle);
const ROUNDS = Number(flags.rounds);
const ROUND_S = Number(flags.seconds);
const ROOT = path.resolve(import.meta.dirname, '..');
const SERVER_CPU = os.availableParallelism() > 1 ? '1' : '0';
const QUERY = 'query Recs($itemId: ItemId!) { productRecommendations(itemId: $itemId) { itemId name salePrice brandName customerRating } }';
const PASSWORD = 'bench-password-123';

execFileSync(process.execPath, [path.join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { cwd: ROOT, stdio: 'inherit' });
// the load generator on the other core
if (SERVER_CPU === '1') execFileSync('taskset', ['-a', '-p', '-c', '0', String(process.pid)], { stdio: 'ignore' });
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'recs-gateway-idle-'));
const env: NodeJS.ProcessEnv = {
  ...process.env,
  DATA_DIR: dataDir,
  NODE_ENV: 'production',
  LOG_LEVEL: 'warn',
  HOST: '127.0.0.1',
  // the rate limiter stays on the path but never refuses
  RATE_LIMIT_RPS: '1000000',
  RATE_LIMIT_BURST: '10000000',
  AUTH_FAILURES_PER_MINUTE: '0',
};
delete env.REDIS_URL;
execFileSync(process.execPath, ['bin/recs-gateway.js', 'user', 'add', 'bench', '--password', PASSWORD], { cwd: ROOT, env });

const children = new Set<ChildProcess>();
process.on('exit', () => children.forEach((child) => child.kill()));

interface Gateway {
  url: string;
  rssMb: () => number;
  stop: () => void;
}

let nextPort = 4300;
async function start(nodeFlags: string[]): Promise<Gateway> {
  const port = nextPort++;
  const child = spawn('taskset', ['-c', SERVER_CPU, process.execPath, ...nodeFlags, 'bin/recs-gateway.js', 'serve'], {
    cwd: ROOT,
    env: { ...env, PORT: String(port) },
    stdio: 'ignore',
  });
  children.add(child);
  const url = `http://127.0.0.1:${port}`;
  for (let tries = 0; ; tries++) {
    if (child.exitCode !== null) throw new Error(`the gateway exited with ${child.exitCode}`);
    if (tries > 300) throw new Error('the gateway did not become ready in 60 s');
    const ready = await fetch(`${url}/readyz`).then((response) => response.ok, () => false);
    if (ready) break;
    await sleep(200);
  }
  // taskset's child is node itself (taskset execs it), so the pid is the server's
  const rssMb = (): number => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))![1]) / 1024;
  return { url, rssMb, stop: () => (child.kill(), children.delete(child)) };
}

async function post(url: string, authorization: string, query: string, variables: object = {}): Promise<{ data?: Record<string, unknown> }> {
  const response = await fetch(`${url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization },
    body: JSON.stringify({ query, variables }),
  });
  const parsed = (await response.json()) as { data?: Record<string, unknown>; errors?: unknown };
  if (!response.ok || parsed.errors) throw new Error(`${response.status} ${JSON.stringify(parsed)}`);
  return parsed;
}

/** req/s of each target over `seconds`, loaded at once. */
async function loadBoth(targets: Gateway[], body: string, authorization: string, seconds: number): Promise<number[]> {
  const results = await Promise.all(
    targets.map((target) =>
      autocannon({
        url: `${target.url}/graphql`,
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization },
        body,
        connections: 20,
        duration: seconds,
      }),
    ),
  );
  for (const result of results) if (result.non2xx > 0 || result.errors > 0) throw new Error(`${result.non2xx} non-2xx answers, ${result.errors} errors`);
  return results.map((result) => result.requests.total / seconds);
}

// the benchmark's hot anchor: the first of the deterministic demo shop with a full list
const demo = buildDemo();
const demoRecs = new EmbeddedRecs(demo.catalog, demo.log);
const anchor = [...demo.catalog.values()].map((item) => item.itemId).find((id) => demoRecs.recommendNow('NEXT_BEST_PRODUCT', id).entries.length === 10)!;
let key: string | undefined;
const fmt = (x: number, digits = 0): string => x.toFixed(digits);

async function trial(label: string, nodeFlags: string[]): Promise<void> {
  console.log(`\n${label}: one gateway idle ${IDLE_S} s after start-up, then loaded at once with one just started`);
  const idled = await start(nodeFlags);
  if (key === undefined) {
    const basic = `Basic ${Buffer.from(`bench:${PASSWORD}`).toString('base64')}`;
    const created = await post(idled.url, basic, 'mutation { createApiKey(input: { name: "idle" }) { key } }');
    key = (created.data!.createApiKey as { key: string }).key;
  }
  const body = JSON.stringify({ query: QUERY, variables: { itemId: anchor } });
  await post(idled.url, key, QUERY, { itemId: anchor });
  await sleep(IDLE_S * 1000);
  const fresh = await start(nodeFlags);
  await post(fresh.url, key, QUERY, { itemId: anchor });
  console.log(`  resident memory before the load: idled ${fmt(idled.rssMb())} MB, new ${fmt(fresh.rssMb())} MB`);
  await loadBoth([idled, fresh], body, key, 2);
  const ratios: number[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    const [a, b] = await loadBoth([idled, fresh], body, key, ROUND_S);
    ratios.push(a! / b!);
    console.log(`  round ${round}: idled ${fmt(a!)} req/s, new ${fmt(b!)} req/s: idled/new ${fmt(a! / b!, 3)}`);
  }
  ratios.sort((x, y) => x - y);
  console.log(`  median idled/new ${fmt(ratios[ratios.length >> 1]!, 3)}; resident memory after the load: idled ${fmt(idled.rssMb())} MB, new ${fmt(fresh.rssMb())} MB`);
  idled.stop();
  fresh.stop();
}

try {
  await trial("V8's defaults", []);
  await trial('--no-memory-reducer', ['--no-memory-reducer']);
} finally {
  rmSync(dataDir, { recursive: true, force: true });
}
console.log(`\nnode ${process.version}, ${os.cpus().length} cores, load average ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`);
