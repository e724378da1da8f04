import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent, request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { drainHttpServer } from '../../src/http/drain.js';

/** A server whose /slow answers when `release` is called; every other path at once. */
async function startServer(): Promise<{ server: http.Server; url: string; release: () => void }> {
  let release = (): void => undefined;
  const server = http.createServer((req, res) => {
    if (req.url === '/slow') release = () => res.end('slow');
    else res.end('fast');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, release: () => release() };
}

describe('draining the HTTP server', () => {
  const agents: Agent[] = [];
  afterEach(async () => {
    for (const agent of agents.splice(0)) await agent.destroy();
  });
  const agent = (): Agent => {
    const made = new Agent({ keepAliveTimeout: 60_000 });
    agents.push(made);
    return made;
  };

  it('closes idle keep-alive connections at once and answers the request in flight before closing its connection', async () => {
    const { server, url, release } = await startServer();
    const idle = agent();
    expect(await (await request(`${url}/fast`, { dispatcher: idle })).body.text()).toBe('fast');
    const busy = agent();
    const slow = request(`${url}/slow`, { dispatcher: busy });
    await new Promise((resolve) => setTimeout(resolve, 50));

    let drained = false;
    const draining = drainHttpServer(server, 5_000).then(() => (drained = true));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(drained).toBe(false);
    // no new connections
    await expect(request(`${url}/fast`, { dispatcher: agent() })).rejects.toThrow();
    release();
    expect(await (await slow).body.text()).toBe('slow');
    const started = Date.now();
    await draining;
    // the answered connection was closed within a sweep, not after node's 5 s keep-alive timeout
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  it('closes a connection still busy once the grace period is over', async () => {
    const { server, url } = await startServer();
    const slow = request(`${url}/slow`, { dispatcher: agent() });
    slow.catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const started = Date.now();
    await drainHttpServer(server, 200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(190);
    await expect(slow).rejects.toThrow();
  });

  it('resolves for a server that never listened', async () => {
    await expect(drainHttpServer(http.createServer(), 100)).resolves.toBeUndefined();
  });
});
