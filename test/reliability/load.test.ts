import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { report, startUpstream, type Upstream } from './harness.js';
import { loadCachedPath, startCachedGateway } from './load.js';

// The CI-sized load: 20 connections for 5 s. The 50-connection minute is in npm run test:soak.

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
  it('20 connections for 5 s: no answer other than 200 with the expected body', async () => {
    const result = await loadCachedPath(gateway.serve.url, upstream.alice.key, 20, 5);
    report('load, 20 connections x 5 s (gateway process, REST mode, Redis)', { ...result });
    expect(result.requests).toBeGreaterThan(100);
    expect(result.non2xx).toBe(0);
    expect(result.errors).toBe(0);
    expect(result.timeouts).toBe(0);
    expect(result.mismatches).toBe(0);
  });
});
