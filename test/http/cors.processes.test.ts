import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuthorization } from '../../src/auth/authorization.js';
import { ConfigError, loadConfig } from '../../src/config/env.js';
import type { EmbeddedRecs } from '../../src/backends/embedded/recs.js';
import { listen, StartingAnswers } from '../../src/http/listener.js';
import { embeddedWithUsers, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { GATEWAY_ARGS } from '../helpers/processes.js';
import { storeKinds, tempDir } from '../helpers/stores.js';

/**
 * CORS_ORIGINS: pages on another origin calling /graphql and the REST interfaces from a browser.
 * Origin is sent by hand here (node's fetch lets a caller set it), as a browser would send it.
 */
const APP = 'https://app.example';
const ADMIN = 'https://admin.example';
const STRANGER = 'https://evil.example';
const RECS = 'query Recs($itemId: ItemId!) { productRecommendations(itemId: $itemId) { itemId name } }';
const alice = basicAuthorization('alice', 'alice-password');
const kind = storeKinds[0]!;

const preflight = (url: string, origin: string, method = 'POST'): Promise<Response> =>
  fetch(url, {
    method: 'OPTIONS',
    headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': 'authorization, content-type' },
  });

const post = (url: string, body: unknown, headers: Record<string, string>): Promise<Response> =>
  fetch(`${url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

/** The Access-Control-* headers of an answer. */
const corsHeaders = (response: Response): Record<string, string> =>
  Object.fromEntries([...response.headers].filter(([name]) => name.startsWith('access-control-')));

const listed = (value: string | null): string[] => (value ?? '').split(',').map((part) => part.trim().toLowerCase()).filter((part) => part !== '');

describe(`CORS over HTTP: CORS_ORIGINS listing two origins, or * (${kind.name} store)`, () => {
  let gw: TestGateway;
  /** The same origins, under rate limits: the address's bucket holds two requests, and one bad credential a minute is allowed. */
  let limited: TestGateway;
  /** CORS_ORIGINS=*. */
  let any: TestGateway;
  const disposals: (() => Promise<void>)[] = [];
  let key: string;
  let anchor: number;

  const open = async (env: Record<string, string>): Promise<{ gateway: TestGateway; recs: EmbeddedRecs }> => {
    const opened = await kind.open();
    disposals.push(opened.dispose);
    const backend = await embeddedWithUsers(opened.store);
    return { gateway: await startTestGateway(backend, { CORS_ORIGINS: `${APP},${ADMIN}`, ...env }), recs: backend.recs as EmbeddedRecs };
  };

  beforeAll(async () => {
    const started = await open({ BODY_LIMIT_BYTES: '4096' });
    gw = started.gateway;
    const { recs } = started;
    anchor = [...recs.catalog.values()].map((item) => item.itemId).find((id) => recs.recommendNow('NEXT_BEST_PRODUCT', id).entries.length > 0)!;
    limited = (await open({ RATE_LIMIT_RPS: '1', RATE_LIMIT_BURST: '2', AUTH_FAILURES_PER_MINUTE: '1' })).gateway;
    any = (await open({ CORS_ORIGINS: '*' })).gateway;
    const created = await gw.gql<{ createApiKey: { key: string } }>('mutation { createApiKey(input: { name: "cors" }) { key } }', {}, { authorization: alice });
    key = created.body.data!.createApiKey.key;
  });
  afterAll(async () => {
    await gw?.stop().catch(() => undefined);
    await limited?.stop().catch(() => undefined);
    await any?.stop().catch(() => undefined);
    for (const dispose of disposals) await dispose();
  });

  it('answers a preflight from an allowed origin with 204 and what the browser needs, for /graphql and each REST route', async () => {
    const answer = await preflight(`${gw.url}/graphql`, APP);
    expect(answer.status).toBe(204);
    expect(answer.headers.get('access-control-allow-origin')).toBe(APP);
    expect(listed(answer.headers.get('vary'))).toContain('origin');
    expect(listed(answer.headers.get('access-control-allow-methods'))).toEqual(expect.arrayContaining(['get', 'post']));
    expect(listed(answer.headers.get('access-control-allow-headers'))).toEqual(expect.arrayContaining([
      'authorization', 'content-type', 'apollo-require-preflight', 'x-apollo-operation-name', 'apollographql-client-name', 'apollographql-client-version', 'x-request-id', 'x-recs-shopper',
    ]));
    expect(answer.headers.get('access-control-max-age')).toBe('600');
    expect(await answer.text()).toBe('');

    const other = await preflight(`${gw.url}/graphql`, ADMIN);
    expect(other.headers.get('access-control-allow-origin')).toBe(ADMIN);

    for (const [route, methods] of [
      ['/api/v1/apikey', ['get', 'post']],
      ['/api/v1/apikey/00000000-0000-4000-8000-000000000000', ['delete', 'patch']],
      ['/api/v1/apikey/00000000-0000-4000-8000-000000000000/rotate', ['post']],
      ['/v1/events', ['post']],
      ['/v1/items', ['get', 'put']],
      ['/v1/nbp', ['get']],
    ] as const) {
      const rest = await preflight(`${gw.url}${route}`, APP, methods[0].toUpperCase());
      expect(rest.status, route).toBe(204);
      expect(rest.headers.get('access-control-allow-origin'), route).toBe(APP);
      expect(listed(rest.headers.get('access-control-allow-methods')), route).toEqual(methods);
    }
  });

  it('answers a preflight from an origin not listed with 204 and no CORS header, not with the CSRF 400', async () => {
    const answer = await preflight(`${gw.url}/graphql`, STRANGER);
    expect(answer.status).toBe(204);
    expect(corsHeaders(answer)).toEqual({});
    expect(await answer.text()).toBe('');
    const rest = await preflight(`${gw.url}/api/v1/apikey`, STRANGER);
    expect(rest.status).toBe(204);
    expect(corsHeaders(rest)).toEqual({});
  });

  it('answers preflights before the rate limits: they spend none of the address bucket', async () => {
    // the bucket holds two: ten preflights, then two requests without credentials still get their 401
    for (let i = 0; i < 10; i++) expect((await preflight(`${limited.url}/v1/items?itemId=1`, APP, 'GET')).status).toBe(204);
    for (let i = 0; i < 10; i++) expect((await preflight(`${limited.url}/graphql`, STRANGER)).status).toBe(204);
    for (let i = 0; i < 2; i++) {
      const anonymous = await fetch(`${limited.url}/api/v1/apikey`, { headers: { origin: APP } });
      expect(anonymous.status).toBe(401);
      expect(anonymous.headers.get('access-control-allow-origin')).toBe(APP);
    }
  });

  it('gives an allowed origin its data with Access-Control-Allow-Origin; no Origin or another origin gets no CORS header', async () => {
    const answer = await post(gw.url, { query: RECS, variables: { itemId: anchor } }, { authorization: key, origin: APP });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('access-control-allow-origin')).toBe(APP);
    expect(listed(answer.headers.get('vary'))).toContain('origin');
    expect(listed(answer.headers.get('access-control-expose-headers'))).toEqual(expect.arrayContaining(['x-request-id', 'retry-after']));
    const body = (await answer.json()) as { data: { productRecommendations: unknown[] } };
    expect(body.data.productRecommendations.length).toBeGreaterThan(0);

    const plain = await post(gw.url, { query: RECS, variables: { itemId: anchor } }, { authorization: key });
    expect(plain.status).toBe(200);
    expect(corsHeaders(plain)).toEqual({});
    const stranger = await post(gw.url, { query: RECS, variables: { itemId: anchor } }, { authorization: key, origin: STRANGER });
    expect(stranger.status).toBe(200);
    expect(corsHeaders(stranger)).toEqual({});
  });

  it("keeps Vary: Origin with the IDE page's own Vary", async () => {
    const ide = await fetch(`${gw.url}/graphql`, { headers: { origin: APP, accept: 'text/html' } });
    expect(ide.status).toBe(200);
    expect(ide.headers.get('access-control-allow-origin')).toBe(APP);
    expect(listed(ide.headers.get('vary'))).toEqual(expect.arrayContaining(['origin', 'accept-encoding']));
  });

  it('puts Access-Control-Allow-Origin on error answers too: 400, 401, 413, 429, and the REST interfaces', async () => {
    const headers = { origin: APP };
    // CSRF prevention as before: a simple request without Apollo's headers is refused
    const csrf = await fetch(`${gw.url}/graphql`, { method: 'POST', headers: { ...headers, 'content-type': 'text/plain', authorization: key }, body: '{"query":"{ viewer { username } }"}' });
    expect(csrf.status).toBe(400);
    expect(await csrf.text()).toContain('Cross-Site Request Forgery');
    expect(csrf.headers.get('access-control-allow-origin')).toBe(APP);

    const tooLarge = await post(gw.url, { query: `{ viewer { username } } #${'x'.repeat(8192)}` }, { ...headers, authorization: key });
    expect(tooLarge.status).toBe(413);
    expect(tooLarge.headers.get('access-control-allow-origin')).toBe(APP);

    const rest = await fetch(`${gw.url}/v1/nbp?itemId=${anchor}&apiKey=${encodeURIComponent(key)}`, { headers });
    expect(rest.status).toBe(200);
    expect(rest.headers.get('access-control-allow-origin')).toBe(APP);

    // one bad credential a minute: a 401, then a 429 with Retry-After a page may read
    const wrong = await post(limited.url, { query: '{ viewer { username } }' }, { ...headers, authorization: basicAuthorization('alice', 'wrong') });
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('access-control-allow-origin')).toBe(APP);
    const refused = await post(limited.url, { query: '{ viewer { username } }' }, { ...headers, authorization: basicAuthorization('alice', 'wrong') });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).not.toBeNull();
    expect(refused.headers.get('access-control-allow-origin')).toBe(APP);
    expect(listed(refused.headers.get('access-control-expose-headers'))).toContain('retry-after');
  });

  it("serves a cached answer with the asking origin's header, never the one it was stored for", async () => {
    const body = { query: RECS, variables: { itemId: anchor }, operationName: 'Recs' };
    const first = await post(gw.url, { ...body, query: `${RECS} # cors` }, { authorization: key, origin: APP });
    expect(first.status).toBe(200);
    expect(first.headers.get('access-control-allow-origin')).toBe(APP);
    expect(first.headers.get('age')).toBeNull();

    const fromAdmin = await post(gw.url, { ...body, query: `${RECS} # cors` }, { authorization: key, origin: ADMIN });
    expect(fromAdmin.headers.get('age')).not.toBeNull(); // the response cache answered
    expect(fromAdmin.headers.get('access-control-allow-origin')).toBe(ADMIN);
    expect(listed(fromAdmin.headers.get('vary'))).toEqual(expect.arrayContaining(['authorization', 'origin']));
    expect(await fromAdmin.json()).toEqual(await first.json());

    const fromStranger = await post(gw.url, { ...body, query: `${RECS} # cors` }, { authorization: key, origin: STRANGER });
    expect(fromStranger.headers.get('age')).not.toBeNull();
    expect(corsHeaders(fromStranger)).toEqual({});
    const fromNowhere = await post(gw.url, { ...body, query: `${RECS} # cors` }, { authorization: key });
    expect(fromNowhere.headers.get('age')).not.toBeNull();
    expect(corsHeaders(fromNowhere)).toEqual({});
    // a shared cache in front is told the answer depends on Origin, whoever asked
    expect(listed(fromNowhere.headers.get('vary'))).toContain('origin');
  });

  it('answers any origin with *, Authorization among the headers allowed', async () => {
    const answer = await preflight(`${any.url}/graphql`, STRANGER);
    expect(answer.status).toBe(204);
    expect(answer.headers.get('access-control-allow-origin')).toBe('*');
    expect(listed(answer.headers.get('access-control-allow-headers'))).toContain('authorization');
    expect(listed(answer.headers.get('vary'))).not.toContain('origin');

    const viewer = await post(any.url, { query: '{ viewer { username } }' }, { authorization: alice, origin: STRANGER });
    expect(viewer.status).toBe(200);
    expect(viewer.headers.get('access-control-allow-origin')).toBe('*');
    expect(await viewer.json()).toEqual({ data: { viewer: { username: 'alice' } } });
    // every answer says *, Origin or not: a shared cache that kept one made without Origin
    // (a CDN's first visitor a server, say) must not serve pages an answer their browsers refuse
    const plain = await post(any.url, { query: '{ viewer { username } }' }, { authorization: alice });
    expect(plain.headers.get('access-control-allow-origin')).toBe('*');
    expect(listed(plain.headers.get('vary'))).not.toContain('origin');
  });
});

describe('CORS_ORIGINS values', () => {
  const problemsOf = (value: string): string[] => {
    try {
      loadConfig({ CORS_ORIGINS: value });
      return [];
    } catch (error) {
      if (error instanceof ConfigError) return error.problems;
      throw error;
    }
  };

  it('takes origins as browsers send them, or * alone', () => {
    expect(loadConfig({ CORS_ORIGINS: ' https://app.example , http://localhost:5173,' }).corsOrigins).toEqual(['https://app.example', 'http://localhost:5173']);
    expect(loadConfig({ CORS_ORIGINS: '*' }).corsOrigins).toBe('*');
    expect(loadConfig({}).corsOrigins).toBeNull();
  });

  it.each([
    ['https://app.example/', 'trailing slash'],
    ['https://app.example/graphql', 'path'],
    ['app.example', 'not a URL'],
    ['ftp://app.example', 'not http:// or https://'],
    ['https://App.example', 'sent by browsers as "https://app.example"'],
    ['https://app.example:443', 'sent by browsers as "https://app.example"'],
    ['https://app.example,*', '* stands alone'],
    ['https://*.example', 'no browser sends'],
  ])('refuses %j in one line', (value, said) => {
    const problems = problemsOf(value);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/^CORS_ORIGINS /);
    expect(problems[0]).toContain(said);
    expect(problems[0]).not.toContain('\n');
  });

  it('never echoes credentials written into an origin', () => {
    const problems = problemsOf('https://user:hunter2@app.example');
    expect(problems).toHaveLength(1);
    expect(problems[0]).not.toContain('hunter2');
  });

  it('stops serve with one line naming CORS_ORIGINS', async () => {
    const { dir, remove } = tempDir();
    // a gateway that starts (as one that ignored the setting would) is stopped after 20 s
    const child = spawn(process.execPath, [...GATEWAY_ARGS, 'serve'], {
      cwd: new URL('../../', import.meta.url).pathname,
      env: { ...process.env, LOG_LEVEL: 'warn', DATA_DIR: dir, PORT: '0', HOST: '127.0.0.1', CORS_ORIGINS: 'https://app.example/' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    const [code] = (await once(child, 'exit')) as [number | null];
    clearTimeout(timer);
    remove();
    const result = { code, stderr };
    expect(result.code).toBe(2);
    const lines = result.stderr.split('\n').filter((line) => line.includes('CORS_ORIGINS'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('"https://app.example/"');
  }, 30_000);
});

describe('CORS while the gateway starts', () => {
  let server: Server;
  let url: string;
  beforeAll(async () => {
    server = createServer();
    new StartingAnswers(server, [APP]);
    await listen(server, 0, '127.0.0.1');
    url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  afterAll(async () => {
    await new Promise((resolve) => server?.close(resolve));
  });

  it("answers a preflight, and gives an allowed origin's page a 503 it can read", async () => {
    const answer = await preflight(`${url}/graphql`, APP);
    expect(answer.status).toBe(204);
    expect(answer.headers.get('access-control-allow-origin')).toBe(APP);
    const starting = await post(url, { query: '{ viewer { username } }' }, { origin: APP });
    expect(starting.status).toBe(503);
    expect(starting.headers.get('access-control-allow-origin')).toBe(APP);
    expect(listed(starting.headers.get('access-control-expose-headers'))).toContain('retry-after');
    const stranger = await post(url, { query: '{ viewer { username } }' }, { origin: STRANGER });
    expect(stranger.status).toBe(503);
    expect(corsHeaders(stranger)).toEqual({});
  });
});

/**
 * A real browser: a page on one origin (a server of its own on another port) fetches /graphql
 * from the gateway with an API key and JSON, which makes Chromium send a preflight first.
 * Chromium comes from Debian's package, as for the IDE's test (test/e2e/ide.processes.test.ts).
 */
describe(`CORS in Chromium (${kind.name} store)`, () => {
  let gw: TestGateway;
  let dispose: () => Promise<void>;
  let page: Server;
  let pageOrigin: string;
  let context: BrowserContext;
  let userDataDir: string;

  beforeAll(async () => {
    page = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end('<!doctype html><title>frontend</title>');
    });
    await listen(page, 0, '127.0.0.1');
    pageOrigin = `http://127.0.0.1:${(page.address() as { port: number }).port}`;
    const opened = await kind.open();
    dispose = opened.dispose;
    gw = await startTestGateway(await embeddedWithUsers(opened.store), { CORS_ORIGINS: pageOrigin });
    userDataDir = mkdtempSync(path.join(tmpdir(), 'recs-gateway-chromium-'));
    context = await chromium.launchPersistentContext(userDataDir, {
      executablePath: '/usr/bin/chromium',
      headless: true,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
    });
  }, 60_000);
  afterAll(async () => {
    await context?.close();
    if (userDataDir) rmSync(userDataDir, { recursive: true, force: true });
    await gw?.stop().catch(() => undefined);
    await dispose?.();
    await new Promise((resolve) => page?.close(resolve));
  });

  it('lets a page on another origin read an answer of /graphql, and its x-request-id', async () => {
    const tab = context.pages()[0] ?? (await context.newPage());
    await tab.goto(`${pageOrigin}/`);
    const result = await tab.evaluate(
      async ({ url, authorization }) => {
        try {
          const response = await fetch(`${url}/graphql`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', authorization },
            body: JSON.stringify({ query: '{ viewer { username } }' }),
          });
          return { status: response.status, requestId: response.headers.get('x-request-id'), body: await response.json() };
        } catch (error) {
          return { error: String(error) };
        }
      },
      { url: gw.url, authorization: alice },
    );
    expect(result).toMatchObject({ status: 200, body: { data: { viewer: { username: 'alice' } } } });
    expect((result as { requestId?: string }).requestId).toMatch(/./);
  }, 60_000);
});
