import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { report, startUpstream, type Upstream } from '../harness.js';
import { loadCachedPath, startCachedGateway } from '../load.js';

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

describe('load on the cached path, full size', () => {
  it('50 connections for 60 s: 0 non-2xx, every body the expected one', async () => {
    const result = await loadCachedPath(gateway.serve.url, upstream.alice.key, 50, 60);
    report('load, 50 connections x 60 s (gateway process, REST mode, Redis)', { ...result });
    expect(result.non2xx).toBe(0);
    expect(result.errors).toBe(0);
    expect(result.timeouts).toBe(0);
    expect(result.mismatches).toBe(0);
  });
});
