import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseItemRecord } from '../../src/ports/itemRecord.js';
import { gql, startServe, type ServeProcess } from '../helpers/processes.js';
import { tempDir } from '../helpers/stores.js';
import { FakeKeyService, FakeRecsService, mountRest, startServer, type TestServer } from '../rest/helpers.js';

/**
 * `recs-gateway serve` in REST mode in front of a recommendations upstream of the test's own that
 * takes SLOW_MS to answer: a request in flight when SIGTERM comes still gets its answer.
 */
const SLOW_MS = 1500;

let services: TestServer;
let slow: TestServer;
let key: string;
let env: Record<string, string>;
const data = tempDir();

beforeAll(async () => {
  const keys = new FakeKeyService();
  services = await mountRest(keys, new FakeRecsService(parseItemRecord));
  slow = await startServer(async (req, res) => {
    await new Promise((r) => setTimeout(r, SLOW_MS));
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
    try {
      await inFlight(serve);
      serve.child.kill('SIGTERM');
      await new Promise((r) => setTimeout(r, 100));
      const started = Date.now();
      serve.child.kill('SIGTERM');
      const code = await exited(serve);
      const took = Date.now() - started;
      expect(code).toBe(1);
      // well before the slow upstream would have answered the request still in flight
      expect(took).toBeLessThan(SLOW_MS);
      console.log(`exited ${took} ms after the second signal`);
    } finally {
      await serve.stop('SIGKILL');
    }
  });
});
