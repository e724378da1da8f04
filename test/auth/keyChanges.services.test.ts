import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuthorization } from '../../src/auth/authorization.js';
import { EmbeddedKeyService } from '../../src/backends/embedded/keys/keyService.js';
import type { KeyStore } from '../../src/backends/embedded/keys/store.js';
import { addUser } from '../../src/backends/embedded/keys/users.js';
import type { PrincipalModel } from '../../src/ports/backend.js';
import { storeKinds, TEST_COST } from '../helpers/stores.js';

/** rotateKey and updateKey of the embedded key service, on both stores, with a clock of the test's own. */
describe.each(storeKinds)('changing keys, $name store', (kind) => {
  let store: KeyStore;
  let dispose: () => Promise<void>;
  let now = Date.UTC(2026, 10, 29, 12);
  let service: EmbeddedKeyService;
  let root: PrincipalModel;
  let alice: PrincipalModel;

  beforeAll(async () => {
    ({ store, dispose } = await kind.open());
    await addUser(store, { username: 'root', password: 'root-password', isAdmin: true }, TEST_COST);
    await addUser(store, { username: 'alice', password: 'alice-password' }, TEST_COST);
    // nothing verified is kept: each authentication reads the store, as after any change elsewhere
    service = new EmbeddedKeyService(store, { now: () => now, verifiedKeyTtlMs: 0, verifiedPasswordTtlMs: 0 });
    root = await service.authenticate(basicAuthorization('root', 'root-password'));
    alice = await service.authenticate(basicAuthorization('alice', 'alice-password'));
  });
  afterAll(() => dispose());

  it('ends the earlier value at once when a key is rotated again during its grace period', async () => {
    const made = await service.createKey(alice, { name: 'twice-rotated' });
    const first = await service.rotateKey(alice, made.id, 600);
    now += 1000;
    const second = await service.rotateKey(alice, made.id, 600);
    await expect(service.authenticate(made.key)).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
    expect((await service.authenticate(first.key)).keyId).toBe(made.id);
    expect((await service.authenticate(second.key)).keyId).toBe(made.id);
    now += 600_000;
    await expect(service.authenticate(first.key)).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
    expect((await service.authenticate(second.key)).keyId).toBe(made.id);
  });

  it('keeps an expiring key\'s expiry through rotation: the old value never outlives the key', async () => {
    const made = await service.createKey(alice, { name: 'expiring', expiresInDays: 1 });
    const rotated = await service.rotateKey(alice, made.id, 2 * 86_400);
    expect(rotated.apiKey.expiresAt).toEqual(made.apiKey.expiresAt);
    now += 86_400_000;
    await expect(service.authenticate(made.key)).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
    await expect(service.authenticate(rotated.key)).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
  });

  it('answers careless and hostile changes with the error each deserves, changing nothing', async () => {
    const mine = await service.createKey(alice, { name: 'alices-key', scopes: ['RECOMMENDATIONS_READ'] });
    await service.createKey(alice, { name: 'taken-name' });
    const roots = await service.createKey(root, { name: 'roots-key' });
    await expect(service.updateKey(alice, mine.id, { name: 'taken-name' })).rejects.toMatchObject({ code: 'BAD_USER_INPUT', field: 'name' });
    await expect(service.updateKey(alice, mine.id, { name: 'x' })).rejects.toMatchObject({ code: 'BAD_USER_INPUT', field: 'name' });
    await expect(service.updateKey(alice, 'not-a-uuid', { name: 'fine-name' })).rejects.toMatchObject({ code: 'BAD_USER_INPUT', field: 'id' });
    await expect(service.updateKey(alice, roots.id, { name: 'mine-now' })).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(service.rotateKey(alice, roots.id, 0)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(service.updateKey(alice, mine.id, { scopes: ['EVENTS_WRITE'] })).rejects.toMatchObject({ code: 'BAD_USER_INPUT', field: 'scopes' });
    await expect(service.rotateKey(alice, mine.id, 1.5)).rejects.toMatchObject({ code: 'BAD_USER_INPUT', field: 'gracePeriodSeconds' });
    const listed = await service.listKeys(alice);
    expect(listed.find((k) => k.id === mine.id)).toMatchObject({ name: 'alices-key', scopes: ['RECOMMENDATIONS_READ'] });
    expect((await service.listKeys(root)).find((k) => k.id === roots.id)).toMatchObject({ name: 'roots-key' });
    // an administrator may change anyone's key, widening it within its user's rights
    expect(await service.updateKey(root, mine.id, { scopes: ['RECOMMENDATIONS_READ', 'KEYS_MANAGE'] })).toMatchObject({ scopes: ['RECOMMENDATIONS_READ', 'KEYS_MANAGE'] });
    expect(await service.updateKey(alice, mine.id, {})).toMatchObject({ name: 'alices-key' });
  });
});
