import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuthorization } from '../../../src/auth/authorization.js';
import { createLogger } from '../../../src/logger.js';
import { embeddedWithUsers, startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { storeKinds } from '../../helpers/stores.js';

/**
 * An operation of a type the gateway does not serve (a subscription) is the client's mistake: 400
 * GRAPHQL_VALIDATION_FAILED on every path a request can take, and nothing at error level in the
 * log (a probe found 200 with INTERNAL_SERVER_ERROR and the stack of graphql-js's execute logged).
 */
describe('a subscription sent to the gateway', () => {
  const lines: string[] = [];
  let gw: TestGateway;
  let url: string;
  let dispose: () => Promise<void>;
  let key: string;

  beforeAll(async () => {
    const opened = await storeKinds[0]!.open();
    dispose = opened.dispose;
    const log = createLogger({ level: 'warn', destination: { write: (line: string) => lines.push(line) } as unknown as NodeJS.WritableStream });
    gw = await startTestGateway(await embeddedWithUsers(opened.store), {}, log);
    url = gw.url;
    const created = await post(JSON.stringify({ query: 'mutation { createApiKey(input: {}) { key } }' }), { authorization: basicAuthorization('alice', 'alice-password') });
    key = ((await created.json()) as { data: { createApiKey: { key: string } } }).data.createApiKey.key;
  });
  afterAll(async () => {
    await gw.stop();
    await dispose();
  });

  function post(body: string, headers: Record<string, string> = {}): Promise<Response> {
    return fetch(`${url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
  }

  const query = 'subscription Live { viewer { username } }';
  const sha256 = createHash('sha256').update(query).digest('hex');
  const paths: [string, () => Promise<Response>][] = [
    ['POST with a key', () => post(JSON.stringify({ query }), { authorization: key })],
    ['POST with a key, twice (a prepared document)', () => post(JSON.stringify({ query, operationName: 'Live' }), { authorization: key })],
    ['POST anonymous', () => post(JSON.stringify({ query }))],
    ['POST with a persisted-query extension (Apollo)', () => post(JSON.stringify({ query, extensions: { persistedQuery: { version: 1, sha256Hash: sha256 } } }), { authorization: key })],
    ['GET', () => fetch(`${url}/graphql?query=${encodeURIComponent(query)}`, { headers: { authorization: key, 'apollo-require-preflight': 'true' } })],
  ];

  it.each(paths)('is refused with 400 GRAPHQL_VALIDATION_FAILED: %s', async (_path, send) => {
    for (let n = 0; n < 2; n++) {
      const response = await send();
      const body = (await response.json()) as { errors?: { message: string; extensions?: { code?: string } }[]; data?: unknown };
      expect(response.status).toBe(400);
      expect(body.errors?.[0]?.extensions?.code).toBe('GRAPHQL_VALIDATION_FAILED');
      expect(body.errors?.[0]?.message).toBe('This gateway serves queries and mutations, not subscriptions.');
      expect(body.data).toBeUndefined();
    }
    expect(lines.filter((line) => (JSON.parse(line) as { level: number }).level >= 50)).toEqual([]);
  });

  it('leaves queries and mutations as they were', async () => {
    const response = await post(JSON.stringify({ query: '{ viewer { username } }' }), { authorization: key });
    expect(await response.json()).toEqual({ data: { viewer: { username: 'alice' } } });
  });
});
