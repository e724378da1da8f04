import autocannon from 'autocannon';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { drainPrefix, testPrefix } from '../helpers/redis.js';
import { startServe, type ServeProcess } from '../helpers/processes.js';
import { PHONE, report, restServeEnv, startUpstream, type Upstream } from '../helpers/harness.js';

export interface LoadResult {
  requests: number;
  reqPerSec: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  /** Answers whose body was not the expected one (another item, an error). */
  mismatches: number;
  latencyP50Ms: number;
  latencyP99Ms: number;
}

export const CACHED_QUERY = JSON.stringify({ query: `{ item(itemId: ${PHONE}) { itemId name salePrice } }` });

/** The gateway under test as a process of its own in REST mode on the machine's Redis. */
export async function startCachedGateway(upstream: Upstream): Promise<{ serve: ServeProcess; stop(): Promise<void> }> {
  const prefix = testPrefix();
  const serve = await startServe({ ...restServeEnv(upstream, prefix), LOG_LEVEL: 'info' });
  return {
    serve,
    async stop() {
      await serve.stop();
      await drainPrefix(prefix);
    },
  };
}

/**
 * Drives POST /graphql on the cached path (an item by key: auth cache and shared cache hits) with
 * autocannon; every answer must be the one the first request got.
 */
export async function loadCachedPath(
  url: string,
  authorization: string,
  connections: number,
  durationSeconds: number,
  /** Requests a second in all, for a latency measured at a steady rate; default: as fast as answered. */
  overallRate?: number,
): Promise<LoadResult> {
  const headers = { 'content-type': 'application/json', authorization };
  const first = await fetch(`${url}/graphql`, { method: 'POST', headers, body: CACHED_QUERY });
  const expected = await first.text();
  if (first.status !== 200 || expected.includes('"errors"')) throw new Error(`the cached path does not answer: ${expected}`);
  const result = await autocannon({
    url: `${url}/graphql`,
    method: 'POST',
    headers,
    body: CACHED_QUERY,
    connections,
    duration: durationSeconds,
    ...(overallRate !== undefined ? { overallRate } : {}),
    expectBody: expected,
  });
  return {
    requests: result.requests.total,
    reqPerSec: result.requests.average,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    mismatches: result.mismatches,
    latencyP50Ms: result.latency.p50,
    latencyP99Ms: result.latency.p99,
  };
}

/**
 * The load suite: a gateway process on the cached path, `connections` for `seconds`; every answer
 * must be 200 with the expected body. npm test runs a short one, npm run test:soak the full one.
 */
export function describeCachedLoad(connections: number, seconds: number): void {
  let upstream: Upstream;
  let gateway: Awaited<ReturnType<typeof startCachedGateway>>;
  beforeAll(async () => {
    upstream = await startUpstream();
    gateway = await startCachedGateway(upstream);
  });
  afterAll(async () => {
    await gateway?.stop();
    await upstream?.stop();
  });

  describe('load on the cached path', () => {
    it(`${connections} connections for ${seconds} s: 0 non-2xx, every body the expected one`, async () => {
      const result = await loadCachedPath(gateway.serve.url, upstream.alice.key, connections, seconds);
      report(`load, ${connections} connections x ${seconds} s (gateway process, REST mode, Redis)`, { ...result });
      expect(result.requests).toBeGreaterThan(100);
      expect(result.non2xx).toBe(0);
      expect(result.errors).toBe(0);
      expect(result.timeouts).toBe(0);
      expect(result.mismatches).toBe(0);
    }, (seconds + 60) * 1000);
  });
}
