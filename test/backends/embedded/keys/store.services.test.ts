import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { KeyNameTakenError, UserExistsError, type KeyStore } from '../../../../src/backends/embedded/keys/store.js';
import { storeKinds } from '../../../helpers/stores.js';

// One suite, every store: SQLite and PostgreSQL must behave the same.
describe.each(storeKinds)('key store: $name', (kind) => {
  let store: KeyStore;
  let dispose: () => Promise<void>;

  beforeEach(async () => {
    ({ store, dispose } = await kind.open());
  });
  afterEach(async () => {
    await dispose();
  });

  const user = (username: string, domain: string | null = null) =>
    store.createUser({ username, domain, passwordHash: 'scrypt$x', isAdmin: false });
  let n = 0;
  const hash = () => `hash-${++n}-${Math.random()}`;

  it('keeps users unique per username and domain', async () => {
    const a = await user('alice');
    const b = await user('alice', 'corp');
    expect(a.id).not.toBe(b.id);
    await expect(user('alice')).rejects.toBeInstanceOf(UserExistsError);
    expect((await store.findUser('alice', 'corp'))?.id).toBe(b.id);
    expect((await store.findUser('alice', null))?.domain).toBeNull();
    expect(await store.findUser('alice', 'other')).toBeNull();
    expect(await store.countUsers()).toBe(2);
  });

  it('lists users in byte order, changes a password hash, and removes a user with its keys', async () => {
    const [zed, amy] = [await user('zed'), await user('amy', 'corp')];
    await user('Bea');
    expect((await store.listUsers()).map((u) => u.username)).toEqual(['Bea', 'amy', 'zed']);
    expect(await store.setPasswordHash(amy.id, 'scrypt$new')).toBe(true);
    expect((await store.findUser('amy', 'corp'))?.passwordHash).toBe('scrypt$new');
    const keyHash = hash();
    await store.createKey({ userId: zed.id, name: 'one', hash: keyHash, expiresAt: null });
    await store.createKey({ userId: zed.id, name: 'two', hash: hash(), expiresAt: null });
    expect(await store.deleteUser(zed.id)).toBe(2);
    expect(await store.findKeyByHash(keyHash)).toBeNull();
    expect(await store.deleteUser(zed.id)).toBeNull();
    expect(await store.setPasswordHash(zed.id, 'scrypt$x')).toBe(false);
    expect(await store.countUsers()).toBe(2);
  });

  it('names default keys one more than the highest key#<n>, also after deletes', async () => {
    const u = await user('bob');
    const k1 = await store.createKey({ userId: u.id, name: null, hash: hash(), expiresAt: null });
    const k2 = await store.createKey({ userId: u.id, name: null, hash: hash(), expiresAt: null });
    expect([k1.name, k2.name]).toEqual(['key#1', 'key#2']);
    expect(await store.deleteKey(k1.id, u.id)).toBe(true);
    // key#<count+1> would be key#2 again here, and clash
    expect((await store.createKey({ userId: u.id, name: null, hash: hash(), expiresAt: null })).name).toBe('key#3');
  });

  it('refuses a second key of the same name for one user, not for another', async () => {
    const a = await user('carol');
    const b = await user('dave');
    await store.createKey({ userId: a.id, name: 'ci', hash: hash(), expiresAt: null });
    await expect(store.createKey({ userId: a.id, name: 'ci', hash: hash(), expiresAt: null })).rejects.toBeInstanceOf(
      KeyNameTakenError,
    );
    await expect(store.createKey({ userId: b.id, name: 'ci', hash: hash(), expiresAt: null })).resolves.toMatchObject({
      name: 'ci',
    });
    expect((await store.listKeys(a.id)).map((k) => k.name)).toEqual(['ci']);
  });

  it('lists a user’s keys by name in byte order, metadata only', async () => {
    const u = await user('erin');
    for (const name of ['beta', 'Alpha', 'alpha', 'key#9', 'key#10']) {
      await store.createKey({ userId: u.id, name, hash: hash(), expiresAt: null });
    }
    const keys = await store.listKeys(u.id);
    expect(keys.map((k) => k.name)).toEqual(['Alpha', 'alpha', 'beta', 'key#10', 'key#9']);
    expect(Object.keys(keys[0]!).sort()).toEqual(['createdAt', 'dailyQuota', 'expiresAt', 'id', 'lastUsedAt', 'name', 'rateLimitPerSecond', 'scopes', 'userId']);
  });

  it('finds a key by hash with its owner, and forgets it once deleted', async () => {
    const u = await user('frank', 'corp');
    const expiresAt = new Date(Date.now() + 86_400_000);
    const k = await store.createKey({ userId: u.id, name: 'one', hash: 'H1', expiresAt });
    const found = await store.findKeyByHash('H1');
    expect(found?.key).toMatchObject({ id: k.id, name: 'one', userId: u.id });
    expect(found?.key.expiresAt?.getTime()).toBe(expiresAt.getTime());
    expect(found?.user).toMatchObject({ id: u.id, username: 'frank', domain: 'corp', isAdmin: false });
    await store.touchKey(k.id, new Date(1_700_000_000_000));
    expect((await store.findKeyByHash('H1'))?.key.lastUsedAt?.getTime()).toBe(1_700_000_000_000);
    expect(await store.deleteKey(k.id, u.id)).toBe(true);
    expect(await store.findKeyByHash('H1')).toBeNull();
    expect(await store.deleteKey(k.id, u.id)).toBe(false);
  });

  it('deletes another user’s key only without an owner (administrators)', async () => {
    const a = await user('gina');
    const b = await user('hank');
    const k = await store.createKey({ userId: a.id, name: null, hash: hash(), expiresAt: null });
    expect(await store.deleteKey(k.id, b.id)).toBe(false);
    expect(await store.listKeys(a.id)).toHaveLength(1);
    expect(await store.deleteKey(k.id, null)).toBe(true);
  });

  it('gives 50 parallel creates for one user 50 distinct key#<n> names', async () => {
    const u = await user('ivan');
    const created = await Promise.all(
      Array.from({ length: 50 }, () => store.createKey({ userId: u.id, name: null, hash: hash(), expiresAt: null })),
    );
    const names = new Set(created.map((k) => k.name));
    expect(names.size).toBe(50);
    expect([...names].sort()).toEqual(Array.from({ length: 50 }, (_, i) => `key#${i + 1}`).sort());
  });
});
