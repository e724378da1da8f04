import http from 'node:http';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/env.js';
import { createGateway, type Gateway } from '../../src/http/server.js';
import { createLogger } from '../../src/logger.js';
import { embeddedWithUsers } from '../helpers/gateway.js';
import { storeKinds } from '../helpers/stores.js';

// What a probe of the running gateway found in the live recommender's API (recordEvents,
// upsertItems, POST /v1/events, PUT /v1/items), past the other tests: each bounded in requests,
// over real HTTP and raw sockets.

interface Answer {
  status: number;
  body: string;
}

/** One request with exactly the headers given (fetch would drop an empty Authorization). */
function request(url: string, method: string, path: string, headers: Record<string, string>, body = ''): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${url}${path}`, { method, headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

interface LogLine {
  level: number;
  msg: string;
}

/** A gateway over the embedded backend (users alice, bob, root) whose log lines are kept. */
async function loggedGateway(env: Record<string, string>): Promise<{ url: string; lines: LogLine[]; stop(): Promise<void> }> {
  const opened = await storeKinds[0]!.open();
  const lines: LogLine[] = [];
  const destination = new PassThrough();
  destination.on('data', (chunk: Buffer) => {
    for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) lines.push(JSON.parse(line) as LogLine);
  });
  const gateway: Gateway = await createGateway({
    config: loadConfig({ DATA_DIR: '/nonexistent', AUTH_FAILURES_PER_MINUTE: '0', ...env }),
    backend: await embeddedWithUsers(opened.store),
    log: createLogger({ level: 'info', destination }),
  });
  const url = await gateway.listen(0, '127.0.0.1');
  return {
    url,
    lines,
    stop: async () => {
      await gateway.stop().catch(() => undefined);
      await opened.dispose();
    },
  };
}

describe('the REST routes without credentials', () => {
  let gw: Awaited<ReturnType<typeof loggedGateway>>;
  beforeAll(async () => {
    // an address's burst of 3 requests without credentials, then one a second
    gw = await loggedGateway({ RATE_LIMIT_RPS: '1', RATE_LIMIT_BURST: '3' });
  });
  afterAll(() => gw?.stop());

  it.each([
    ['POST', '/v1/events', { authorization: '' }],
    ['PUT', '/v1/items', { authorization: '   ' }],
    ['GET', '/api/v1/apikey', { authorization: '' }],
    ['GET', '/v1/nbp?itemId=31000005&apiKey=', {}],
    ['GET', '/v1/postbrowse?itemId=31000005&apiKey=%21%21', {}],
    ['GET', '/v1/items?ids=31000005&apiKey=a&apiKey=b', {}],
  ] as [string, string, Record<string, string>][])('%s %s with a blank or malformed credential spends the address\'s bucket', async (method, path, headers) => {
    // each case from an address of its own (TRUST_PROXY is off: the socket's address counts, so
    // the cases share 127.0.0.1; the burst of 3 is spent by the first case and 429 follows)
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) statuses.push((await request(gw.url, method, path, { 'content-type': 'application/json', ...headers }, '[]')).status);
    expect(statuses).toContain(429);
    expect(statuses.filter((s) => ![401, 403, 429].includes(s))).toEqual([]);
  });
});
