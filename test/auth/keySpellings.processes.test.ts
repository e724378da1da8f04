import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { match } from '../helpers/matchers.js';
import { basicAuthorization } from '../../src/auth/authorization.js';
import { openBackend } from '../../src/main.js';
import { MemoryCache } from '../../src/cache/memory.js';
import { loadConfig } from '../../src/config/env.js';
import { createGateway, type Gateway } from '../../src/http/server.js';
import { startCountingProxy, type CountingProxy } from '../helpers/countingProxy.js';
import { useEmbeddedGateway } from '../helpers/gateway.js';
import { NO_RATE_LIMITS } from '../helpers/processes.js';
import { startRestUpstream, type RestUpstream } from '../helpers/restUpstream.js';
import { storeKinds } from '../helpers/stores.js';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

/**
 * Every spelling that decodes to the key's 16 bytes: the last character's 4 unused bits take any
 * of 16 values, and the value may go unpadded, with `=` or with `==`. 48 in all, the key first.
 */
function spellingsOf(key: string): string[] {
  const stem = key.slice(0, 21);
  const high = ALPHABET.indexOf(key[21]!) & 0b110000;
  const spellings: string[] = [];
  for (const padding of ['', '=', '==']) {
    for (let low = 0; low < 16; low++) spellings.push(`${stem}${ALPHABET[high | low]}${padding}`);
  }
  return spellings;
}

const VIEWER = '{ viewer { username authenticatedBy } }';

/** The status each spelling gets, sent bare and after Bearer. */
async function statuses(url: string, key: string): Promise<Map<string, number[]>> {
  const seen = new Map<string, number[]>();
  for (const spelling of spellingsOf(key)) {
    const codes: number[] = [];
    for (const authorization of [spelling, `Bearer ${spelling}`]) {
      const response = await fetch(`${url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization },
        body: JSON.stringify({ query: VIEWER }),
      });
      const body = (await response.json()) as { data?: { viewer?: { authenticatedBy: string } | null } };
      // (a REST-mode gateway does not learn a key's username from the key service: only how it signed in)
      if (response.status === 200) expect(body.data?.viewer?.authenticatedBy).toBe('API_KEY');
      codes.push(response.status);
    }
    seen.set(spelling, codes);
  }
  return seen;
}

/** Only the key as made, and its `==` twin (Concord's Java decoder takes it), authenticate. */
function expectCanonicalOnly(seen: Map<string, number[]>, key: string): void {
  expect(seen.size).toBe(48);
  const accepted = [...seen].filter(([, codes]) => codes.every((c) => c === 200)).map(([s]) => s);
  expect(accepted.sort()).toEqual([key, `${key}==`].sort());
  for (const [spelling, codes] of seen) {
    if (!accepted.includes(spelling)) expect(codes, spelling).toEqual([401, 401]);
  }
}

describe('a key has one spelling (and its padded twin)', () => {
  it('spellingsOf gives 48 distinct values that all decode to the same bytes', () => {
    const key = 'AAECAwQFBgcICQoLDA0ODw';
    const all = spellingsOf(key);
    expect(new Set(all).size).toBe(48);
    for (const spelling of all) expect(Buffer.from(spelling, 'base64')).toEqual(Buffer.from(key, 'base64'));
  });

  describe('embedded backend', () => {
    const gw = useEmbeddedGateway(storeKinds[0]!);
    let key: string;

    beforeAll(async () => {
      const created = await gw.gql<{ createApiKey: { key: string } }>(
        'mutation { createApiKey(input: { name: "spelt" }) { key } }',
        {},
        { authorization: basicAuthorization('alice', 'alice-password') },
      );
      key = created.body.data!.createApiKey.key;
    });

    it('authenticates the 22-character key and its == twin, and answers 401 to the other 46 spellings', async () => {
      expect(key).toMatch(/^[A-Za-z0-9+/]{21}[AQgw]$/);
      expectCanonicalOnly(await statuses(gw.url, key), key);
    });

    it('the served key interface refuses a non-canonical spelling with its 401', async () => {
      const wrong = spellingsOf(key).find((s) => s !== key && !s.endsWith('='))!;
      const refused = await fetch(`${gw.url}/api/v1/apikey`, { headers: { authorization: wrong } });
      expect(refused.status).toBe(401);
      expect(await refused.json()).toEqual([{ id: '*', message: match.any(String) }]);
      const listed = await fetch(`${gw.url}/api/v1/apikey`, { headers: { authorization: key } });
      expect(listed.status).toBe(200);
    });
  });

  describe('REST backend: refused before anything is forwarded', () => {
    let upstream: RestUpstream;
    let proxy: CountingProxy;
    let gateway: Gateway;
    let url: string;
    let key: string;

    beforeAll(async () => {
      upstream = await startRestUpstream([{ username: 'alice', password: 'alice-password' }]);
      proxy = await startCountingProxy(upstream.url);
      const config = loadConfig({
        ...NO_RATE_LIMITS,
        BACKEND: 'rest',
        APIKEY_SERVICE_URL: proxy.url,
        RECS_SERVICE_URL: upstream.url,
        RECS_API_KEY: upstream.recsApiKey,
      });
      const cache = new MemoryCache();
      gateway = await createGateway({ config, backend: await openBackend(config, { cache }), cache });
      url = await gateway.listen(0, '127.0.0.1');
      const created = await fetch(`${upstream.url}/api/v1/apikey`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: basicAuthorization('alice', 'alice-password') },
        body: JSON.stringify({ username: 'alice', name: 'spelt' }),
      });
      key = ((await created.json()) as { key: string }).key;
    }, 60_000);
    afterAll(async () => {
      await gateway?.stop().catch(() => undefined);
      await proxy?.close();
      await upstream?.stop();
    });

    it('forwards no non-canonical spelling to the key service, and the canonical two authenticate', async () => {
      const bad = spellingsOf(key).filter((s) => s !== key && s !== `${key}==`);
      for (const spelling of bad) {
        const response = await fetch(`${url}/graphql`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: spelling },
          body: JSON.stringify({ query: VIEWER }),
        });
        expect(response.status, spelling).toBe(401);
        await response.arrayBuffer();
      }
      expect(proxy.requests).toEqual([]);
      expectCanonicalOnly(await statuses(url, key), key);
    });
  });
});
