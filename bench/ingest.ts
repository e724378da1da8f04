/**
 * Ingestion benchmark (not a test; issue 20): `npx tsx bench/ingest.ts [options]`.
 *
 * Sends batches of events, a fixed number of calls in flight, to a gateway in its own process
 * (bench/targets/ingest.ts, compiled dist/, pinned to CPU 1 while this load generator keeps to
 * CPU 0), through GraphQL's recordEvents and through POST /v1/events, and prints events a second,
 * the server's CPU per event and the calls' p50/p99, each as a ratio to the reference measured in
 * the same run: a bare node:http server that only parses the same bodies.
 *
 * Backends (bench/targets/ingest.ts): `raw` (the reference), `noop` (the HTTP + validation path:
 * the batch is checked and applied to nothing), `standin` (the live model in memory, no store),
 * `sqlite` and `pg` (the real thing: committed to DATA_DIR/recs.db or PostgreSQL, then applied to
 * the live model, then answered; the demo shop's 200k events are the model it starts from).
 * `--cpu-prof <dir>` writes the server's CPU profile there (summarise it with bench/cpuprofile.ts).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { cpuMsOf } from './procCpu.js';

const ROOT = new URL('../', import.meta.url).pathname;
const SCENARIOS = [
  'raw-graphql', 'raw-rest', 'noop-graphql', 'noop-rest', 'standin-graphql', 'standin-rest',
  'sqlite-graphql', 'sqlite-rest', 'pg-graphql', 'pg-rest',
] as const;
type ScenarioId = (typeof SCENARIOS)[number];

const USAGE = `Usage: npx tsx bench/ingest.ts [options]

Options:
  --duration <s>   measured seconds per scenario (default 10; the stand-in's at most that)
  --batch <n>      events a call (default 5000)
  --inflight <n>   calls in flight (default 2)
  --only <ids>     comma-separated scenario ids (${SCENARIOS.join(',')})
  --event-ids      give every event an eventId of its own (each call's new: the cost of taking them)
  --cpu-prof <dir> write each server's CPU profile into <dir>
  --no-build       use dist/ as it is
  -h, --help       this text
`;

const { values: flags } = parseArgs({
  options: {
    duration: { type: 'string', default: '10' },
    batch: { type: 'string', default: '5000' },
    inflight: { type: 'string', default: '2' },
    only: { type: 'string' },
    'cpu-prof': { type: 'string' },
    'event-ids': { type: 'boolean', default: false },
    'no-build': { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (flags.help) {
  process.stdout.write(USAGE);
  process.exit(0);
}
const DURATION_MS = Number(flags.duration) * 1000;
const BATCH = Number(flags.batch);
const INFLIGHT = Number(flags.inflight);
const only = flags.only ? (flags.only.split(',') as ScenarioId[]) : [...SCENARIOS];
for (const id of only) if (!SCENARIOS.includes(id)) throw new Error(`--only: no scenario "${id}"`);

const RECORD = 'mutation Record($events: [EventInput!]!) { recordEvents(events: $events) { accepted } }';
/**
 * Distinct batches sent in turn: sessions of 5 views over 200 demo-shop items, a purchase now and
 * then. Each call's sessions are its own (SESSION_MARK), as a shop's stream of visits is: until
 * 2026-11-24 a call sent its batch's sessions again, so that with batches of 50 each session
 * grew by 5 views a resend to about a thousand, and every call re-grouped them whole.
 */
const DISTINCT_BATCHES = 20;

/** What stands in an eventId (--event-ids) for the call's number, so that every call sends ids never sent before. */
const CALL_MARK = '#call#';
/** What stands in a sessionId for the call's number: every call's visits are new. */
const SESSION_MARK = '#visit#';

function events(batch: number): { kind: string; itemId: number; sessionId: string; orderId?: string; time: string; eventId?: string }[] {
  const base = Date.now() - 3_600_000;
  return Array.from({ length: BATCH }, (_, i) => {
    const session = `s-${SESSION_MARK}-${batch}-${Math.floor(i / 5)}`;
    const purchase = i % 50 === 49;
    return {
      kind: purchase ? 'PURCHASE' : 'VIEW',
      itemId: 31000005 + ((i * 7919 + batch * 31) % 200),
      sessionId: session,
      ...(purchase ? { orderId: `o-${batch}-${i}` } : {}),
      time: new Date(base + i * 100).toISOString(),
      ...(flags['event-ids'] ? { eventId: `${CALL_MARK}-${i}` } : {}),
    };
  });
}
/** Calls sent so far (--event-ids numbers each). */
let callsSent = 0;

const graphqlBodies = Array.from({ length: DISTINCT_BATCHES }, (_, b) => JSON.stringify({ query: RECORD, operationName: 'Record', variables: { events: events(b) } }));
const restBodies = Array.from({ length: DISTINCT_BATCHES }, (_, b) => JSON.stringify(events(b).map((e) => ({ ...e, kind: e.kind.toLowerCase() }))));

interface Target {
  url: string;
  key: string;
  child: ChildProcess;
  /** The server's memory after a full garbage collection (SIGUSR2 to the target), in MB. */
  retainedMb(): Promise<number>;
}

async function start(mode: string): Promise<Target> {
  // a directory a scenario: every thread (the loader's, the recommender's workers) writes a profile of its own
  const profile = flags['cpu-prof'] ? ['--cpu-prof', `--cpu-prof-dir=${flags['cpu-prof']}/${mode}-${Date.now()}`] : [];
  const child = spawn('taskset', ['-c', '1', process.execPath, '--no-memory-reducer', '--expose-gc', ...profile, '--import', 'tsx', 'bench/targets/ingest.ts'], {
    cwd: ROOT,
    env: { ...process.env, BENCH_INGEST: mode, LOG_LEVEL: 'warn', NODE_ENV: 'production', REDIS_URL: undefined, RATE_LIMIT_RPS: '1000000', RATE_LIMIT_BURST: '10000000', AUTH_FAILURES_PER_MINUTE: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const memoryWaiters: ((mb: number) => void)[] = [];
  const line = await new Promise<{ url: string; key: string }>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`target ${mode} exited with ${code}: ${stderr}`)));
    createInterface({ input: child.stdout }).on('line', (text) => {
      try {
        const parsed = JSON.parse(text) as { url?: string; key?: string; retainedMb?: number };
        if (parsed.url) resolve({ url: parsed.url, key: parsed.key ?? '' });
        if (parsed.retainedMb !== undefined) memoryWaiters.shift()?.(parsed.retainedMb);
      } catch {
        // not our line
      }
    });
  });
  const retainedMb = (): Promise<number> => new Promise((resolve) => {
    memoryWaiters.push(resolve);
    child.kill('SIGUSR2');
  });
  return { ...line, child, retainedMb };
}

function stop(target: Target): Promise<void> {
  return new Promise((resolve) => {
    if (target.child.exitCode !== null) return resolve();
    target.child.once('exit', () => resolve());
    target.child.kill('SIGTERM');
  });
}

interface Result {
  id: ScenarioId;
  calls: number;
  events: number;
  seconds: number;
  cpuMs: number;
  latencies: number[];
  /** The server's resident memory (MB) after the warm-up and at the end. */
  rss: { before: number; after: number };
  /** Its heap, array buffers and external memory after a full garbage collection (MB), likewise. */
  retained: { before: number; after: number };
}

/** A batch's body as call `call` sends it: its sessions, and with --event-ids its ids, its own. */
function numbered(body: string, call: number): string {
  const sessions = body.replaceAll(SESSION_MARK, String(call));
  return flags['event-ids'] ? sessions.replaceAll(CALL_MARK, String(call)) : sessions;
}

async function send(target: Target, rest: boolean, index: number): Promise<number> {
  const body = (rest ? restBodies : graphqlBodies)[index % DISTINCT_BATCHES]!;
  const response = await fetch(`${target.url}${rest ? '/v1/events' : '/graphql'}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: target.key },
    body: numbered(body, ++callsSent),
  });
  const text = await response.text();
  // the raw reference answers {accepted} on both paths
  const answer = JSON.parse(text) as { accepted?: number; data?: { recordEvents?: { accepted: number } } };
  const accepted = answer.accepted ?? answer.data?.recordEvents?.accepted;
  if (response.status !== 200 || accepted !== BATCH) throw new Error(`unexpected answer ${response.status}: ${text.slice(0, 300)}`);
  return accepted;
}

async function measure(id: ScenarioId): Promise<Result> {
  const [mode, api] = id.split('-') as [string, string];
  const target = await start(mode);
  try {
    const rest = api === 'rest';
    // warm-up: the code paths compiled, the connections open
    const warm = mode === 'standin' ? 2 : 10;
    for (let i = 0; i < warm; i++) await send(target, rest, i);
    let next = 0;
    let events = 0;
    const latencies: number[] = [];
    const cpuBefore = cpuMsOf(target.child.pid!);
    const retainedBefore = await target.retainedMb();
    const rssBefore = rssMbOf(target.child.pid!);
    const started = performance.now();
    const deadline = started + DURATION_MS;
    const loop = async (): Promise<void> => {
      while (performance.now() < deadline) {
        const sent = performance.now();
        events += await send(target, rest, next++);
        latencies.push(performance.now() - sent);
      }
    };
    await Promise.all(Array.from({ length: INFLIGHT }, loop));
    const seconds = (performance.now() - started) / 1000;
    const rss = { before: rssBefore, after: rssMbOf(target.child.pid!) };
    const retained = { before: retainedBefore, after: await target.retainedMb() };
    return { id, calls: latencies.length, events, seconds, cpuMs: cpuMsOf(target.child.pid!) - cpuBefore, latencies: latencies.sort((a, b) => a - b), rss, retained };
  } finally {
    await stop(target);
  }
}

/** The process's resident memory now, in MB (/proc/<pid>/status VmRSS). */
function rssMbOf(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((l) => l.startsWith('VmRSS:'));
  return Number(line?.split(/\s+/)[1] ?? NaN) / 1024;
}

const percentile = (sorted: number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;

if (!flags['no-build']) {
  console.log('building dist/ ...');
  execFileSync(process.execPath, [`${ROOT}node_modules/typescript/bin/tsc`, '-p', 'tsconfig.build.json'], { cwd: ROOT, stdio: 'inherit' });
}
// the load generator keeps to CPU 0, every thread of it
execFileSync('taskset', ['-a', '-p', '-c', '0', String(process.pid)], { stdio: 'ignore' });

const results: Result[] = [];
for (const id of only) {
  process.stdout.write(`${id} ...\n`);
  results.push(await measure(id));
}

const rateOf = (r: Result): number => r.events / r.seconds;
const reference = (r: Result): Result | undefined => results.find((x) => x.id === `raw-${r.id.split('-')[1]}`);
console.log(`\n${BATCH} events a call, ${INFLIGHT} calls in flight, ${flags.duration} s a scenario; server on CPU 1, load generator on CPU 0`);
console.log(`load average at the end: ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')} (the machine is shared: others' work lands on both cores)\n`);
console.log('| scenario | calls | events/s | server CPU µs/event | p50 ms/call | p99 ms/call | events/s vs raw | server RSS MB, after warm-up -> end (per million events taken) | retained after a full GC, MB (per million events) |');
console.log('|---|---:|---:|---:|---:|---:|---:|---|---|');
for (const r of results) {
  const ref = reference(r);
  const ratio = ref ? (rateOf(r) / rateOf(ref)).toFixed(2) : '';
  console.log(`| ${r.id} | ${r.calls} | ${Math.round(rateOf(r)).toLocaleString('en')} | ${((r.cpuMs * 1000) / r.events).toFixed(2)} | ${percentile(r.latencies, 50).toFixed(1)} | ${percentile(r.latencies, 99).toFixed(1)} | ${ratio} | ${r.rss.before.toFixed(0)} -> ${r.rss.after.toFixed(0)} (${(((r.rss.after - r.rss.before) * 1e6) / r.events).toFixed(0)}) | ${r.retained.before.toFixed(0)} -> ${r.retained.after.toFixed(0)} (${(((r.retained.after - r.retained.before) * 1e6) / r.events).toFixed(0)}) |`);
}
