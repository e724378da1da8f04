import type { Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_SERVER_LIMITS } from '../../src/config/defaults.js';
import { createHttpServer, listen, StartingAnswers } from '../../src/http/listener.js';
import { embeddedWithUsers, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { raw, statusOf } from '../helpers/rawHttp.js';
import { storeKinds } from '../helpers/stores.js';

/**
 * The answers a request gets before a route reads it, over real HTTP (raw bytes where fetch would
 * not send them): a method /graphql does not take, an HTTP/1.1 request without Host, a head node
 * could not read (431, 400, 408); with CORS_ORIGINS unset, a list, or `*`.
 */
const APP = 'https://app.example';
const kind = storeKinds[0]!;
const NO_HOST = { errors: [{ message: 'An HTTP/1.1 request must carry a Host header', extensions: { code: 'BAD_REQUEST' } }] };

/** The body of a raw answer, as JSON. */
const bodyOf = (answer: string): unknown => JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4));
/** A header of a raw answer (the first of its name), or null. */
const headerOf = (answer: string, name: string): string | null =>
  new RegExp(`\r\n${name}: ([^\r]*)\r\n`, 'i').exec(answer.slice(0, answer.indexOf('\r\n\r\n') + 2))?.[1] ?? null;

describe(`answers before a route (${kind.name} store)`, () => {
  /** CORS_ORIGINS unset. */
  let plain: TestGateway;
  /** CORS_ORIGINS listing APP. */
  let listed: TestGateway;
  /** CORS_ORIGINS=*, a request timed out after 0.8 s. */
  let any: TestGateway;
  const disposals: (() => Promise<void>)[] = [];

  const open = async (env: Record<string, string>): Promise<TestGateway> => {
    const opened = await kind.open();
    disposals.push(opened.dispose);
    const started = await startTestGateway(await embeddedWithUsers(opened.store), env);
    disposals.unshift(() => started.stop());
    return started;
  };

  beforeAll(async () => {
    plain = await open({});
    listed = await open({ CORS_ORIGINS: APP });
    // a short request timeout, for the 408
    any = await open({ CORS_ORIGINS: '*', HEADERS_TIMEOUT_MS: '400', REQUEST_TIMEOUT_MS: '800' });
  }, 30_000);
  afterAll(async () => {
    for (const dispose of disposals) await dispose().catch(() => undefined);
  });

  it('answers an Expect other than 100-continue with 417 in JSON, BAD_REQUEST, and serves what follows on the connection', async () => {
    // the probe: node's own 417 came with an empty chunked body
    const body = '{"query":"{ viewer { username } }"}';
    const request = (expect: string) =>
      `POST /graphql HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nExpect: ${expect}\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
    const answer = await raw(plain.url, request('200-ok'), 1_000);
    expect(statusOf(answer)).toBe(417);
    expect(headerOf(answer, 'content-type')).toBe('application/json; charset=utf-8');
    const first = answer.slice(answer.indexOf('\r\n\r\n') + 4);
    expect(JSON.parse(first.slice(0, Number(headerOf(answer, 'content-length'))))).toEqual({
      errors: [{ message: 'The Expect header takes only 100-continue', extensions: { code: 'BAD_REQUEST' } }],
    });
    // the body sent anyway is no request of its own; the next request on the connection is answered
    const both = await raw(plain.url, `${request('200-ok')}GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
    expect([...both.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((match) => match[1])).toEqual(['417', '200']);
  });

  it("reads a request's path as a path: '//host/…' is no authority, and routes nowhere", async () => {
    // the probe: '//evil.example/healthz' was answered as /healthz, '//x/v1/…' by the REST
    // interface, '//graphql' as "No route for /": the URL parser took '//…' for a host
    for (const path of ['//evil.example/healthz', '//evil.example/openapi.json', '//x/v1/items/31000005', '//x/api/v1/apikey', '//graphql']) {
      const answer = await raw(plain.url, `GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
      expect([path, statusOf(answer)]).toEqual([path, 404]);
      expect(bodyOf(answer)).toEqual({ errors: [{ message: `No route for ${path}`, extensions: { code: 'NOT_FOUND' } }] });
    }
    const backslash = await raw(plain.url, 'GET /\\evil.example/healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    expect(statusOf(backslash)).toBe(404);
    // an absolute-form target keeps its path
    expect(statusOf(await raw(plain.url, `GET ${plain.url}/healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`))).toBe(200);
    expect(statusOf(await raw(plain.url, 'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'))).toBe(200);
  });

  it('answers a method /graphql does not take with 405, Allow: GET, POST and BAD_REQUEST, before the CSRF check and the credential', async () => {
    // the probe: a PUT without a content type got Apollo's CSRF 400
    for (const method of ['PUT', 'DELETE', 'PATCH', 'OPTIONS']) {
      const response = await fetch(`${plain.url}/graphql`, { method });
      expect([method, response.status, response.headers.get('allow')]).toEqual([method, 405, 'GET, POST']);
      expect(response.headers.get('x-request-id')).toMatch(/./);
      expect(await response.json()).toEqual({ errors: [{ message: `Method ${method} not allowed`, extensions: { code: 'BAD_REQUEST' } }] });
    }
    const head = await fetch(`${plain.url}/graphql`, { method: 'HEAD' });
    expect([head.status, head.headers.get('allow')]).toEqual([405, 'GET, POST']);
    // a wrong credential is not looked at, and a body sent is not read: the connection goes with it
    const sent = '{"query":"{ viewer { id } }"}';
    const put = await raw(plain.url, `PUT /graphql HTTP/1.1\r\nhost: gateway\r\nauthorization: Basic bm9ib2R5Ondyb25n\r\ncontent-type: text/plain\r\ncontent-length: ${sent.length}\r\n\r\n${sent}`);
    expect([statusOf(put), headerOf(put, 'allow'), headerOf(put, 'connection')]).toEqual([405, 'GET, POST', 'close']);
    expect(bodyOf(put)).toEqual({ errors: [{ message: 'Method PUT not allowed', extensions: { code: 'BAD_REQUEST' } }] });
    // GET and POST are served as before
    const get = await fetch(`${plain.url}/graphql?query=${encodeURIComponent('{ viewer { username } }')}`, { headers: { 'apollo-require-preflight': 'true' } });
    expect([get.status, await get.json()]).toEqual([200, { data: { viewer: null } }]);
  });

  it("answers a preflight as before with CORS_ORIGINS set, and another method's 405 with the origin's header", async () => {
    for (const gw of [listed, any]) {
      for (const method of ['POST', 'PUT']) {
        const preflight = await fetch(`${gw.url}/graphql`, { method: 'OPTIONS', headers: { origin: APP, 'access-control-request-method': method } });
        expect([method, preflight.status, preflight.headers.get('access-control-allow-methods')]).toEqual([method, 204, 'GET, POST']);
      }
      const put = await fetch(`${gw.url}/graphql`, { method: 'PUT', headers: { origin: APP } });
      expect([put.status, put.headers.get('allow'), put.headers.get('access-control-allow-origin')]).toEqual([405, 'GET, POST', gw === any ? '*' : APP]);
    }
  });

  it("answers an HTTP/1.1 request without Host with a JSON 400 BAD_REQUEST, not node's empty one; HTTP/1.0 and an empty Host are served", async () => {
    for (const path of ['/healthz', '/graphql', '/v1/items?ids=1']) {
      const answer = await raw(plain.url, `GET ${path} HTTP/1.1\r\n\r\n`);
      expect([path, statusOf(answer), headerOf(answer, 'content-type'), headerOf(answer, 'connection')]).toEqual([path, 400, 'application/json; charset=utf-8', 'close']);
      expect(bodyOf(answer)).toEqual(NO_HOST);
      expect(headerOf(answer, 'access-control-allow-origin')).toBeNull();
    }
    // HTTP/1.0 has no Host to send; an empty one is a Host (RFC 9112 allows it), as node took it
    const old = await raw(plain.url, 'GET /healthz HTTP/1.0\r\n\r\n');
    expect([statusOf(old), bodyOf(old)]).toEqual([200, { status: 'ok' }]);
    const empty = await raw(plain.url, 'GET /healthz HTTP/1.1\r\nhost:\r\nconnection: close\r\n\r\n');
    expect([statusOf(empty), bodyOf(empty)]).toEqual([200, { status: 'ok' }]);
    // with CORS_ORIGINS=* it says so, as every other answer does then
    const anyOrigin = await raw(any.url, 'POST /graphql HTTP/1.1\r\norigin: https://app.example\r\ncontent-length: 0\r\n\r\n');
    expect([statusOf(anyOrigin), headerOf(anyOrigin, 'access-control-allow-origin'), bodyOf(anyOrigin)]).toEqual([400, '*', NO_HOST]);
    // and with a list, a listed origin's (the fourth probe: node read this head, Origin included)
    for (const [origin, allowed, vary] of [[APP, APP, 'origin'], ['https://elsewhere.example', null, null]] as const) {
      const answer = await raw(listed.url, `GET /graphql?query=%7B__typename%7D HTTP/1.1\r\norigin: ${origin}\r\napollo-require-preflight: 1\r\n\r\n`);
      expect([statusOf(answer), headerOf(answer, 'access-control-allow-origin'), headerOf(answer, 'vary'), bodyOf(answer)]).toEqual([400, allowed, vary, NO_HOST]);
    }
  });

  it("puts Access-Control-Allow-Origin: * on the raw 431, 400 and 408 with CORS_ORIGINS=*; with a list, nothing: the Origin was not read", async () => {
    const tooLarge = `GET /graphql HTTP/1.1\r\nhost: gateway\r\norigin: ${APP}\r\nx-padding: ${'a'.repeat(20_000)}\r\n\r\n`;
    const malformed = `GET /graphql HTTP/1.1\r\nhost gateway\r\norigin: ${APP}\r\n\r\n`;
    for (const [gw, allowed] of [[plain, null], [listed, null], [any, '*']] as const) {
      const head = await raw(gw.url, tooLarge);
      expect([statusOf(head), headerOf(head, 'access-control-allow-origin')]).toEqual([431, allowed]);
      expect(bodyOf(head)).toEqual({ errors: [{ message: 'The request head is larger than 16 KB', extensions: { code: 'BAD_REQUEST' } }] });
      const bad = await raw(gw.url, malformed);
      expect([statusOf(bad), headerOf(bad, 'access-control-allow-origin'), headerOf(bad, 'connection')]).toEqual([400, allowed, 'close']);
    }
    // a head that never ends: 408 at the timeout, with * too
    const timedOut = await raw(any.url, `GET /graphql HTTP/1.1\r\nhost: gateway\r\norigin: ${APP}\r\n`, 5_000);
    expect([statusOf(timedOut), headerOf(timedOut, 'access-control-allow-origin')]).toEqual([408, '*']);
    expect(bodyOf(timedOut)).toEqual({ errors: [{ message: 'The request was not sent in time', extensions: { code: 'BAD_REQUEST' } }] });
  });
});

describe('a request without Host while the gateway starts', () => {
  let server: Server;
  let url: string;
  beforeAll(async () => {
    server = createHttpServer(DEFAULT_SERVER_LIMITS);
    new StartingAnswers(server, '*');
    await listen(server, 0, '127.0.0.1');
    url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  afterAll(async () => {
    await new Promise((resolve) => server?.close(resolve));
  });

  it('gets the same JSON 400; with a Host, /healthz answers', async () => {
    const answer = await raw(url, 'GET /healthz HTTP/1.1\r\n\r\n');
    expect([statusOf(answer), headerOf(answer, 'access-control-allow-origin'), bodyOf(answer)]).toEqual([400, '*', NO_HOST]);
    const healthz = await raw(url, 'GET /healthz HTTP/1.1\r\nhost: gateway\r\nconnection: close\r\n\r\n');
    expect([statusOf(healthz), bodyOf(healthz)]).toEqual([200, { status: 'ok' }]);
  });
});
