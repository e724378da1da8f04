import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { basicAuthorization } from '../../../../src/auth/authorization.js';
import { EmbeddedKeyService } from '../../../../src/backends/embedded/keys/keyService.js';
import type { KeyStore } from '../../../../src/backends/embedded/keys/store.js';
import { addUser } from '../../../../src/backends/embedded/keys/users.js';
import type { PrincipalModel } from '../../../../src/ports/backend.js';
import { GatewayError } from '../../../../src/errors.js';
import { storeKinds, TEST_COST } from '../../../helpers/stores.js';

/** The error code a promise rejects with (so a test states the code, not just "it failed"). */
async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof GatewayError) return error.code;
    throw error;
  }
  throw new Error('expected a rejection');
}

describe.each(storeKinds)('embedded key service on $name', (kind) => {
  let store: KeyStore;
  let dispose: () => Promise<void>;
  let now = Date.now();
  let keys: EmbeddedKeyService;
  let alice: PrincipalModel;
  let admin: PrincipalModel;

  beforeEach(async () => {
    ({ store, dispose } = await kind.open());
    now = Date.now();
    keys = new EmbeddedKeyService(store, { now: () => now, lastUsedResolutionMs: 60_000 });
    await addUser(store, { username: 'alice', password: 'alice-password' }, TEST_COST);
    await addUser(store, { username: 'bob', domain: 'corp.example', password: 'bob-password' }, TEST_COST);
    await addUser(store, { username: 'root', password: 'root-password', isAdmin: true }, TEST_COST);
    alice = await keys.authenticate(basicAuthorization('alice', 'alice-password'));
    admin = await keys.authenticate(basicAuthorization('root', 'root-password'));
  });
  afterEach(async () => {
    await dispose();
  });

  it('authenticates Basic with user@domain, a bare key and a Bearer key as the same user', async () => {
    const bob = await keys.authenticate(basicAuthorization('bob', 'bob-password', 'corp.example'));
    expect(bob.user).toMatchObject({ username: 'bob', domain: 'corp.example', isAdmin: false });
    expect(bob.authenticatedBy).toBe('PASSWORD');
    const created = await keys.createKey(bob, {});
    const byKey = await keys.authenticate(created.key);
    const byBearer = await keys.authenticate(`Bearer ${created.key}`);
    expect(byKey.user.id).toBe(bob.user.id);
    expect(byBearer).toMatchObject({ authenticatedBy: 'API_KEY', keyId: created.id, user: { id: bob.user.id } });
  });

  it.each([
    ['a wrong password', basicAuthorization('alice', 'wrong')],
    ['an unknown user', basicAuthorization('nobody', 'alice-password')],
    ['the right user in the wrong domain', basicAuthorization('bob', 'bob-password', 'other.example')],
    ['an unknown key', 'AAECAwQFBgcICQoLDA0ODw'],
    ['a malformed value', 'Bearer not*base64'],
  ])('refuses %s with UNAUTHENTICATED', async (_, header) => {
    expect(await codeOf(keys.authenticate(header))).toBe('UNAUTHENTICATED');
  });

  it('shows the key value once and stores only metadata', async () => {
    const created = await keys.createKey(alice, { name: 'laptop' });
    expect(created).toMatchObject({ ok: true, apiKey: { name: 'laptop', userId: alice.user.id, id: created.id } });
    expect(created.key).toMatch(/^[A-Za-z0-9+/]{22}$/);
    const listed = await keys.listKeys(alice);
    expect(listed).toHaveLength(1);
    expect(JSON.stringify(listed)).not.toContain(created.key);
  });

  it('names keys key#<n> after deletes and rejects names that break the rule', async () => {
    const k1 = await keys.createKey(alice, {});
    await keys.createKey(alice, {});
    await keys.deleteKey(alice, k1.id);
    expect((await keys.createKey(alice, {})).apiKey.name).toBe('key#3');
    for (const name of ['ab', '-starts-with-dash', 'has space', 'x'.repeat(129), 'key#7']) {
      await expect(keys.createKey(alice, { name })).rejects.toMatchObject({ code: 'BAD_USER_INPUT', field: 'name' });
    }
    await keys.createKey(alice, { name: 'dup' });
    await expect(keys.createKey(alice, { name: 'dup' })).rejects.toMatchObject({ code: 'BAD_USER_INPUT', field: 'name' });
    expect((await keys.listKeys(alice)).map((k) => k.name)).toEqual(['dup', 'key#2', 'key#3']);
  });

  it('lets only an administrator create, list and delete another user’s keys', async () => {
    expect(await codeOf(keys.createKey(alice, { username: 'bob', userDomain: 'corp.example' }))).toBe('FORBIDDEN');
    expect(await codeOf(keys.listKeys(alice, { username: 'bob', domain: 'corp.example' }))).toBe('FORBIDDEN');

    const forBob = await keys.createKey(admin, { username: 'bob', userDomain: 'corp.example', name: 'from-admin' });
    expect((await keys.listKeys(admin, { username: 'bob', domain: 'corp.example' })).map((k) => k.name)).toEqual([
      'from-admin',
    ]);
    // alice deleting bob's key is answered exactly like an unknown id
    const notYours = await keys.deleteKey(alice, forBob.id).catch((e: GatewayError) => e);
    const unknown = await keys.deleteKey(alice, '00000000-0000-4000-8000-000000000000').catch((e: GatewayError) => e);
    expect(notYours).toMatchObject({ code: 'NOT_FOUND', message: `API key not found: ${forBob.id}` });
    expect(unknown).toMatchObject({ code: 'NOT_FOUND', message: 'API key not found: 00000000-0000-4000-8000-000000000000' });
    await keys.deleteKey(admin, forBob.id);
    expect(await keys.listKeys(admin, { username: 'bob', domain: 'corp.example' })).toEqual([]);
  });

  it('answers an unknown username with BAD_USER_INPUT, a non-UUID id likewise', async () => {
    await expect(keys.createKey(admin, { username: 'ghost' })).rejects.toMatchObject({ code: 'BAD_USER_INPUT', field: 'username' });
    await expect(keys.deleteKey(alice, 'not-a-uuid')).rejects.toMatchObject({ code: 'BAD_USER_INPUT', field: 'id' });
  });

  it('creates for oneself when the username named is one’s own', async () => {
    const created = await keys.createKey(alice, { username: 'alice', name: 'own' });
    expect(created.apiKey.userId).toBe(alice.user.id);
  });

  it('stops a deleted key on the very next request', async () => {
    const created = await keys.createKey(alice, {});
    await keys.authenticate(created.key);
    await keys.deleteKey(alice, created.id);
    expect(await codeOf(keys.authenticate(created.key))).toBe('UNAUTHENTICATED');
  });

  it('expires a key after its days, and records when it was last used at most once a minute', async () => {
    const created = await keys.createKey(alice, { expiresInDays: 1 });
    expect(created.apiKey.expiresAt?.getTime()).toBe(now + 86_400_000);
    const lastUsed = async () => (await keys.listKeys(alice))[0]!.lastUsedAt?.getTime();
    await keys.authenticate(created.key);
    // the write is off the request's path: wait for it
    await expect.poll(lastUsed).toBe(now);
    const first = now;
    now += 30_000;
    await keys.authenticate(created.key);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await lastUsed()).toBe(first);
    now += 86_400_000;
    expect(await codeOf(keys.authenticate(created.key))).toBe('UNAUTHENTICATED');
    await expect(keys.createKey(alice, { expiresInDays: 0 })).rejects.toMatchObject({ field: 'expiresInDays' });
  });
});
