import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseItemRecord } from '../../../src/model/itemRecord.js';
import { createRestBackend } from '../../../src/backends/rest/index.js';
import type { RestBackend } from '../../../src/backends/rest/index.js';
import type { KeyService, PrincipalModel } from '../../../src/ports/backend.js';
import { GatewayError } from '../../../src/errors.js';
import { FakeKeyService, FakeRecsService, mountRest } from '../../rest/helpers.js';
import type { TestServer } from '../../rest/helpers.js';

/**
 * The REST client talking to the serving handlers over HTTP must give what the services behind
 * give when called directly: same models, same error codes.
 */
let keys: FakeKeyService;
let recs: FakeRecsService;
let server: TestServer;
let rest: RestBackend;

beforeAll(async () => {
  keys = new FakeKeyService();
  recs = new FakeRecsService(parseItemRecord);
  server = await mountRest(keys, recs);
  const root = await keys.authenticate(keys.basic('root'));
  const gatewayKey = await keys.createKey(root, { name: 'gateway' });
  rest = createRestBackend({ apiKeyServiceUrl: server.url, recsServiceUrl: server.url, recsApiKey: gatewayKey.key, authCacheTtlMs: 0 });
});
afterAll(async () => {
  await rest.close();
  await server.close();
});

async function outcome<T>(promise: Promise<T>): Promise<{ value: T } | { code: string; field: string | undefined }> {
  try {
    return { value: await promise };
  } catch (error) {
    if (!(error instanceof GatewayError)) throw error;
    return { code: error.code, field: error.field };
  }
}

/** Runs the same operation against the fake directly and through REST. */
async function both<T>(run: (service: KeyService, principal: PrincipalModel) => Promise<T>, user = 'alice') {
  const direct = await outcome(keys.authenticate(keys.basic(user)).then((p) => run(keys, p)));
  const viaRest = await outcome(rest.keys.authenticate(keys.basic(user)).then((p) => run(rest.keys, p)));
  return { direct, viaRest };
}

describe('keys, directly and over REST', () => {
  it('creates a key for the caller, described the same way', async () => {
    const created = await rest.keys.createKey(await rest.keys.authenticate(keys.basic('alice')), { name: 'from-rest' });
    const stored = (await keys.listKeys(await keys.authenticate(keys.basic('alice')))).find((k) => k.id === created.id);
    expect(created.apiKey).toEqual(stored);
    expect(created.key).toMatch(/^[A-Za-z0-9+/]{22}$/);
  });

  it('lists the same models', async () => {
    const { direct, viaRest } = await both((service, p) => service.listKeys(p));
    expect(viaRest).toEqual(direct);
    expect('value' in direct && direct.value.length).toBeGreaterThan(0);
  });

  it('authenticates a key to the same user', async () => {
    const alice = await keys.authenticate(keys.basic('alice'));
    const { key } = await keys.createKey(alice, { name: 'for-auth' });
    const direct = await keys.authenticate(key);
    const viaRest = await rest.keys.authenticate(`Bearer ${key}`);
    expect(viaRest.user.id).toBe(direct.user.id);
    expect(viaRest.authenticatedBy).toBe(direct.authenticatedBy);
  });

  it.each([
    ['bad credentials', 'UNAUTHENTICATED', () => `Basic ${Buffer.from('alice:wrong').toString('base64')}`],
    ['an unknown key', 'UNAUTHENTICATED', () => 'AAECAwQFBgcICQoLDA0ODw'],
    ['a malformed header', 'UNAUTHENTICATED', () => 'Token x y'],
  ])('refuses %s alike', async (_label, code, header) => {
    expect(await outcome(keys.authenticate(header()))).toMatchObject({ code });
    expect(await outcome(rest.keys.authenticate(header()))).toMatchObject({ code });
  });

  it.each([
    ['a bad name', { name: 'x' }, 'BAD_USER_INPUT', 'name'],
    ['another user\'s key, for a non-administrator', { username: 'bob', userDomain: 'corp' }, 'FORBIDDEN', undefined],
  ])('refuses to create %s alike', async (_label, input, code, field) => {
    const { direct, viaRest } = await both((service, p) => service.createKey(p, input));
    expect(direct).toEqual({ code, field });
    expect(viaRest).toEqual(direct);
  });

  it('refuses a duplicate name alike', async () => {
    await keys.createKey(await keys.authenticate(keys.basic('alice')), { name: 'taken' });
    const { direct, viaRest } = await both((service, p) => service.createKey(p, { name: 'taken' }));
    expect(direct).toEqual({ code: 'BAD_USER_INPUT', field: 'name' });
    expect(viaRest).toEqual(direct);
  });

  it('answers an unknown id and another user\'s key alike: NOT_FOUND', async () => {
    const bobs = await keys.createKey(await keys.authenticate(keys.basic('bob')), { name: 'bobs' });
    for (const id of ['00000000-0000-4000-8000-000000000000', bobs.id]) {
      const { direct, viaRest } = await both((service, p) => service.deleteKey(p, id));
      expect(direct).toMatchObject({ code: 'NOT_FOUND' });
      expect(viaRest).toEqual(direct);
    }
  });

  it('deletes over REST, and the key stops working', async () => {
    const alice = await rest.keys.authenticate(keys.basic('alice'));
    const { id, key } = await rest.keys.createKey(alice, { name: 'short-lived' });
    expect((await rest.keys.authenticate(key)).user.id).toBe(alice.user.id);
    await rest.keys.deleteKey(alice, id);
    expect(await outcome(rest.keys.authenticate(key))).toMatchObject({ code: 'UNAUTHENTICATED' });
    expect(await outcome(keys.authenticate(key))).toMatchObject({ code: 'UNAUTHENTICATED' });
  });
});

describe('recommendations, directly and over REST', () => {
  it('gets the same items, null for the unknown, across several calls of 20', async () => {
    const ids = [3, 999, 1, ...Array.from({ length: 40 }, (_, i) => 40 - i), 12345];
    expect(await rest.recs.getItems(ids)).toEqual(await recs.getItems(ids));
  });

  it.each(['POST_BROWSE', 'NEXT_BEST_PRODUCT'] as const)('recommends the same items in the same order (%s)', async (kind) => {
    const direct = await recs.recommend(kind, 1);
    const viaRest = await rest.recs.recommend(kind, 1);
    expect(viaRest.entries.map((e) => [e.rank, e.itemId])).toEqual(direct.entries.map((e) => [e.rank, e.itemId]));
    expect(viaRest.items).toEqual(await recs.getItems(direct.entries.map((e) => e.itemId)));
    expect(viaRest.entries.every((e) => e.source === 'UPSTREAM' && e.score === null)).toBe(true);
  });

  it('gives an empty list and NOT_FOUND alike', async () => {
    expect((await rest.recs.recommend('NEXT_BEST_PRODUCT', 20)).entries).toEqual((await recs.recommend('NEXT_BEST_PRODUCT', 20)).entries);
    expect(await outcome(rest.recs.recommend('POST_BROWSE', 999))).toMatchObject({ code: 'NOT_FOUND' });
    expect(await outcome(recs.recommend('POST_BROWSE', 999))).toMatchObject({ code: 'NOT_FOUND' });
  });

  it('reports a refused gateway key as UPSTREAM_REJECTED', async () => {
    const other = createRestBackend({ apiKeyServiceUrl: server.url, recsServiceUrl: server.url, recsApiKey: 'AAECAwQFBgcICQoLDA0ODw' });
    try {
      expect(await outcome(other.recs.recommend('POST_BROWSE', 1))).toMatchObject({ code: 'UPSTREAM_REJECTED' });
      expect(await outcome(other.recs.getItems([1]))).toMatchObject({ code: 'UPSTREAM_REJECTED' });
    } finally {
      await other.close();
    }
  });
});
