import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { Agent, request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { drainHttpServer, followConnections } from '../../src/http/drain.js';

/** A server whose /slow answers when `release` is called; every other path at once. */
async function startServer(): Promise<{ server: http.Server; url: string; release: () => void }> {
  let release = (): void => undefined;
  const server = http.createServer((req, res) => {
    if (req.url === '/slow') release = () => res.end('slow');
    else res.end('fast');
  });
  followConnections(server);
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

  it('closes at once a connection that has sent nothing (a preconnect, a client that gave up before sending), which node counts as busy', async () => {
    const { server, url } = await startServer();
    const { port } = new URL(url);
    const silent = net.connect(Number(port), '127.0.0.1');
    silent.on('error', () => undefined);
    const closed = new Promise<void>((resolve) => silent.once('close', () => resolve()));
    await new Promise((resolve) => silent.once('connect', resolve));
    // and one that has begun a request and not finished it: that one is waited for
    const begun = net.connect(Number(port), '127.0.0.1');
    begun.on('error', () => undefined);
    await new Promise((resolve) => begun.once('connect', resolve));
    begun.write('GET /fast HTTP/1.1\r\nhost: x\r\n');
    await new Promise((resolve) => setTimeout(resolve, 50));
    let drained = false;
    const draining = drainHttpServer(server, 5_000).then(() => (drained = true));
    await closed; // before the grace period, which would close it only after 5 s
    expect(drained).toBe(false);
    begun.write('\r\n');
    await draining;
    begun.destroy();
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
