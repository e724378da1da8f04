/**
 * What anonymous junk bodies cost a valid key (not a test): `npx tsx bench/junkBodies.ts`.
 * Starts the built gateway as `npm start` runs it (dist/, the default limits, a fresh DATA_DIR with
 * one user's key), then asks one cached query with the key at --rate a second, quiet for
 * --seconds and again while --clients raw connections from 127.0.0.2 each POST a 1 MB anonymous
 * body (--bytes) to /graphql, read the answer and start over on a new connection, as fast as
 * they can. Prints the key's p50/p90/p99 in each phase, the junk requests sent and the gateway's
 * CPU. --pin puts the gateway on CPU 1 and the clients on CPU 0; the environment passes through
 * to the gateway (LINGER_BYTES_PER_SECOND=0: every refused body lingers, as before its budget).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Agent, request } from 'undici';
import { cpuMsOf } from './procCpu.js';
import { basicAuthorization } from '../src/auth/authorization.js';
import { EmbeddedKeyService } from '../src/backends/embedded/keys/keyService.js';
import { SqliteKeyStore } from '../src/backends/embedded/keys/sqliteStore.js';
import { addUser } from '../src/backends/embedded/keys/users.js';
import buildOnce from '../test/helpers/build.js';
import { startServe } from '../test/helpers/processes.js';
import { TEST_COST, tempDir } from '../test/helpers/stores.js';

const { values: flags } = parseArgs({
  options: {
    seconds: { type: 'string', default: '8' },
    rate: { type: 'string', default: '40' },
    clients: { type: 'string', default: '40' },
    bytes: { type: 'string', default: '1000000' },
    pin: { type: 'boolean', default: false },
  },
});
const seconds = Number(flags.seconds);
const rate = Number(flags.rate);
const clients = Number(flags.clients);
const bytes = Number(flags.bytes);

const { dir, remove } = tempDir('recs-junk-');
const store = new SqliteKeyStore(path.join(dir, 'keys.db'));
await addUser(store, { username: 'alice', password: 'alice-password' }, TEST_COST);
const keys = new EmbeddedKeyService(store);
const { key, id } = await keys.createKey(await keys.authenticate(basicAuthorization('alice', 'alice-password')), { name: 'bench' });
await store.close();
// the defaults of a plain `npm start` (startServe turns the rate limits off unless told), the
// key exempt: a 429 of its own would hide what the junk costs it
await buildOnce();
const serve = await startServe({ DATA_DIR: dir, REDIS_URL: '', RATE_LIMIT_RPS: '50', AUTH_FAILURES_PER_MINUTE: '10', RATE_LIMIT_PER_KEY: `${id}=0` });
const { port } = new URL(serve.url);
const pid = serve.child.pid!;
// the gateway on a core of its own and the clients on another (--pin): what the junk costs the
// gateway's core, not what the clients' own work takes from it
if (flags.pin) {
  execFileSync('taskset', ['-a', '-p', '-c', '1', String(pid)], { stdio: 'ignore' });
  execFileSync('taskset', ['-a', '-p', '-c', '0', String(process.pid)], { stdio: 'ignore' });
}

const agent = new Agent({ connections: 4 });
let connects = 0;
agent.on('connect', () => (connects += 1));
const query = JSON.stringify({ query: '{ item(itemId: 31000005) { itemId name salePrice } }' });
async function ask(): Promise<number> {
  const started = performance.now();
  const response = await request(`${serve.url}/graphql`, {
    method: 'POST',
    dispatcher: agent,
    headers: { 'content-type': 'application/json', authorization: key },
    body: query,
  });
  await response.body.text();
  if (response.statusCode !== 200) throw new Error(`the key's query answered ${response.statusCode}`);
  return performance.now() - started;
}

/** The key's latencies over `seconds`, one request every 1/rate s (sent on schedule, not after the last answer). */
async function measure(): Promise<number[]> {
  const times: Promise<number>[] = [];
  const started = performance.now();
  for (let i = 0; i < seconds * rate; i++) {
    const due = started + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    times.push(ask());
  }
  return (await Promise.all(times)).sort((a, b) => a - b);
}

const at = (sorted: number[], q: number): string => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))]!.toFixed(1);
const summary = (sorted: number[]): string => `p50 ${at(sorted, 0.5)} ms, p90 ${at(sorted, 0.9)} ms, p99 ${at(sorted, 0.99)} ms`;

/**
 * The junk clients, in a process of their own (in this one, their writes held the key's answers
 * in this event loop): each a connection, the whole request written, whatever comes back read,
 * then the next; on SIGUSR2 it prints the statuses seen so far (a reset: 0) as a line of JSON.
 */
const JUNK_CLIENTS = `
const net = require('node:net');
const [port, clients, bytes] = process.argv.slice(1).map(Number);
const head = 'POST /graphql HTTP/1.1\\r\\nhost: gateway\\r\\ncontent-type: application/json\\r\\ncontent-length: ' + bytes + '\\r\\n\\r\\n';
const junk = Buffer.concat([Buffer.from(head), Buffer.alloc(bytes, 'x')]);
const statuses = {};
process.on('SIGUSR2', () => process.stdout.write(JSON.stringify(statuses) + '\\n'));
function next() {
  const socket = net.connect({ host: '127.0.0.1', port, localAddress: '127.0.0.2' });
  let received = '';
  socket.on('data', (chunk) => { if (received.length < 16) received += chunk.toString('latin1', 0, 16); });
  socket.on('error', () => undefined);
  socket.on('close', () => {
    const status = /^HTTP\\/1\\.1 (\\d+)/.exec(received)?.[1] ?? 0;
    statuses[status] = (statuses[status] ?? 0) + 1;
    next();
  });
  socket.on('connect', () => socket.end(junk));
}
for (let i = 0; i < clients; i++) next();
`;

let junkers: ChildProcess | undefined;
try {
  for (let i = 0; i < 20; i++) await ask();
  const quietCpu = cpuMsOf(pid);
  const quiet = await measure();
  console.log(`quiet: ${summary(quiet)}; gateway CPU ${((cpuMsOf(pid) - quietCpu) / seconds / 10).toFixed(0)}%`);
  junkers = spawn(process.execPath, ['-e', JUNK_CLIENTS, port, String(clients), String(bytes)], { stdio: ['ignore', 'pipe', 'inherit'] });
  const lines = createInterface({ input: junkers.stdout! });
  /** The junk clients' statuses so far, by status. */
  const statuses = async (): Promise<Record<string, number>> => {
    const line = once(lines, 'line');
    junkers!.kill('SIGUSR2');
    return JSON.parse(String((await line)[0])) as Record<string, number>;
  };
  const total = (counts: Record<string, number>): number => Object.values(counts).reduce((a, b) => a + b, 0);
  await new Promise((r) => setTimeout(r, 1000));
  const attackCpu = cpuMsOf(pid);
  const sentBefore = total(await statuses());
  const attacked = await measure();
  const cpuMs = cpuMsOf(pid) - attackCpu;
  const seen = await statuses();
  const sent = total(seen) - sentBefore;
  console.log(
    `under ${clients} junk clients (${bytes} B bodies): ${summary(attacked)}; gateway CPU ${(cpuMs / seconds / 10).toFixed(0)}%, ` +
      `${(sent / seconds).toFixed(0)} junk requests/s, ${(cpuMs / sent).toFixed(2)} ms of its CPU each`,
  );
  console.log(`key's connections: ${connects}; junk answers by status: ${JSON.stringify(seen)}; p50 ${(Number(at(attacked, 0.5)) / Number(at(quiet, 0.5))).toFixed(1)}x quiet`);
} finally {
  junkers?.kill('SIGKILL');
  await agent.close();
  await serve.stop();
  remove();
}
