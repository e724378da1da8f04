import { once } from 'node:events';
import { readdirSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SIGNAL_ECHO_MS } from '../../src/main.js';
import { parseItemRecord } from '../../src/model/itemRecord.js';
import { gql, startServe, type ServeProcess } from '../helpers/processes.js';
import { tempDir } from '../helpers/stores.js';
import { FakeKeyService, FakeRecsService, mountRest, startServer, type TestServer } from '../rest/helpers.js';

/**
 * `recs-gateway serve` in REST mode in front of a recommendations upstream of the test's own that
 * takes SLOW_MS to answer: a request in flight when SIGTERM comes still gets its answer.
 */
const SLOW_MS = 1500;
/** While set, the upstream answers only once it resolves instead (a request that outlasts any stop). */
let held: Promise<void> | undefined;

let services: TestServer;
let slow: TestServer;
let key: string;
let env: Record<string, string>;
const data = tempDir();

beforeAll(async () => {
  const keys = new FakeKeyService();
  services = await mountRest(keys, new FakeRecsService(parseItemRecord));
  slow = await startServer(async (req, res) => {
    await (held ?? new Promise((r) => setTimeout(r, SLOW_MS)));
    const answer = await fetch(`${services.url}${req.url}`, { headers: { accept: 'application/json' } });
    res.writeHead(answer.status, { 'content-type': 'application/json' });
    res.end(await answer.text());
  });
  const gatewayKey = await keys.createKey(await keys.authenticate(keys.basic('root')), { name: 'gateway' });
  key = (await keys.createKey(await keys.authenticate(keys.basic('alice')), { name: 'alice' })).key;
  env = {
    // as deployed: Apollo registers signal handlers of its own unless NODE_ENV is test
    NODE_ENV: 'production',
    BACKEND: 'rest',
    APIKEY_SERVICE_URL: services.url,
    RECS_SERVICE_URL: slow.url,
    RECS_API_KEY: gatewayKey.key,
    DATA_DIR: data.dir,
    REDIS_URL: '',
    DATABASE_URL: '',
    OTEL_EXPORTER_OTLP_ENDPOINT: '',
  };
});
afterAll(async () => {
  await slow.close();
  await services.close();
  data.remove();
});

/** The exit code, once the process has exited by itself (stop() would send another signal). */
async function exited(serve: ServeProcess): Promise<number | null> {
  if (serve.child.exitCode !== null || serve.child.signalCode !== null) return serve.child.exitCode;
  const [code] = (await once(serve.child, 'exit')) as [number | null];
  return code;
}

let nextItem = 1;

/** Sends a request that waits on the slow upstream; resolves once the upstream has it. */
async function inFlight(serve: ServeProcess): Promise<{ itemId: number; response: ReturnType<typeof gql> }> {
  const before = slow.requests.length;
  // a fresh item each time: a cached one would never reach the slow upstream
  const itemId = nextItem++;
  const response = gql(serve.url, `{ item(itemId: ${itemId}) { name } }`, {}, { authorization: key });
  response.catch(() => undefined);
  for (let i = 0; i < 500 && slow.requests.length === before; i++) await new Promise((r) => setTimeout(r, 10));
  expect(slow.requests.length).toBeGreaterThan(before);
  return { itemId, response };
}

/** The pids of `pid`'s descendants now (Linux's /proc). */
function descendants(pid: number): number[] {
  const children = readdirSync(`/proc/${pid}/task`).flatMap((tid) =>
    readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').split(' ').filter(Boolean).map(Number),
  );
  return children.flatMap((child) => [child, ...descendants(child)]);
}

/** Whether `pid` still runs (a zombie, exited but not yet reaped, does not). */
function running(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]![0] !== 'Z';
  } catch {
    return false;
  }
}

describe('`npm start` (the README\'s command) stopped by a signal', () => {
  /**
   * `npm start`, its processes (the shell npm runs the script in, the gateway) and one request in
   * flight; `signal` sent; then every one of the processes gone within a bound, the request
   * answered, the port closed. Whatever survived is killed after.
   */
  async function stopsDraining(signal: (npm: number) => void): Promise<ServeProcess> {
    const serve = await startServe(env, { npm: true });
    const npm = serve.child.pid!;
    const processes = [npm, ...descendants(npm)];
    try {
      // npm, and the gateway under it (with a shell between them or not)
      expect(processes.length).toBeGreaterThanOrEqual(2);
      const { itemId, response } = await inFlight(serve);
      signal(npm);
      const answered = await response;
      expect(answered.status).toBe(200);
      expect(answered.body.data?.item?.name).toBe(`Item ${itemId}`);
      await expect.poll(() => processes.filter(running), { timeout: 10_000 }).toEqual([]);
      await expect(fetch(`${serve.url}/healthz`)).rejects.toThrow();
      return serve;
    } finally {
      for (const pid of processes.filter(running)) process.kill(pid, 'SIGKILL');
    }
  }

  it("stops the gateway, drained, when npm's own process gets SIGTERM (what a supervisor sends)", async () => {
    const serve = await stopsDraining((npm) => process.kill(npm, 'SIGTERM'));
    expect(serve.stdout()).toContain('"msg":"stopped"');
  });

  it("drains once, not cut short as by a second signal, on a terminal's Ctrl-C (SIGINT to the whole group)", async () => {
    const serve = await stopsDraining((npm) => process.kill(-npm, 'SIGINT'));
    expect(serve.stdout().match(/"msg":"draining in-flight requests"/g)).toHaveLength(1);
    expect(serve.stdout()).not.toContain('second signal');
    expect(serve.stdout()).toContain('"msg":"stopped"');
  });
});

describe('stopping on signals', () => {
  it('drains an in-flight request after SIGTERM, refuses new connections, then exits 0', async () => {
    const serve = await startServe(env);
    try {
      const { itemId, response } = await inFlight(serve);
      const started = Date.now();
      serve.child.kill('SIGTERM');
      const answered = await response;
      expect(answered.status).toBe(200);
      expect(answered.body.data?.item?.name).toBe(`Item ${itemId}`);
      expect(await exited(serve)).toBe(0);
      console.log(`in-flight request answered and process exited ${Date.now() - started} ms after SIGTERM`);
      await expect(fetch(`${serve.url}/healthz`)).rejects.toThrow();
    } finally {
      await serve.stop('SIGKILL');
    }
  });

  it('exits at once, non-zero, on a second signal', async () => {
    const serve = await startServe(env);
    let release = (): void => undefined;
    held = new Promise((resolve) => (release = resolve));
    try {
      await inFlight(serve);
      serve.child.kill('SIGTERM');
      // a signal sooner is the first one passed on (below)
      await new Promise((r) => setTimeout(r, SIGNAL_ECHO_MS + 200));
      const started = Date.now();
      serve.child.kill('SIGTERM');
      const code = await exited(serve);
      const took = Date.now() - started;
      // with the request still in flight, held by the upstream
      expect(code).toBe(1);
      expect(took).toBeLessThan(2_000);
      console.log(`exited ${took} ms after the second signal`);
    } finally {
      release();
      held = undefined;
      await serve.stop('SIGKILL');
    }
  });

  it('takes a signal right after the first for the same stop (npm passing it on), and drains', async () => {
    const serve = await startServe(env);
    try {
      const { itemId, response } = await inFlight(serve);
      serve.child.kill('SIGTERM');
      // once it is handled: two signals sent at once may reach the process as one
      await expect.poll(() => serve.stdout(), { interval: 5, timeout: SIGNAL_ECHO_MS }).toContain('"msg":"draining in-flight requests"');
      serve.child.kill('SIGTERM');
      const answered = await response;
      expect([answered.status, answered.body.data?.item?.name]).toEqual([200, `Item ${itemId}`]);
      expect(await exited(serve)).toBe(0);
      expect(serve.stdout()).not.toContain('second signal');
    } finally {
      await serve.stop('SIGKILL');
    }
  });
});
