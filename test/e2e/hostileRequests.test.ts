import { basicAuthorization } from '../../src/auth/authorization.js';
import { createHash } from 'node:crypto';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { match } from '../helpers/matchers.js';
import { loadConfig } from '../../src/config/env.js';
import { createLogger } from '../../src/logger.js';
import { createGateway, type Gateway } from '../../src/http/server.js';
import type { Backend } from '../../src/ports/backend.js';
import { embeddedWithUsers } from '../helpers/gateway.js';
import { NO_RATE_LIMITS } from '../helpers/processes.js';
import { storeKinds } from '../helpers/stores.js';

// What an anonymous client can send to make the gateway burn CPU or log errors, over real HTTP.

interface Started {
  gateway: Gateway;
  url: string;
  /** Log lines at error level or above, so far. */
  errors(): string[];
}

async function start(env: Record<string, string>, backend: Parameters<typeof createGateway>[0]['backend']): Promise<Started> {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      done();
    },
  });
  // the requests carry alice's password: what is tested here is the GraphQL path that a client
  // with credentials reaches (without them, a body past 32 KiB is refused unread)
  const config = loadConfig({ DATA_DIR: '/nonexistent', ...NO_RATE_LIMITS, BODY_LIMIT_BYTES: String(4 * 1024 * 1024), ...env });
  const gateway = await createGateway({ config, backend, log: createLogger({ level: 'warn', destination }) });
  const url = await gateway.listen(0, '127.0.0.1');
  return { gateway, url, errors: () => lines.filter((line) => (JSON.parse(line) as { level: number }).level >= 50) };
}

const ALICE = basicAuthorization('alice', 'alice-password');

async function post(url: string, text: string, headers: Record<string, string> = {}): Promise<{ status: number; body: { data?: unknown; errors?: { message: string; extensions?: { code?: unknown } }[] } }> {
  const response = await fetch(`${url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: ALICE, ...headers }, body: text });
  return { status: response.status, body: (await response.json()) as never };
}

const cpuMs = (since: NodeJS.CpuUsage): number => {
  const used = process.cpuUsage(since);
  return (used.user + used.system) / 1000;
};

describe('hostile GraphQL requests over HTTP', () => {
  let prepared: Started;
  let apolloOnly: Started;
  let dispose: () => Promise<void>;

  beforeAll(async () => {
    const opened = await storeKinds[0]!.open();
    dispose = opened.dispose;
    const backend = await embeddedWithUsers(opened.store);
    prepared = await start({}, backend);
    apolloOnly = await start({ PREPARED_OPERATIONS_MAX_DOCUMENTS: '0' }, Object.assign(Object.create(backend) as Backend, { close: () => Promise.resolve() }));
    // the takeover answers once Apollo has answered the same request
    for (const gw of [prepared, apolloOnly]) expect((await post(gw.url, JSON.stringify({ query: '{ viewer { id } }' }))).status).toBe(200);
  });
  afterAll(async () => {
    await apolloOnly?.gateway.stop().catch(() => undefined);
    await prepared?.gateway.stop().catch(() => undefined);
    await dispose?.();
  });

  it('refuses a field repeated 450 times with QUERY_TOO_COMPLEX, at the CPU cost of a normal request', async () => {
    const REQUESTS = 200;
    // distinct texts (a comment differs), so that nothing is answered from what was remembered
    const normal = (n: number) => JSON.stringify({ query: `# ${n}\n{ viewer { id username isAdmin } }` });
    const hostile = (n: number) => JSON.stringify({ query: `# ${n}\n{ ${'viewer { id } '.repeat(450)}}` });
    const first = await post(prepared.url, hostile(-1));
    expect(first.status).toBe(400);
    expect(first.body.errors?.[0]?.extensions?.code).toBe('QUERY_TOO_COMPLEX');
    expect(first.body.errors?.[0]?.message).toBe('Query too complex: sameNameFields 450 exceeds the limit of 10');
    expect(first.body.errors).toHaveLength(1);
    // the same answer from Apollo's own path
    expect(await post(apolloOnly.url, hostile(-1))).toEqual(first);
    await post(prepared.url, normal(-1));

    let started = process.cpuUsage();
    for (let n = 0; n < REQUESTS; n++) expect((await post(prepared.url, normal(n))).status).toBe(200);
    const reference = cpuMs(started);
    started = process.cpuUsage();
    for (let n = 0; n < REQUESTS; n++) expect((await post(prepared.url, hostile(n))).status).toBe(400);
    const hostileCost = cpuMs(started);
    console.log(`${hostileCost.toFixed(0)} ms for ${REQUESTS} hostile requests, ${reference.toFixed(0)} ms for as many normal ones`);
    // validating it whole took about 75 ms (bench/validation.ts), 200 times the reference; refusing it at the limits, about as much
    expect(hostileCost, `${hostileCost.toFixed(0)} ms for ${REQUESTS} hostile requests, ${reference.toFixed(0)} ms for as many normal ones`).toBeLessThan(5 * reference);
  }, 90_000);

  it.each([
    ['arrays', '['.repeat(200_000) + ']'.repeat(200_000)],
    ['objects', '{"a":'.repeat(200_000) + '1' + '}'.repeat(200_000)],
  ])('answers variables of %s nested 200,000 deep with 400 BAD_REQUEST, and logs no error', async (kind, deep) => {
    const text = `{"query":"{ viewer { id } }","variables":{"deep":${deep}}}`;
    // with an Accept Apollo has answered before, and with one it has not
    for (const headers of [{}, { accept: `application/json, x/${kind}` }] as Record<string, string>[]) {
      const answer = await post(prepared.url, text, headers);
      expect(answer.status).toBe(400);
      expect(answer.body.errors?.[0]?.extensions?.code).toBe('BAD_REQUEST');
      // the body's nesting is refused on its text, before JSON.parse (a GET's variables, by the envelope check)
      expect(answer.body.errors?.[0]?.message).toBe('The request body nests deeper than 40 levels');
    }
    const get = await fetch(`${prepared.url}/graphql?${new URLSearchParams({ query: '{ viewer { id } }', variables: `{"deep":${deep}}` }).toString()}`, {
      headers: { authorization: ALICE, 'apollo-require-preflight': '1' },
    }).catch(() => null);
    // a query string that long is refused by node itself (431) or by the envelope check (400)
    if (get !== null) expect([400, 414, 431]).toContain(get.status);
    expect(prepared.errors()).toEqual([]);
  });

  it('answers a persisted query whose hash does not match with 400 BAD_REQUEST on both paths, and logs no error', async () => {
    const query = '{ item(itemId: 31000005) { name } }';
    const wrong = createHash('sha256').update(`${query} `).digest('hex');
    const text = JSON.stringify({ query, extensions: { persistedQuery: { version: 1, sha256Hash: wrong } } });
    for (const gw of [prepared, apolloOnly]) {
      const answer = await post(gw.url, text);
      expect(answer).toEqual({ status: 400, body: { errors: [{ message: 'provided sha does not match query', extensions: { code: 'BAD_REQUEST' } }] } });
      expect(gw.errors()).toEqual([]);
    }
  });

  it('keeps no persisted query of 64 KiB or more: its hash alone is not found later', async () => {
    const register = async (query: string) => {
      const extensions = { persistedQuery: { version: 1, sha256Hash: createHash('sha256').update(query).digest('hex') } };
      expect((await post(prepared.url, JSON.stringify({ query, extensions }))).status).toBe(200);
      return post(prepared.url, JSON.stringify({ extensions }));
    };
    const small = await register('# small\n{ viewer { id } }');
    expect(small).toMatchObject({ status: 200, body: { data: { viewer: { id: match.any(String) } } } });
    const large = await register(`# ${'x'.repeat(64 * 1024)}\n{ viewer { id } }`);
    expect(large.body.errors?.[0]?.extensions?.code).toBe('PERSISTED_QUERY_NOT_FOUND');
  });
});
