import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuthorization } from '../../src/auth/authorization.js';
import { SqliteKeyStore } from '../../src/backends/embedded/keys/sqliteStore.js';
import { addUser } from '../../src/backends/embedded/keys/users.js';
import { gql, startServe, type ServeProcess } from '../helpers/processes.js';
import { TEST_COST, tempDir } from '../helpers/stores.js';

// Issue 18, finding 5: strangers' wrong keys sent through a REST-mode gateway must not lock every
// user out of the key service behind it (which sees one address: the gateway's). Two processes
// over real HTTP: an embedded gateway serving the REST interfaces, with the default failure
// limit, and a REST-mode gateway in front of it.

const ITEM = '{ item(itemId: 31000005) { itemId name productRecommendations(first: 2) { itemId } } }';
const strangerKey = (): string => randomBytes(16).toString('base64').slice(0, 22);

async function createKey(url: string, authorization: string, name: string): Promise<string> {
  const response = await fetch(`${url}/api/v1/apikey`, {
    method: 'POST',
    headers: { authorization, 'content-type': 'application/json' },
    body: JSON.stringify({ name }),
  });
  if (response.status !== 200) throw new Error(`create key: ${response.status} ${await response.text()}`);
  return ((await response.json()) as { key: string }).key;
}

describe.each([
  { name: 'the key service trusts the gateway as its proxy', upstreamTrusts: true },
  { name: 'the key service trusts nobody', upstreamTrusts: false },
])('strangers through a REST-mode gateway ($name)', ({ upstreamTrusts }) => {
  let upstream: ServeProcess;
  let gateway: ServeProcess;
  let removeDir: () => void;
  let aliceKey: string;
  /** A key of alice's that the gateway has not seen before the strangers come. */
  let freshKey: string;
  const alice = basicAuthorization('alice', 'alice-password');

  beforeAll(async () => {
    const { dir, remove } = tempDir('recs-lockout-');
    removeDir = remove;
    const store = new SqliteKeyStore(path.join(dir, 'keys.db'));
    await addUser(store, { username: 'alice', password: 'alice-password' }, TEST_COST);
    await addUser(store, { username: 'gateway', password: 'gateway-password' }, TEST_COST);
    await store.close();
    const limits = { AUTH_FAILURES_PER_MINUTE: '10', RATE_LIMIT_RPS: '1000', REDIS_URL: '' };
    upstream = await startServe({ DATA_DIR: dir, ...limits, ...(upstreamTrusts ? { TRUST_PROXY: '127.0.0.1' } : {}) });
    const gatewayKey = await createKey(upstream.url, basicAuthorization('gateway', 'gateway-password'), 'recs-gateway');
    aliceKey = await createKey(upstream.url, alice, 'laptop');
    freshKey = await createKey(upstream.url, alice, 'phone');
    gateway = await startServe({
      BACKEND: 'rest',
      APIKEY_SERVICE_URL: upstream.url,
      RECS_SERVICE_URL: upstream.url,
      RECS_API_KEY: gatewayKey,
      TRUST_PROXY: '127.0.0.1',
      ...limits,
    });
  }, 120_000);
  afterAll(async () => {
    await gateway?.stop();
    await upstream?.stop();
    removeDir?.();
  });

  it('eleven strangers with wrong keys lock out neither the gateway\'s own key nor a user\'s key', async () => {
    for (let i = 1; i <= 11; i++) {
      const answer = await gql(gateway.url, '{ viewer { username } }', {}, { authorization: strangerKey(), 'x-forwarded-for': `10.50.0.${i}` });
      // past ten, a key service that counts them all against the gateway answers the stranger 429
      expect(answer.status).toBe(i <= 10 || upstreamTrusts ? 401 : 429);
    }
    // the gateway's own key (RECS_API_KEY) still fetches items and recommendations
    const withKey = await gql(gateway.url, ITEM, {}, { authorization: aliceKey, 'x-forwarded-for': '10.50.1.1' });
    expect(withKey.status).toBe(200);
    expect(withKey.body.data?.item).toMatchObject({ itemId: 31000005 });
    // alice's key, never seen by this gateway before, from another address
    const viewer = await gql(gateway.url, '{ viewer { username } }', {}, { authorization: freshKey, 'x-forwarded-for': '10.50.1.2' });
    expect(viewer.status).toBe(200);
    // and a direct client of the key service, on the gateway's address, with a key
    const direct = await fetch(`${upstream.url}/api/v1/apikey`, { headers: { authorization: aliceKey } });
    expect(direct.status).toBe(200);
  });

  it(upstreamTrusts ? "counts each stranger's guesses against the stranger: passwords still sign in" : 'leaves password sign-ins locked on the gateway\'s address (the README says so)', async () => {
    const signIn = await gql(gateway.url, '{ viewer { username } }', {}, { authorization: alice, 'x-forwarded-for': '10.50.2.1' });
    expect(signIn.status).toBe(upstreamTrusts ? 200 : 429);
  });
});
