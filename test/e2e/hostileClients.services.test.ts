import { createHash } from 'node:crypto';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuthorization } from '../../src/auth/authorization.js';
import { ClientAddresses, clientNetwork } from '../../src/auth/clientAddress.js';
import { principalBucket } from '../../src/auth/rateLimit.js';
import { loadConfig } from '../../src/config/env.js';
import { codeOf, embeddedWithUsers, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { addUser } from '../../src/backends/embedded/keys/users.js';
import { storeKinds, TEST_COST } from '../helpers/stores.js';

/**
 * What a hostile or careless client on this machine tried (issue 18), each bounded in requests:
 * bodies and guesses from strangers cost no parsing and no password work, and never lock out a
 * user who holds a valid key.
 */

/** Sends a request's head and the first part of its body, then waits: what comes back before the rest. */
function answerBeforeBody(url: string, headers: Record<string, string>, declaredLength: number): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let received = '';
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(received);
    }, 10_000);
    socket.on('data', (chunk) => {
      received += chunk.toString('latin1');
      if (received.includes('\r\n\r\n')) {
        clearTimeout(timer);
        socket.destroy();
        resolve(received);
      }
    });
    socket.on('error', reject);
    const head = [
      'POST /graphql HTTP/1.1',
      `host: ${hostname}:${port}`,
      'content-type: application/json',
      `content-length: ${declaredLength}`,
      ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
      '',
      '',
    ].join('\r\n');
    // the body starts, and the rest never comes
    socket.write(`${head}{"query":"{ a a a a a a a a a a`);
  });
}

const statusOf = (head: string): number => Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0);

describe.each(storeKinds)('hostile clients ($name store)', (kind) => {
  let gw: TestGateway;
  let dispose: () => Promise<void>;
  let key: string;
  let passwordChecks = 0;
  const alice = basicAuthorization('alice', 'alice-password');
  const carol = basicAuthorization('carol', 'carol-password');
  /** A request that claims to come from `address`, through the trusted proxy on loopback. */
  const from = (address: string, authorization?: string): Record<string, string> => ({
    'x-forwarded-for': address,
    ...(authorization ? { authorization } : {}),
  });

  beforeAll(async () => {
    const opened = await kind.open();
    dispose = opened.dispose;
    const findUser = opened.store.findUser.bind(opened.store);
    opened.store.findUser = (...args) => {
      passwordChecks += 1;
      return findUser(...args);
    };
    await addUser(opened.store, { username: 'carol', password: 'carol-password' }, TEST_COST);
    gw = await startTestGateway(await embeddedWithUsers(opened.store), {
      RATE_LIMIT_RPS: '1000',
      AUTH_FAILURES_PER_MINUTE: '5',
      TRUST_PROXY: '127.0.0.1,::1',
    });
    const created = await gw.gql<{ createApiKey: { key: string } }>(
      'mutation { createApiKey(input: { name: "hostile-test" }) { key } }',
      {},
      from('10.9.0.1', alice),
    );
    key = created.body.data!.createApiKey.key;
  });
  afterAll(async () => {
    await gw.stop().catch(() => undefined);
    await dispose();
  });

  it('refuses a large body without credentials with 413 before parsing it, and the connection with it', async () => {
    const query = `#${'x'.repeat(1024 * 1024 - 100)}\n{ item(itemId: 31000005) { name } }`;
    const response = await fetch(`${gw.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...from('10.9.1.1') },
      body: JSON.stringify({ query }),
    });
    expect(response.status).toBe(413);
    expect(response.headers.get('connection')).toBe('close');
    expect(((await response.json()) as { errors: { extensions: { code: string } }[] }).errors[0]!.extensions.code).toBe('BAD_REQUEST');
    // a small anonymous request is still answered
    const small = await gw.gql('{ viewer { username } }', {}, from('10.9.1.1'));
    expect(small.status).toBe(200);
    expect(small.body.data).toEqual({ viewer: null });
  });

  it('answers a wrong credential and a locked-out address before reading the body', async () => {
    // a wrong key: 401 while the body is still on its way
    const wrong = await answerBeforeBody(gw.url, from('10.9.2.1', 'AAAAAAAAAAAAAAAAAAAAAA'), 1024 * 1024);
    expect(statusOf(wrong)).toBe(401);
    expect(wrong.toLowerCase()).toContain('connection: close');
    // an anonymous body larger than the anonymous limit: 413 from its declared length
    const anonymous = await answerBeforeBody(gw.url, from('10.9.2.2'), 1024 * 1024);
    expect(statusOf(anonymous)).toBe(413);
  });

  it('counts concurrent wrong passwords before the password work: at most the limit get a 401', async () => {
    const before = passwordChecks;
    const attempts = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        gw.gql('{ viewer { username } }', {}, from('10.9.3.1', basicAuthorization('root', `wrong-${i}`))),
      ),
    );
    const statuses = attempts.map((a) => a.status);
    expect(statuses.filter((s) => s === 401)).toHaveLength(5);
    expect(statuses.filter((s) => s === 429)).toHaveLength(25);
    for (const refused of attempts.filter((a) => a.status === 429)) expect(codeOf(refused)).toBe('RATE_LIMITED');
    // the 25 refused never reached the store, let alone scrypt
    expect(passwordChecks - before).toBe(5);
  });

  it('locks a username attacked from many addresses, and only that username and those addresses', async () => {
    // six addresses, one wrong guess each at bob: the username's limit (5) is what stops the sixth
    const guesses: number[] = [];
    for (let i = 0; i < 6; i++) {
      guesses.push((await gw.gql('{ viewer { username } }', {}, from(`10.9.4.${i + 1}`, basicAuthorization('bob', `guess-${i}`, 'corp.example')))).status);
    }
    expect(guesses).toEqual([401, 401, 401, 401, 401, 429]);
    // bob's right password is refused too while his name is locked, from a fresh address
    const bob = await gw.gql('{ viewer { username } }', {}, from('10.9.4.100', basicAuthorization('bob', 'bob-password', 'corp.example')));
    expect(bob.status).toBe(429);
    // alice signs in from one of the attacking addresses: neither her name nor that address is locked
    const aliceIn = await gw.gql<{ viewer: { username: string } }>('{ viewer { username } }', {}, from('10.9.4.1', alice));
    expect(aliceIn.status).toBe(200);
    expect(aliceIn.body.data?.viewer.username).toBe('alice');
  });

  it('never refuses a valid key because of failures from its address', async () => {
    const locked = '10.9.5.1';
    for (let i = 0; i < 5; i++) {
      expect((await gw.gql('{ viewer { username } }', {}, from(locked, `${'B'.repeat(21)}${'ABCDE'[i]}`))).status).toBe(401);
    }
    // the address is locked out: a wrong key and a password from it get 429 ...
    expect((await gw.gql('{ viewer { username } }', {}, from(locked, 'C'.repeat(22)))).status).toBe(429);
    expect((await gw.gql('{ viewer { username } }', {}, from(locked, alice))).status).toBe(429);
    // ... and a valid key from it is answered, on GraphQL and on the REST interface alike
    const withKey = await gw.gql<{ viewer: { username: string } }>('{ viewer { username } }', {}, from(locked, key));
    expect(withKey.status).toBe(200);
    expect(withKey.body.data?.viewer.username).toBe('alice');
    const rest = await fetch(`${gw.url}/api/v1/apikey`, { headers: from(locked, key) });
    expect(rest.status).toBe(200);
  });

  it('checks a verified password once, not on every request, and again after the keys change', async () => {
    const address = '10.9.6.1';
    // twenty at once, before any was verified: one password check between them
    const atFirst = passwordChecks;
    const first = await Promise.all(Array.from({ length: 20 }, () => gw.gql('{ viewer { username } }', {}, from(address, carol))));
    expect(first.map((r) => r.status)).toEqual(Array(20).fill(200));
    expect(passwordChecks - atFirst).toBe(1);
    const before = passwordChecks;
    for (let i = 0; i < 20; i++) expect((await gw.gql('{ viewer { username } }', {}, from(address, carol))).status).toBe(200);
    // both stores tell a process when another changed a user (SQLite's data version, PostgreSQL's
    // key_changes), so a verified sign-in is kept on either (README, "Security")
    expect(passwordChecks - before).toBe(0);
    // a new key for carol: what vouched for her password is dropped
    await gw.gql('mutation { createApiKey(input: { name: "second-hostile" }) { id } }', {}, from(address, carol));
    const afterChange = passwordChecks;
    expect((await gw.gql('{ viewer { username } }', {}, from(address, carol))).status).toBe(200);
    expect((await gw.gql('{ viewer { username } }', {}, from(address, carol))).status).toBe(200);
    expect(passwordChecks - afterChange).toBe(1);
    // a wrong password is never taken for a verified one
    const wrong = await gw.gql('{ viewer { username } }', {}, from(address, basicAuthorization('carol', 'carol-passwordX')));
    expect(wrong.status).toBe(401);
  });

  it('answers a user name with a NUL 401 and counts it as a guess, on either store (PostgreSQL answered 500)', async () => {
    const nul = `Basic ${Buffer.from('car\u0000ol:carol-password').toString('base64')}`;
    const domain = `Basic ${Buffer.from('carol@d\u0000:carol-password').toString('base64')}`;
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await gw.gql('{ viewer { username } }', {}, from('10.9.8.1', i % 2 === 0 ? nul : domain))).status);
    // AUTH_FAILURES_PER_MINUTE is 5 here: the sixth is refused before anything is looked up
    expect(statuses).toEqual([401, 401, 401, 401, 401, 429]);
    const rest = await fetch(`${gw.url}/api/v1/apikey`, { headers: { ...from('10.9.8.2', nul) } });
    expect(rest.status).toBe(401);
  });

  it('answers a request without credentials that sends a persisted query, and registers nothing for it', async () => {
    const query = '{ viewer { username } anonymousPersisted: __typename }';
    const hash = createHash('sha256').update(query).digest('hex');
    const persisted = { version: 1, sha256Hash: hash };
    type Answer = { data?: unknown; errors?: { extensions: { code: string } }[] };
    const post = async (body: object, authorization?: string): Promise<[number, Answer]> => {
      const response = await fetch(`${gw.url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json', ...from('10.9.7.1', authorization) }, body: JSON.stringify(body) });
      return [response.status, (await response.json()) as Answer];
    };
    const get = async (params: Record<string, string>): Promise<[number, Answer]> => {
      const response = await fetch(`${gw.url}/graphql?${new URLSearchParams(params).toString()}`, { headers: { 'apollo-require-preflight': 'true', ...from('10.9.7.1') } });
      return [response.status, (await response.json()) as Answer];
    };
    const data = { viewer: null, anonymousPersisted: 'Query' };
    // the query with its hash, as Apollo's persisted-query link resends it: answered, not kept
    expect(await post({ query, extensions: { persistedQuery: persisted } })).toEqual([200, { data }]);
    expect(await get({ query, extensions: JSON.stringify({ persistedQuery: persisted }) })).toEqual([200, { data }]);
    const notFound = await post({ extensions: { persistedQuery: persisted } });
    expect([notFound[0], notFound[1].errors?.[0]?.extensions.code]).toEqual([200, 'PERSISTED_QUERY_NOT_FOUND']);
    // one a signed-in client registered is read by hash alone, anonymous or not
    expect((await post({ query, extensions: { persistedQuery: persisted } }, key))[0]).toBe(200);
    expect(await post({ extensions: { persistedQuery: persisted } })).toEqual([200, { data }]);
    expect(await get({ extensions: JSON.stringify({ persistedQuery: persisted }) })).toEqual([200, { data }]);
    // a wrong hash, or a version Apollo does not take, is refused as it is for anyone: nothing kept
    const other = '{ viewer { username } wrongHash: __typename }';
    for (const extension of [{ version: 1, sha256Hash: 'f'.repeat(64) }, { version: 2, sha256Hash: createHash('sha256').update(other).digest('hex') }]) {
      const [status, answer] = await post({ query: other, extensions: { persistedQuery: extension } });
      expect([status, answer.data]).toEqual([400, undefined]);
      const [getStatus] = await get({ query: other, extensions: JSON.stringify({ persistedQuery: extension }) });
      expect(getStatus).toBe(400);
    }
  });
});

describe('per-user rate limits', () => {
  it('limits a user over all their keys: more keys buy no more requests', async () => {
    const opened = await storeKinds[0]!.open();
    const gw = await startTestGateway(await embeddedWithUsers(opened.store), {
      RATE_LIMIT_RPS: '1',
      RATE_LIMIT_BURST: '100',
      RATE_LIMIT_USER_RPS: '1',
      RATE_LIMIT_USER_BURST: '12',
      AUTH_FAILURES_PER_MINUTE: '0',
    });
    try {
      const keys: string[] = [];
      for (let i = 0; i < 3; i++) {
        const created = await gw.gql<{ createApiKey: { key: string } }>(
          `mutation { createApiKey(input: { name: "many-${i}" }) { key } }`,
          {},
          { authorization: basicAuthorization('alice', 'alice-password') },
        );
        keys.push(created.body.data!.createApiKey.key);
      }
      // 3 requests spent above; 12 in all, whichever keys they come with
      const statuses: number[] = [];
      for (let i = 0; i < 12; i++) statuses.push((await gw.gql('{ viewer { username } }', {}, { authorization: keys[i % 3]! })).status);
      expect(statuses.filter((s) => s === 200)).toHaveLength(9);
      expect(statuses.slice(9)).toEqual([429, 429, 429]);
      // another user is not affected
      expect((await gw.gql('{ viewer { username } }', {}, { authorization: basicAuthorization('root', 'root-password') })).status).toBe(200);
    } finally {
      await gw.stop();
      await opened.dispose();
    }
  });
});

describe('client addresses behind a trusted proxy', () => {
  const request = (peer: string, forwarded?: string) =>
    ({ socket: { remoteAddress: peer }, headers: forwarded === undefined ? {} : { 'x-forwarded-for': forwarded } }) as never;

  it('takes X-Forwarded-For only from a named proxy, read from the right past trusted hops', () => {
    const none = new ClientAddresses();
    expect(none.of(request('10.0.0.5', '1.2.3.4'))).toBe('10.0.0.5');
    const behind = new ClientAddresses(['10.0.0.0/8', '::1']);
    expect(behind.of(request('10.0.0.5', '1.2.3.4'))).toBe('1.2.3.4');
    // what the client wrote itself stands to the left of what its proxy added
    expect(behind.of(request('10.0.0.5', '6.6.6.6, 1.2.3.4'))).toBe('1.2.3.4');
    expect(behind.of(request('::ffff:10.0.0.5', '6.6.6.6, 1.2.3.4, 10.1.1.1'))).toBe('1.2.3.4');
    // a peer that is no trusted proxy chooses nothing
    expect(behind.of(request('8.8.8.8', '1.2.3.4'))).toBe('8.8.8.8');
    expect(behind.of(request('::1'))).toBe('::1');
    expect(behind.of(request('10.0.0.5', 'not-an-address'))).toBe('10.0.0.5');
    // a hop some proxies write with a port or brackets is still the client (the third probe:
    // each counted as the proxy, one bucket for every client behind it)
    expect(behind.of(request('10.0.0.5', '1.2.3.4:5678'))).toBe('1.2.3.4');
    expect(behind.of(request('10.0.0.5', '[2001:db8:1:2::5]'))).toBe('2001:db8:1:2::5');
    expect(behind.of(request('10.0.0.5', '[2001:db8:1:2::5]:443'))).toBe('2001:db8:1:2::5');
    expect(behind.of(request('10.0.0.5', '2001:db8:1:2::5'))).toBe('2001:db8:1:2::5');
    expect(behind.of(request('10.0.0.5', '[2001:db8::5'))).toBe('10.0.0.5');
  });

  it('names an IPv4 client the same whether it came directly (a dual-stack listener maps it) or through a proxy', () => {
    // the probe: failures sent through a trusted proxy counted under 1.2.3.4, and the same
    // client's next guess, sent directly, under ::ffff:1.2.3.4: a fresh budget
    for (const addresses of [new ClientAddresses(), new ClientAddresses(['10.0.0.0/8'])]) {
      expect(addresses.of(request('::ffff:1.2.3.4'))).toBe('1.2.3.4');
      expect(addresses.of(request('::ffff:10.0.0.5', 'not-an-address'))).toBe('10.0.0.5');
      expect(addresses.of(request('2001:db8::1'))).toBe('2001:db8::1');
    }
    expect(new ClientAddresses(['10.0.0.0/8']).of(request('::ffff:10.0.0.5', '::ffff:1.2.3.4'))).toBe('1.2.3.4');
  });

  it('keeps limits by network: an IPv6 address by its /64 however written, a mapped IPv4 address as IPv4', () => {
    // the second probe: 2001:DB8::1, 2001:db8:0:0::1 and the address one past it were three fresh
    // budgets, and ::ffff:a01:101 another than 10.1.1.1
    for (const spelling of ['2001:db8::1', '2001:DB8::1', '2001:db8:0:0::1', '2001:0db8:0000:0000:0000:0000:0000:0002', '2001:db8::abcd:1', 'fe80::1%eth0'.replace('fe80', '2001:db8')]) {
      expect([spelling, clientNetwork(spelling)]).toEqual([spelling, '2001:db8:0:0::/64']);
    }
    expect(clientNetwork('2001:db8:1:2:3:4:5:6')).toBe('2001:db8:1:2::/64');
    for (const spelling of ['::ffff:a01:101', '0:0:0:0:0:ffff:10.1.1.1', '::FFFF:10.1.1.1', '10.1.1.1']) expect(clientNetwork(spelling)).toBe('10.1.1.1');
    expect(clientNetwork('unknown')).toBe('unknown');
    expect(principalBucket(null, '2001:db8::1')).toBe(principalBucket(null, '2001:db8::ffff:2'));
    expect(principalBucket(null, '2001:db8::1')).not.toBe(principalBucket(null, '2001:db8:0:1::1'));
  });

  it('refuses a TRUST_PROXY that is not a list of addresses, in one line naming it', () => {
    expect(() => loadConfig({ TRUST_PROXY: '10.0.0.1, proxy.example' })).toThrow(/TRUST_PROXY must list IP addresses or CIDR blocks, got "proxy.example"/);
    expect(loadConfig({ TRUST_PROXY: '10.0.0.0/8, ::1' }).trustProxy).toEqual(['10.0.0.0/8', '::1']);
    // an IPv4-mapped block counts the 96 bits before its IPv4 address (the probe: /128 crashed the
    // start with node's own message, /8 was taken as 10.0.0.0/8)
    expect(() => loadConfig({ TRUST_PROXY: '::ffff:10.0.0.0/8' })).toThrow(/TRUST_PROXY must list IP addresses or CIDR blocks, got "::ffff:10.0.0.0\/8"/);
    const mapped = new ClientAddresses(loadConfig({ TRUST_PROXY: '::ffff:10.0.0.0/104, ::FFFF:127.0.0.1/128' }).trustProxy);
    expect(mapped.of(request('10.200.0.1', '1.2.3.4'))).toBe('1.2.3.4');
    expect(mapped.of(request('::ffff:127.0.0.1', '1.2.3.4'))).toBe('1.2.3.4');
    expect(mapped.of(request('11.0.0.1', '1.2.3.4'))).toBe('11.0.0.1');
  });
});
