import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { basicAuthorization } from '../../../../src/auth/authorization.js';
import { EmbeddedKeyService } from '../../../../src/backends/embedded/keys/keyService.js';
import { SqliteKeyStore } from '../../../../src/backends/embedded/keys/sqliteStore.js';
import { addUser } from '../../../../src/backends/embedded/keys/users.js';
import { countKeyLookups, TEST_COST, tempDir } from '../../../helpers/stores.js';

/**
 * The in-process cache of verified keys (SQLite only): it must never let a key through that the
 * store no longer has, whoever removed it.
 */
const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('verified keys kept by the embedded key service over SQLite', () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  async function setup(now: () => number = Date.now) {
    const { dir, remove } = tempDir();
    cleanups.push(remove);
    const file = path.join(dir, 'keys.db');
    const store = new SqliteKeyStore(file);
    cleanups.push(() => store.close());
    await addUser(store, { username: 'alice', password: 'alice-password' }, TEST_COST);
    const service = new EmbeddedKeyService(store, { now });
    const principal = await service.authenticate(basicAuthorization('alice', 'alice-password'));
    return { file, store, service, principal };
  }

  it('fails a key another process deleted on the very next request', async () => {
    const { file, service, principal } = await setup();
    const { id, key } = await service.createKey(principal, { name: 'laptop' });
    expect((await service.authenticate(key)).keyId).toBe(id);
    expect((await service.authenticate(key)).keyId).toBe(id);

    // another process: its own connection to the same file
    const other = new SqliteKeyStore(file);
    cleanups.push(() => other.close());
    expect(await other.deleteKey(id, null)).toBe(true);
    // the next request: read from its socket in a later turn of the event loop than the commit
    await nextTurn();
    await expect(service.authenticate(key)).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
  });

  it("keeps verified keys across this process's own writes (a key's lastUsedAt, a new key)", async () => {
    const { file, store, principal } = await setup();
    // every use of a key writes its lastUsedAt
    const service = new EmbeddedKeyService(store, { lastUsedResolutionMs: 0 });
    const { id, key } = await service.createKey(principal, { name: 'busy' });
    const lookups = countKeyLookups(store);
    for (let n = 0; n < 5; n++) {
      await service.authenticate(key);
      await nextTurn();
    }
    await service.createKey(principal, { name: 'another' });
    await nextTurn();
    await service.authenticate(key);
    expect(lookups()).toBe(1);
    // and another process's write still counts: a time other than the one this process wrote
    // (the same millisecond wrote the same bytes, which SQLite does not count as a change: the
    // data version stayed: 68 of 200 rounds of these steps in a loop failed so)
    const other = new SqliteKeyStore(file);
    cleanups.push(() => other.close());
    await other.touchKey(id, new Date(Date.now() + 60_000));
    await nextTurn();
    await service.authenticate(key);
    expect(lookups()).toBe(2);
  });

  it('fails a key deleted through the service itself on the very next request', async () => {
    const { service, principal } = await setup();
    const { id, key } = await service.createKey(principal, { name: 'phone' });
    await service.authenticate(`Bearer ${key}`);
    await service.deleteKey(principal, id);
    await expect(service.authenticate(`Bearer ${key}`)).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
    await expect(service.authenticate(key)).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
  });

  it('fails a kept key once it expires', async () => {
    let clock = Date.now();
    const { service, principal } = await setup(() => clock);
    const { key } = await service.createKey(principal, { name: 'short', expiresInDays: 1 });
    expect((await service.authenticate(key)).authenticatedBy).toBe('API_KEY');
    clock += 86_400_000 + 1;
    await expect(service.authenticate(key)).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
  });

  it('answers at once (authenticateKnown) only what authenticate would, for a verified key still good', async () => {
    let clock = Date.now();
    const { file, service, principal } = await setup(() => clock);
    const { id, key } = await service.createKey(principal, { name: 'watch', expiresInDays: 1 });
    const password = basicAuthorization('alice', 'alice-password');
    // nothing is known before a lookup; a verified password is kept (under a keyed hash) until
    // the user's keys change
    expect(service.authenticateKnown(key)).toBeUndefined();
    expect(service.authenticateKnown(password)).toBeUndefined();
    await service.authenticate(password);
    expect(service.authenticateKnown(password)?.authenticatedBy).toBe('PASSWORD');
    const looked = await service.authenticate(key);
    expect(service.authenticateKnown(key)).toEqual(looked);
    expect(service.authenticateKnown(`Bearer ${key}`)).toBeUndefined();
    // expired: not known, and authenticate refuses it too
    clock += 86_400_000 + 1;
    expect(service.authenticateKnown(key)).toBeUndefined();
    await expect(service.authenticate(key)).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
    clock = Date.now();
    const { key: other } = await service.createKey(principal, { name: 'other' });
    expect(service.authenticateKnown(password)).toBeUndefined();
    await service.authenticate(other);
    expect(service.authenticateKnown(other)?.authenticatedBy).toBe('API_KEY');
    // another process's write: the next turn knows nothing kept
    const elsewhere = new SqliteKeyStore(file);
    cleanups.push(() => elsewhere.close());
    expect(await elsewhere.deleteKey(id, null)).toBe(true);
    await nextTurn();
    expect(service.authenticateKnown(other)).toBeUndefined();
  });

  it("answers by the connection's remembered credential only for the value sent on it now", async () => {
    const { service, principal } = await setup();
    const { key } = await service.createKey(principal, { name: 'phone' });
    const { id: otherId, key: other } = await service.createKey(principal, { name: 'watch' });
    const connection = {};
    expect(service.authenticateKnown(key, connection)).toBeUndefined();
    const looked = await service.authenticate(key);
    expect(service.authenticateKnown(key, connection)).toEqual(looked);
    // the same connection sends a key never looked up, a wrong one, then the first again
    expect(service.authenticateKnown(other, connection)).toBeUndefined();
    const wrong = `${key.slice(0, -2)}${key.endsWith('AA') ? 'BB' : 'AA'}`;
    expect(service.authenticateKnown(wrong, connection)).toBeUndefined();
    expect(service.authenticateKnown(key, connection)?.keyId).toBe(looked.keyId);
    // a key deleted here is refused at once on a connection that sent it before
    await service.authenticate(other);
    expect(service.authenticateKnown(other, connection)?.keyId).toBe(otherId);
    await service.deleteKey(principal, otherId);
    expect(service.authenticateKnown(other, connection)).toBeUndefined();
    await expect(service.authenticate(other)).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
  });

  it('still refuses a wrong key and keeps the principal free of the raw value', async () => {
    const { service, principal } = await setup();
    const { key } = await service.createKey(principal, { name: 'tablet' });
    const first = await service.authenticate(key);
    const second = await service.authenticate(`Bearer ${key}`);
    expect(second.authorization).toBe(`Bearer ${key}`);
    expect(first.credentialId).not.toBe(second.credentialId);
    const wrong = `${key.slice(0, -2)}${key.endsWith('AA') ? 'BB' : 'AA'}`;
    await expect(service.authenticate(wrong)).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
  });
});
