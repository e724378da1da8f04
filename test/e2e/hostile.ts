import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { request } from 'undici';
import { basicAuthorization } from '../../src/auth/authorization.js';
import { EmbeddedKeyService } from '../../src/backends/embedded/keys/keyService.js';
import { SqliteKeyStore } from '../../src/backends/embedded/keys/sqliteStore.js';
import { addUser } from '../../src/backends/embedded/keys/users.js';
import { startServe, type ServeProcess } from '../helpers/processes.js';
import { TEST_COST, tempDir } from '../helpers/stores.js';
import { PHONE } from '../helpers/harness.js';

/**
 * The hostile mixes of issue 18, against a gateway process in production mode with the default
 * failure limits, behind a "proxy" on loopback (TRUST_PROXY) so that each attacker and the
 * well-behaved client have addresses of their own. Every loop is bounded in requests.
 */

export interface HostileGateway {
  serve: ServeProcess;
  /** alice's key: the well-behaved client. */
  key: string;
  stop(): Promise<void>;
}

/**
 * `limits`: 'unthrottled' lets every client send as fast as it can (what the suite measures: the
 * cost of each hostile request); 'defaults' keeps the default limits for strangers (50 requests a
 * second an address) and exempts the well-behaved key (RATE_LIMIT_PER_KEY), as an operator would
 * for a service's own key: the setting of the latency soak.
 */
export async function startHostileTarget(limits: 'unthrottled' | 'defaults' = 'unthrottled'): Promise<HostileGateway> {
  const { dir, remove } = tempDir('recs-hostile-');
  const store = new SqliteKeyStore(path.join(dir, 'keys.db'));
  await addUser(store, { username: 'alice', password: 'alice-password' }, TEST_COST);
  await addUser(store, { username: 'bob', password: 'bob-password' }, TEST_COST);
  const keys = new EmbeddedKeyService(store);
  const alice = await keys.authenticate(basicAuthorization('alice', 'alice-password'));
  const created = await keys.createKey(alice, { name: 'well-behaved' });
  await store.close();
  const serve = await startServe({
    DATA_DIR: dir,
    NODE_ENV: 'production',
    REDIS_URL: '',
    AUTH_FAILURES_PER_MINUTE: '10',
    TRUST_PROXY: '127.0.0.1',
    ...(limits === 'unthrottled' ? { RATE_LIMIT_RPS: '100000' } : { RATE_LIMIT_RPS: '50', RATE_LIMIT_PER_KEY: `${created.id}=0` }),
  });
  return {
    serve,
    key: created.key,
    async stop() {
      await serve.stop();
      remove();
    },
  };
}

/** The well-behaved client's address, and the attackers'. */
export const GOOD = '10.70.0.1';
const ATTACKER = { bodies: '10.66.0.1', tokens: '10.66.0.2', fields: '10.66.0.3', passwords: '10.66.0.4', keys: '10.66.0.5' };

/** CPU seconds the process has used (user + system), from /proc. */
export function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** Resident memory of the process, in MiB, from /proc. */
export function rssMiB(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(match?.[1] ?? 0) / 1024;
}

/**
 * What a client sees when the gateway refuses a large body unread and closes the connection
 * while the client is still sending it: its write fails (EPIPE, ECONNRESET) before it reads the
 * answer. Which of the two comes first is the host's timing (seen on one host, 3 runs of 4).
 */
export const CLOSED_WHILE_SENDING = -1;

async function post(url: string, headers: Record<string, string>, body: string): Promise<number> {
  try {
    const response = await request(`${url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
    await response.body.dump();
    return response.statusCode;
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === 'EPIPE' || code === 'ECONNRESET') return CLOSED_WHILE_SENDING;
    throw error;
  }
}

/** Runs `count` calls of `send`, `concurrency` at a time; resolves with the statuses by count. */
async function flood(count: number, concurrency: number, send: (i: number) => Promise<number>): Promise<Record<number, number>> {
  const statuses: Record<number, number> = {};
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < count) {
      const i = next++;
      const status = await send(i).catch(() => 0);
      statuses[status] = (statuses[status] ?? 0) + 1;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return statuses;
}

export interface HostileSizes {
  /** Anonymous 1 MB bodies, each a unique comment before an item query (the heap finding). */
  bigBodies: number;
  /** 1 MB `{ a a a … }` bodies, anonymous and with a wrong key from a locked-out address (the CPU finding). */
  tokenFloods: number;
  /** 6 KB `{ viewer { id } }` x 450, anonymous (the validation finding). */
  duplicateFields: number;
  /** `Basic alice:wrong-N`, all at once from one address (the login-limit finding). */
  wrongPasswords: number;
  /** Random well-formed keys from one address. */
  randomKeys: number;
}

export const SUITE_SIZES: HostileSizes = { bigBodies: 150, tokenFloods: 60, duplicateFields: 200, wrongPasswords: 100, randomKeys: 200 };
/** The finding's own numbers: 4,054 bodies crashed the process; 100 concurrent wrong passwords. */
export const SOAK_SIZES: HostileSizes = { bigBodies: 4_100, tokenFloods: 600, duplicateFields: 2_000, wrongPasswords: 100, randomKeys: 2_000 };
// SOAK_HOSTILE_ONLY=bigBodies,randomKeys runs only those attacks of the soak (to see which costs what)
const only = process.env.SOAK_HOSTILE_ONLY?.split(',');
if (only) for (const name of Object.keys(SOAK_SIZES) as (keyof HostileSizes)[]) if (!only.includes(name)) SOAK_SIZES[name] = 0;

export interface HostileResult {
  /** Statuses the attacks got, by attack. */
  attacks: Record<keyof HostileSizes, Record<number, number>>;
  /** The gateway's CPU seconds over the attacks, and its RSS after them. */
  cpuSeconds: number;
  hostileRequests: number;
  rssBeforeMiB: number;
  rssAfterMiB: number;
  rssPeakMiB: number;
  /** How long the mix took, in seconds: failure buckets refill meanwhile (10 a minute). */
  seconds: number;
}

/** Every attack of the mix at once (each at 4 at a time, the passwords all at once). */
export async function runHostileMix(target: HostileGateway, sizes: HostileSizes): Promise<HostileResult> {
  const { url } = target.serve;
  const pid = target.serve.child.pid!;
  const mega = 1024 * 1024 - 200;
  const from = (address: string, authorization?: string): Record<string, string> => ({
    'x-forwarded-for': address,
    ...(authorization ? { authorization } : {}),
  });
  const rssBefore = rssMiB(pid);
  let rssPeak = rssBefore;
  const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, rssMiB(pid))), 100);
  const cpuBefore = cpuSeconds(pid);
  const started = performance.now();
  const filler = 'x'.repeat(mega);
  const aaa = `{ ${'a '.repeat(mega / 2)}}`;
  const viewers = `{ ${Array(450).fill('viewer { id }').join(' ')} }`;
  // lock the token flood's address out first, so its wrong key meets a locked-out address
  for (let i = 0; i < 11; i++) await post(url, from(ATTACKER.tokens, randomBytes(16).toString('base64').slice(0, 22)), '{}');
  const [bigBodies, tokenFloods, duplicateFields, wrongPasswords, randomKeys] = await Promise.all([
    flood(sizes.bigBodies, 4, (i) =>
      post(url, from(ATTACKER.bodies), JSON.stringify({ query: `#${i}-${filler.slice(String(i).length + 1)}\n{ item(itemId: ${PHONE}) { name } }` })),
    ),
    flood(sizes.tokenFloods, 2, (i) =>
      post(url, from(ATTACKER.tokens, i % 2 === 0 ? randomBytes(16).toString('base64').slice(0, 22) : undefined), JSON.stringify({ query: aaa })),
    ),
    flood(sizes.duplicateFields, 4, () => post(url, from(ATTACKER.fields), JSON.stringify({ query: viewers }))),
    flood(sizes.wrongPasswords, sizes.wrongPasswords, (i) =>
      post(url, from(ATTACKER.passwords, basicAuthorization('alice', `wrong-${i}`)), JSON.stringify({ query: '{ viewer { id } }' })),
    ),
    flood(sizes.randomKeys, 4, () =>
      post(url, from(ATTACKER.keys, randomBytes(16).toString('base64').slice(0, 22)), JSON.stringify({ query: '{ viewer { id } }' })),
    ),
  ]);
  const cpu = cpuSeconds(pid) - cpuBefore;
  clearInterval(sampler);
  return {
    attacks: { bigBodies, tokenFloods, duplicateFields, wrongPasswords, randomKeys },
    cpuSeconds: cpu,
    hostileRequests: (Object.values(sizes) as number[]).reduce((a, b) => a + b, 0),
    rssBeforeMiB: rssBefore,
    rssAfterMiB: rssMiB(pid),
    rssPeakMiB: Math.max(rssPeak, rssMiB(pid)),
    seconds: (performance.now() - started) / 1000,
  };
}

/** The well-behaved client's query: an item on the cached path. */
export const GOOD_QUERY = JSON.stringify({ query: `{ item(itemId: ${PHONE}) { itemId name salePrice } }` });
