import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RequestDeadline } from '../../src/http/requestSignal.js';
import { Upstream } from '../../src/backends/rest/upstream.js';
import { DEFAULT_UPSTREAM_SETTINGS } from '../../src/backends/rest/options.js';
import { ErrorCode, GatewayError } from '../../src/errors.js';

// A request's signal after its connection closes: a call waiting on it is stopped at once; with
// none waiting (the end of every answer) it is only marked, and a call started on it afterwards
// is still refused without reaching the upstream (src/shared/callSignal.ts).

/** The upstream: `/hold` never answers (until the test ends), anything else answers []; counts what reaches it. */
const reached: string[] = [];
const held: http.ServerResponse[] = [];
let heldClosed = 0;
const upstreamServer = http.createServer((req, res) => {
  reached.push(req.url!);
  if (req.url!.startsWith('/hold')) {
    held.push(res);
    res.once('close', () => (heldClosed += 1));
    return;
  }
  res.writeHead(200, { 'content-type': 'application/json' }).end('[]');
});

/** The gateway side: each request makes a RequestDeadline and hands it to `onRequest`. */
let onRequest: (deadline: RequestDeadline, res: http.ServerResponse) => void = () => undefined;
const gateway = http.createServer((_req, res) => onRequest(new RequestDeadline(res, 10_000), res));

let upstream: Upstream;
let gatewayUrl: string;
const listen = (server: http.Server): Promise<string> =>
  new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)));

beforeAll(async () => {
  upstream = new Upstream('recommendations', await listen(upstreamServer), { ...DEFAULT_UPSTREAM_SETTINGS, retries: 0 });
  gatewayUrl = await listen(gateway);
});
afterAll(async () => {
  for (const res of held) res.destroy();
  await upstream.close();
  await new Promise((resolve) => upstreamServer.close(resolve));
  await new Promise((resolve) => gateway.close(resolve));
});

/** A GET of the gateway on a connection of its own; the returned request can be destroyed (the client going away). */
function ask(): http.ClientRequest {
  const request = http.get(gatewayUrl, { agent: false }, (answer) => answer.resume());
  request.on('error', () => undefined);
  return request;
}

/** Resolves with the request's signal once its response has closed. */
function signalAfterAnswer(): Promise<AbortSignal> {
  return new Promise((resolve) => {
    onRequest = (deadline, res) => {
      const { signal } = deadline;
      res.once('close', () => setImmediate(() => resolve(signal)));
      res.end('ok');
    };
    ask();
  });
}

describe('a request signal after its connection closes', () => {
  it('refuses a call started on it after the answer, without reaching the upstream', { timeout: 10_000 }, async () => {
    const signal = await signalAfterAnswer();
    const before = reached.length;
    const call = upstream.request({ method: 'GET', path: '/items', signal });
    await expect(call).rejects.toBeInstanceOf(GatewayError);
    await expect(call).rejects.toMatchObject({ code: ErrorCode.UPSTREAM_UNAVAILABLE });
    expect(reached.length).toBe(before);
    // the same call with a signal of a request still open does reach it
    await expect(upstream.request({ method: 'GET', path: '/items', signal: new AbortController().signal })).resolves.toMatchObject({ status: 200 });
    expect(reached.length).toBe(before + 1);
  });

  it('stops a call still waiting on it when the client goes away, and closes that upstream connection', { timeout: 10_000 }, async () => {
    // (wrapped: a promise resolved with a promise would wait for that one)
    const waiting = new Promise<{ call: Promise<unknown> }>((resolve) => {
      onRequest = (deadline) => {
        // the call is under way before the client leaves; the answer never comes
        resolve({ call: upstream.request({ method: 'GET', path: '/hold/1', signal: deadline.signal }).catch((error: unknown) => error) });
      };
    });
    const client = ask();
    const { call } = await waiting;
    for (let i = 0; i < 100 && !reached.includes('/hold/1'); i++) await new Promise((resolve) => setTimeout(resolve, 10));
    const started = Date.now();
    client.destroy();
    const outcome = await call;
    expect(outcome).toBeInstanceOf(GatewayError);
    expect((outcome as GatewayError).code).toBe(ErrorCode.UPSTREAM_UNAVAILABLE);
    // well before the deadline (10 s) or any undici timeout
    expect(Date.now() - started).toBeLessThan(5_000);
    for (let i = 0; i < 100 && heldClosed === 0; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(heldClosed).toBe(1);
  });
});
