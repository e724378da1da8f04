import { once } from 'node:events';
import net from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServe, type ServeProcess } from '../helpers/processes.js';
import { DATABASE_URL, dropSchema, tempDir, testSchema } from '../helpers/stores.js';

/**
 * A TCP proxy in front of PostgreSQL that holds every connection unanswered until released: the
 * gateway's backend stays opening (its first query waits) for as long as the test wants, with no
 * timing involved.
 */
async function heldProxy(target: URL): Promise<{ port: number; release(): void; close(): Promise<void> }> {
  const held: net.Socket[] = [];
  const sockets = new Set<net.Socket>();
  let released = false;
  const forward = (client: net.Socket): void => {
    const upstream = net.connect(Number(target.port || 5432), target.hostname);
    sockets.add(upstream);
    client.pipe(upstream).pipe(client);
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
    client.resume();
  };
  const server = net.createServer((client) => {
    sockets.add(client);
    if (released) return forward(client);
    client.pause();
    held.push(client);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    port: (server.address() as net.AddressInfo).port,
    release() {
      released = true;
      for (const client of held.splice(0)) forward(client);
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

describe('a gateway whose backend is still opening', () => {
  const schema = testSchema();
  const dir = tempDir();
  let proxy: Awaited<ReturnType<typeof heldProxy>>;
  let server: ServeProcess | undefined;

  beforeAll(async () => {
    const client = new pg.Client({ connectionString: DATABASE_URL });
    await client.connect();
    await client.query(`CREATE SCHEMA ${schema}`);
    await client.end();
    proxy = await heldProxy(new URL(DATABASE_URL));
  });

  afterAll(async () => {
    await server?.stop();
    await proxy?.close();
    await dropSchema(schema);
    dir.remove();
  });

  it('answers /healthz at once, /readyz and every request 503 with Retry-After, then serves once open', { timeout: 120_000 }, async () => {
    const url = new URL(DATABASE_URL);
    url.hostname = '127.0.0.1';
    url.port = String(proxy.port);
    url.searchParams.set('options', `-c search_path=${schema}`);
    server = await startServe({ DATA_DIR: dir.dir, DATABASE_URL: url.href }, { until: 'listening' });

    const health = await fetch(`${server.url}/healthz`);
    expect([health.status, await health.json()]).toEqual([200, { status: 'ok' }]);

    // it loads its modules, then the key store's first query waits on the held connection
    let waitingFor = '';
    for (let i = 0; i < 600 && waitingFor !== 'opening the key store'; i++) {
      const ready = await fetch(`${server.url}/readyz`);
      expect(ready.status).toBe(503);
      expect(ready.headers.get('retry-after')).toBe('1');
      const body = (await ready.json()) as { status: string; waitingFor: string };
      expect(body.status).toBe('starting');
      waitingFor = body.waitingFor;
      if (waitingFor !== 'opening the key store') await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(waitingFor).toBe('opening the key store');

    const graphql = await fetch(`${server.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'ApiKey whatever' },
      body: JSON.stringify({ query: '{ productRecommendations(itemId: 31000005) { itemId } }' }),
    });
    expect(graphql.status).toBe(503);
    expect(graphql.headers.get('retry-after')).toBe('1');
    const body = (await graphql.json()) as { errors: { message: string; extensions: Record<string, unknown> }[] };
    expect(body.errors[0]!.extensions).toEqual({ code: 'UPSTREAM_UNAVAILABLE', service: 'gateway', retryAfter: 1 });
    expect(body.errors[0]!.message).toMatch(/^The gateway is starting \(opening the key store\)/);

    const lookup = await fetch(`${server.url}/v1/items/31000005?apiKey=abc`);
    expect([lookup.status, lookup.headers.get('retry-after'), await lookup.json()]).toEqual([503, '1', { errors: [{ code: 503, message: 'Service Unavailable' }] }]);
    const keys = await fetch(`${server.url}/api/v1/apikey`, { headers: { authorization: 'Basic eDp5' } });
    expect(keys.status).toBe(503);
    expect(((await keys.json()) as { id: string }[])[0]!.id).toBe('*');

    proxy.release();
    // ready once the backend is open: /readyz turns 200 (polled: how long the demo shop takes is the machine's)
    let status = 503;
    for (let i = 0; i < 600 && status !== 200; i++) {
      status = (await fetch(`${server.url}/readyz`)).status;
      if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(status).toBe(200);
    expect(server.stdout()).toContain('"msg":"recs-gateway ready"');
    const served = await fetch(`${server.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ productRecommendations(itemId: 31000005) { itemId } }' }),
    });
    // the gateway's own answer now: no credentials
    expect(served.status).toBe(401);
  });
});
