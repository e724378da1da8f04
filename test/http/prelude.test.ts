import { createHash } from 'node:crypto';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuthorization } from '../../src/auth/authorization.js';
import { loadConfig } from '../../src/config/env.js';
import { createLogger } from '../../src/logger.js';
import { createGateway, type Gateway } from '../../src/http/server.js';
import { embeddedWithUsers } from '../helpers/gateway.js';
import { storeKinds } from '../helpers/stores.js';
import { raw, statusOf } from '../helpers/rawHttp.js';

// What a probe of the running gateway as an attacker found past the other tests (issue 18's
// closing review): each bounded in requests, over real HTTP and raw sockets.


describe('what the attacker probe found', () => {
  let gateway: Gateway;
  let url: string;
  let dispose: () => Promise<void>;
  const logLines: { level: number; msg: string }[] = [];
  const alice = basicAuthorization('alice', 'alice-password');

  beforeAll(async () => {
    const opened = await storeKinds[0]!.open();
    dispose = opened.dispose;
    const destination = new PassThrough();
    destination.on('data', (chunk: Buffer) => {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) logLines.push(JSON.parse(line) as { level: number; msg: string });
    });
    gateway = await createGateway({
      config: loadConfig({ DATA_DIR: '/nonexistent', RATE_LIMIT_RPS: '1', RATE_LIMIT_BURST: '5', AUTH_FAILURES_PER_MINUTE: '0' }),
      backend: await embeddedWithUsers(opened.store),
      log: createLogger({ level: 'info', destination }),
    });
    url = await gateway.listen(0, '127.0.0.1');
  });
  afterAll(async () => {
    await gateway?.stop().catch(() => undefined);
    await dispose?.();
  });

  const errorsLogged = (): { level: number; msg: string }[] => logLines.filter((line) => line.level >= 50);

  it('answers the REST routes before reading a body it will not use: 401 without credentials, 405 for a method a route does not take', async () => {
    const { port } = new URL(url);
    const head = (method: string, path: string, extra = '') =>
      `${method} ${path} HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\ncontent-type: application/json\r\ncontent-length: 1000000\r\n${extra}\r\n{"name":"`;
    const anonymous = await raw(url, head('POST', '/api/v1/apikey'));
    expect(statusOf(anonymous)).toBe(401);
    expect(anonymous.toLowerCase()).toContain('connection: close');
    const wrongKey = await raw(url, head('POST', '/api/v1/apikey', 'authorization: AAAAAAAAAAAAAAAAAAAAAA\r\n'));
    expect(statusOf(wrongKey)).toBe(401);
    const nbp = await raw(url, head('POST', '/v1/nbp?apiKey=x&itemId=1'));
    expect(statusOf(nbp)).toBe(405);
    // with valid credentials the body is read, and the key made
    const created = await fetch(`${url}/api/v1/apikey`, {
      method: 'POST',
      headers: { authorization: alice, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'probe-finding' }),
    });
    expect(created.status).toBe(200);
  });

  it('registers no persisted query from a GET without credentials, however its extensions spell the key', async () => {
    const query = '{ viewer { username } }';
    const hash = createHash('sha256').update(query).digest('hex');
    const params = new URLSearchParams({ query, extensions: `{"persisted\\u0051uery":{"version":1,"sha256Hash":"${hash}"}}` });
    const headers = { 'apollo-require-preflight': '1', 'x-forwarded-for': '10.1.1.1' };
    const response = await fetch(`${url}/graphql?${params.toString()}`, { headers });
    // answered as if sent without the hash; the hash alone then finds nothing
    expect([response.status, await response.json()]).toEqual([200, { data: { viewer: null } }]);
    params.delete('query');
    const byHash = await fetch(`${url}/graphql?${params.toString()}`, { headers });
    expect(((await byHash.json()) as { errors: { extensions: { code: string } }[] }).errors[0]!.extensions.code).toBe('PERSISTED_QUERY_NOT_FOUND');
  });

  it('answers a request target that is no URL with 400, logging no error and no credentials', async () => {
    const before = logLines.length;
    for (const target of ['http://[', 'http://a:secret-in-target@[::1']) {
      const answer = await raw(url, `GET ${target} HTTP/1.1\r\nhost: x\r\n\r\n`);
      expect(statusOf(answer)).toBe(400);
    }
    // '//[' is a path (its first segment empty), no host: routed nowhere
    expect(statusOf(await raw(url, 'GET //[ HTTP/1.1\r\nhost: x\r\n\r\n'))).toBe(404);
    expect(errorsLogged()).toEqual([]);
    expect(JSON.stringify(logLines.slice(before))).not.toContain('secret-in-target');
  });

  it('takes a client that goes away mid-body for the client\'s doing, not an error of the server', async () => {
    const { port } = new URL(url);
    await raw(url, `POST /graphql HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{"q`, 300);
    // the server sees the close a moment later
    for (let i = 0; i < 50 && !logLines.some((line) => /went away/.test(line.msg)); i++) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(logLines.some((line) => /went away/.test(line.msg))).toBe(true);
    expect(errorsLogged()).toEqual([]);
  });

  it('refuses a body nested a million deep with 400 before parsing it, on /graphql and on the REST interface', async () => {
    const deep = `${'['.repeat(500_000)}${']'.repeat(500_000)}`;
    const graphql = await fetch(`${url}/graphql`, { method: 'POST', headers: { authorization: alice, 'content-type': 'application/json' }, body: deep });
    expect(graphql.status).toBe(400);
    expect(((await graphql.json()) as { errors: { message: string }[] }).errors[0]!.message).toMatch(/nests deeper than/);
    const inVariables = `{"query":"{ viewer { username } }","x":${deep}}`;
    expect((await fetch(`${url}/graphql`, { method: 'POST', headers: { authorization: alice, 'content-type': 'application/json' }, body: inVariables })).status).toBe(400);
    const rest = await fetch(`${url}/api/v1/apikey`, { method: 'POST', headers: { authorization: alice, 'content-type': 'application/json' }, body: deep });
    expect(rest.status).toBe(400);
    expect(errorsLogged()).toEqual([]);
  });

  it('limits REST requests without credentials by address, in the interface\'s own 429', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) statuses.push((await fetch(`${url}/api/v1/apikey`)).status);
    // the address's burst (5, less what the tests before spent), then 429
    expect(statuses[0]).toBe(401);
    expect(statuses).toContain(429);
    expect(statuses.filter((s) => s !== 401 && s !== 429)).toEqual([]);
    const limited = await fetch(`${url}/v1/nbp?itemId=31000005`);
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(await limited.json()).toEqual({ errors: [{ code: 429, message: 'Too Many Requests' }] });
  });
});
