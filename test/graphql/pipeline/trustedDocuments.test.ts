import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { match } from '../../helpers/matchers.js';
import { basicAuthorization } from '../../../src/auth/authorization.js';
import { MemoryCache } from '../../../src/cache/memory.js';
import { ConfigError, loadConfig } from '../../../src/config/env.js';
import { createGateway, type Gateway } from '../../../src/http/server.js';
import { embeddedWithUsers } from '../../helpers/gateway.js';
import { NO_RATE_LIMITS } from '../../helpers/processes.js';
import { storeKinds, tempDir } from '../../helpers/stores.js';

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

const ITEM = 'query Item($itemId: ItemId!) { item(itemId: $itemId) { itemId name productRecommendations(first: 2) { itemId } } }';
const VIEWER = 'query Viewer { viewer { username authenticatedBy } }';
const CREATE_KEY = 'mutation CreateKey { createApiKey(input: {}) { key } }';
const UNLISTED = '{ item(itemId: 31000005) { name } }';
const PHONE = 31000005;

/** The manifest @apollo/generate-persisted-query-manifest writes. */
const manifest = {
  format: 'apollo-persisted-query-manifest',
  version: 1,
  operations: [
    { id: sha256(ITEM), name: 'Item', type: 'query', body: ITEM },
    { id: sha256(VIEWER), name: 'Viewer', type: 'query', body: VIEWER },
    { id: sha256(CREATE_KEY), name: 'CreateKey', type: 'mutation', body: CREATE_KEY },
  ],
};

const persisted = (query: string) => ({ persistedQuery: { version: 1, sha256Hash: sha256(query) } });

interface Started {
  url: string;
  gateway: Gateway;
  /** The keys the gateway read from and wrote to its shared cache. */
  cacheKeys: string[];
  key: string;
  /** POSTs `body` with the API key, or without credentials when `as` is 'stranger'. */
  post(body: unknown, as?: 'key' | 'stranger'): Promise<{ status: number; headers: Headers; body: { data?: unknown; errors?: { message: string; extensions?: { code?: string } }[] } }>;
}

/** For a describe block: a gateway with the manifest and `env`, its own in-process cache, and an API key. */
function useGateway(env: () => Record<string, string>): Started {
  const started = {} as Started;
  let gateway: Gateway | undefined;
  let dispose: (() => Promise<void>) | undefined;
  beforeAll(async () => {
    const opened = await storeKinds[0]!.open();
    dispose = opened.dispose;
    const cache = new MemoryCache();
    started.cacheKeys = [];
    const [getMany, setMany] = [cache.getMany.bind(cache), cache.setMany.bind(cache)];
    cache.getMany = (keys) => (started.cacheKeys.push(...keys), getMany(keys));
    cache.setMany = (entries) => (started.cacheKeys.push(...entries.map((entry) => entry.key)), setMany(entries));
    gateway = await createGateway({
      config: loadConfig({ DATA_DIR: '/nonexistent', ...NO_RATE_LIMITS, ...env() }),
      backend: await embeddedWithUsers(opened.store),
      cache,
    });
    started.gateway = gateway;
    started.url = await gateway.listen(0, '127.0.0.1');
    started.key = basicAuthorization('alice', 'alice-password');
    started.post = async (body, as = 'key') => {
      const response = await fetch(`${started.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(as === 'key' ? { authorization: started.key } : {}) },
        body: JSON.stringify(body),
      });
      return { status: response.status, headers: response.headers, body: (await response.json()) as never };
    };
    // listed, so that it runs where only listed operations do
    const created = await started.post({ query: CREATE_KEY });
    started.key = (created.body.data as { createApiKey: { key: string } }).createApiKey.key;
  });
  afterAll(async () => {
    await gateway?.stop();
    await dispose?.();
  });
  return started;
}

describe('trusted documents', () => {
  const dir = tempDir();
  const manifestPath = path.join(dir.dir, 'persisted-query-manifest.json');
  writeFileSync(manifestPath, JSON.stringify(manifest));
  afterAll(() => dir.remove());

  describe('TRUSTED_DOCUMENTS alone', () => {
    const gw = useGateway(() => ({ TRUSTED_DOCUMENTS: manifestPath }));

    it('runs a listed operation sent as its hash alone, as if its body had been sent, on either GraphQL path', async () => {
      const full = await gw.post({ query: ITEM, variables: { itemId: PHONE } });
      expect(full.body.errors).toBeUndefined();
      const prepared = gw.gateway.takeoverStats!.answered;
      // Apollo answers a document the first time; the takeover answers it after that
      for (const itemId of [PHONE, 31000028, 31000019]) {
        const byHash = await gw.post({ operationName: 'Item', variables: { itemId }, extensions: persisted(ITEM) });
        expect(byHash.status).toBe(200);
        expect((byHash.body.data as { item: { itemId: number } }).item.itemId).toBe(itemId);
        expect(byHash.body).toEqual((await gw.post({ query: ITEM, variables: { itemId } })).body);
      }
      expect(gw.gateway.takeoverStats!.answered).toBeGreaterThan(prepared);
    });

    it('runs it from a GET with the hash in extensions', async () => {
      const params = new URLSearchParams({ variables: JSON.stringify({ itemId: PHONE }), extensions: JSON.stringify(persisted(ITEM)) });
      const response = await fetch(`${gw.url}/graphql?${params.toString()}`, { headers: { authorization: gw.key, 'apollo-require-preflight': 'true' } });
      expect(response.status).toBe(200);
      const body = (await response.json()) as { data: { item: { itemId: number; name: string } } };
      expect(body.data.item.itemId).toBe(PHONE);
      expect(body.data.item.name).toMatch(/Smartphone/);
    });

    it('leaves Apollo\'s persisted queries alone: a listed hash is neither looked up nor registered; an unlisted one works as before', async () => {
      const touched = (query: string) => gw.cacheKeys.filter((key) => key.includes(sha256(query)));
      expect((await gw.post({ query: VIEWER, extensions: persisted(VIEWER) })).body.data).toEqual({ viewer: { username: 'alice', authenticatedBy: 'API_KEY' } });
      expect((await gw.post({ extensions: persisted(VIEWER) })).body.data).toEqual({ viewer: { username: 'alice', authenticatedBy: 'API_KEY' } });
      expect(touched(VIEWER)).toEqual([]);

      const other = '{ viewer { isAdmin } }';
      const unknown = await gw.post({ extensions: persisted(other) });
      expect(unknown.body.errors?.[0]?.extensions?.code).toBe('PERSISTED_QUERY_NOT_FOUND');
      const registered = await gw.post({ query: other, extensions: persisted(other) });
      expect(registered.body.data).toEqual({ viewer: { isAdmin: false } });
      expect(touched(other).length).toBeGreaterThanOrEqual(2);
      expect((await gw.post({ extensions: persisted(other) })).body.data).toEqual({ viewer: { isAdmin: false } });
    });

    it('runs operations that are not listed', async () => {
      const response = await gw.post({ query: UNLISTED });
      expect(response.body.errors).toBeUndefined();
    });

    it('gives a stranger a listed operation by hash as it would its body: viewer is null', async () => {
      const response = await gw.post({ extensions: persisted(VIEWER) }, 'stranger');
      expect(response.status).toBe(200);
      expect(response.body).toEqual({ data: { viewer: null } });
    });
  });

  describe('TRUSTED_DOCUMENTS_ONLY=true', () => {
    const gw = useGateway(() => ({ TRUSTED_DOCUMENTS: manifestPath, TRUSTED_DOCUMENTS_ONLY: 'true' }));

    it('runs a listed operation by hash, and by a body identical to the listed one', async () => {
      const byHash = await gw.post({ variables: { itemId: PHONE }, extensions: persisted(ITEM) });
      expect(byHash.body.errors).toBeUndefined();
      expect((byHash.body.data as { item: { itemId: number } }).item.itemId).toBe(PHONE);
      const byBody = await gw.post({ query: ITEM, variables: { itemId: PHONE } });
      expect(byBody.body).toEqual(byHash.body);
      const both = await gw.post({ query: VIEWER, extensions: persisted(VIEWER) });
      expect(both.body).toEqual({ data: { viewer: { username: 'alice', authenticatedBy: 'API_KEY' } } });
    });

    it('refuses any other operation with 400 PERSISTED_QUERY_NOT_IN_LIST, before parsing it', async () => {
      const refusals = [
        { query: UNLISTED },
        // the same operation as a listed one, written otherwise
        { query: VIEWER.replace('{ viewer', '{  viewer') },
        // not even GraphQL: refused for not being listed, never parsed
        { query: 'query {' },
        { extensions: persisted(UNLISTED) },
        // registering an automatic persisted query
        { query: UNLISTED, extensions: persisted(UNLISTED) },
      ];
      for (const body of refusals) {
        for (const as of ['key', 'stranger'] as const) {
          const response = await gw.post(body, as);
          expect(response.status).toBe(400);
          expect(response.body.errors).toEqual([{ message: match.stringMatching(/trusted documents/), extensions: { code: 'PERSISTED_QUERY_NOT_IN_LIST' } }]);
        }
      }
      const params = new URLSearchParams({ query: UNLISTED });
      const get = await fetch(`${gw.url}/graphql?${params.toString()}`, { headers: { authorization: gw.key, 'apollo-require-preflight': 'true' } });
      expect(get.status).toBe(400);
      expect(await get.json()).toMatchObject({ errors: [{ extensions: { code: 'PERSISTED_QUERY_NOT_IN_LIST' } }] });
    });

    it('refuses a listed operation written otherwise even while its answer is in the response cache', async () => {
      const listed = await gw.post({ query: ITEM, variables: { itemId: PHONE } });
      expect(listed.status).toBe(200);
      expect(listed.headers.get('cache-control')).toMatch(/public/);
      const again = await gw.post({ query: ITEM, variables: { itemId: PHONE } });
      expect(again.headers.get('age')).not.toBeNull();
      // the same operation up to ignored characters: the cache would have the answer, the list does not
      const variant = await gw.post({ query: ITEM.replace('{ item', '{   item'), variables: { itemId: PHONE } });
      expect(variant.status).toBe(400);
      expect(variant.body.errors?.[0]?.extensions?.code).toBe('PERSISTED_QUERY_NOT_IN_LIST');
    });

    it('still refuses a malformed request as before', async () => {
      const response = await gw.post({ variables: {} });
      expect(response.status).toBe(400);
      expect(response.body.errors?.[0]?.extensions?.code).toBe('BAD_REQUEST');
    });
  });

  describe('configuration', () => {
    const problem = (env: Record<string, string>): string => {
      try {
        loadConfig(env);
      } catch (error) {
        if (error instanceof ConfigError) return error.problems.join('\n');
        throw error;
      }
      throw new Error('no problem found');
    };
    const write = (name: string, content: string): string => {
      const file = path.join(dir.dir, name);
      writeFileSync(file, content);
      return file;
    };

    it('reads both formats: Apollo\'s manifest and GraphQL Code Generator\'s map of hash to body', () => {
      expect(loadConfig({ TRUSTED_DOCUMENTS: manifestPath }).trustedDocuments?.operations.size).toBe(3);
      const map = write('persisted-documents.json', JSON.stringify({ [sha256(VIEWER)]: VIEWER }));
      const config = loadConfig({ TRUSTED_DOCUMENTS: map, TRUSTED_DOCUMENTS_ONLY: 'true' });
      expect(config.trustedDocuments).toMatchObject({ only: true, path: map });
      expect(config.trustedDocuments!.operations.get(sha256(VIEWER))?.body).toBe(VIEWER);
      expect(loadConfig({}).trustedDocuments).toBeNull();
    });

    it('stops the start with one line naming the problem', () => {
      const cases: [Record<string, string>, RegExp][] = [
        [{ TRUSTED_DOCUMENTS: path.join(dir.dir, 'missing.json') }, /^TRUSTED_DOCUMENTS: cannot read .*missing\.json: ENOENT$/],
        [{ TRUSTED_DOCUMENTS: write('broken.json', '{"format": ') }, /^TRUSTED_DOCUMENTS: .*broken\.json is not JSON: /],
        [{ TRUSTED_DOCUMENTS: write('format.json', JSON.stringify({ ...manifest, format: 'relay' })) }, /format must be "apollo-persisted-query-manifest", got "relay"$/],
        [
          { TRUSTED_DOCUMENTS: write('id.json', JSON.stringify({ ...manifest, operations: [{ ...manifest.operations[0], id: sha256(VIEWER) }] })) },
          new RegExp(`operations\\[0\\] \\(Item\\): id "${sha256(VIEWER)}" is not the SHA-256 of its body \\(${sha256(ITEM)}\\)$`),
        ],
        [
          { TRUSTED_DOCUMENTS: write('syntax.json', JSON.stringify({ ...manifest, operations: [{ id: sha256('query {'), name: 'Bad', type: 'query', body: 'query {' }] })) },
          /operations\[0\] \(Bad\): body does not parse: Syntax Error: /,
        ],
        [{ TRUSTED_DOCUMENTS_ONLY: 'true' }, /^TRUSTED_DOCUMENTS_ONLY=true needs TRUSTED_DOCUMENTS/],
      ];
      for (const [env, expected] of cases) {
        const text = problem(env);
        expect(text).toMatch(expected);
        expect(text).not.toContain('\n');
      }
    });
  });
});
