import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { basicAuthorization } from '../../../../src/auth/authorization.js';
import { EmbeddedKeyService } from '../../../../src/backends/embedded/keys/keyService.js';
import type { KeyStore } from '../../../../src/backends/embedded/keys/store.js';
import { addUser } from '../../../../src/backends/embedded/keys/users.js';
import type { PrincipalModel } from '../../../../src/ports/backend.js';
import { storeKinds, TEST_COST } from '../../../helpers/stores.js';

/** Keys' limits and usage in both stores: kept, changed, counted by two services, and read after a restart. */
describe.each(storeKinds)('key limits and usage on $name', (kind) => {
  let store: KeyStore;
  let dispose: () => Promise<void>;
  const START = Date.parse('2026-03-01T23:59:58.000Z');
  let now = START;
  const services: EmbeddedKeyService[] = [];
  let alice: PrincipalModel;
  let bob: PrincipalModel;
  let admin: PrincipalModel;

  const service = (): EmbeddedKeyService => {
    // a flush interval longer than any test: only close() and flush() write
    const made = new EmbeddedKeyService(store, { now: () => now, usageFlushMs: 600_000 });
    services.push(made);
    return made;
  };

  beforeEach(async () => {
    now = START;
    ({ store, dispose } = await kind.open());
    await addUser(store, { username: 'alice', password: 'alice-password' }, TEST_COST);
    await addUser(store, { username: 'bob', password: 'bob-password' }, TEST_COST);
    await addUser(store, { username: 'root', password: 'root-password', isAdmin: true }, TEST_COST);
    const keys = service();
    alice = await keys.authenticate(basicAuthorization('alice', 'alice-password'));
    bob = await keys.authenticate(basicAuthorization('bob', 'bob-password'));
    admin = await keys.authenticate(basicAuthorization('root', 'root-password'));
  });
  afterEach(async () => {
    for (const made of services.splice(0)) await made.close();
    await dispose();
  });

  it('keeps a key\'s limits, changes and removes them, and gives them to its principal', async () => {
    const keys = service();
    const created = await keys.createKey(alice, { name: 'limited', rateLimitPerSecond: 3, dailyQuota: 40 });
    expect(created.apiKey).toMatchObject({ rateLimitPerSecond: 3, dailyQuota: 40 });
    expect((await keys.listKeys(alice)).find((k) => k.id === created.id)).toMatchObject({ rateLimitPerSecond: 3, dailyQuota: 40 });
    const principal = await service().authenticate(created.key);
    expect(principal.limits).toEqual({ rateLimitPerSecond: 3, dailyQuota: 40 });

    expect(await keys.updateKey(alice, created.id, { dailyQuota: null })).toMatchObject({ rateLimitPerSecond: 3, dailyQuota: null });
    expect(await keys.updateKey(alice, created.id, { name: 'renamed' })).toMatchObject({ name: 'renamed', rateLimitPerSecond: 3, dailyQuota: null });
    // another service on the store sees the change at once (the change count moved)
    expect((await service().authenticate(created.key)).limits).toEqual({ rateLimitPerSecond: 3, dailyQuota: null });
  });

  it('shares a daily quota between two services through the store: each learns the other\'s counts as it writes', async () => {
    now = Date.parse('2026-03-02T12:00:00.000Z');
    const key = await service().createKey(alice, { name: 'quota', dailyQuota: 3 });
    const [first, second] = [service(), service()];
    // nothing learned yet: the store is asked first, and a key with no requests shows no day
    expect(first.quotaLeft(key.id, 3)).toBeUndefined();
    await first.settleQuota(key.id);
    expect(await first.keyUsage(alice, key.id, 2)).toEqual([]);
    expect(first.quotaLeft(key.id, 3)).toBe(true);
    first.countUse(key.id, false);
    // a hundredth of the quota, at least one, is admitted before the store is asked again
    expect(first.quotaLeft(key.id, 3)).toBeUndefined();
    await first.settleQuota(key.id);
    await second.settleQuota(key.id);
    second.countUse(key.id, false);
    await second.settleQuota(key.id);
    second.countUse(key.id, false);
    await second.settleQuota(key.id);
    expect(second.quotaLeft(key.id, 3)).toBe(false);
    // the first still thinks one admitted: it may admit one more before it writes and learns
    expect(first.quotaLeft(key.id, 3)).toBe(true);
    await first.settleQuota(key.id);
    expect(first.quotaLeft(key.id, 3)).toBe(false);
    // a quota raised meanwhile has room again
    expect(first.quotaLeft(key.id, 4)).toBe(true);
    expect(await service().keyUsage(alice, key.id, 1)).toEqual([{ day: '2026-03-02', requests: 3, refused: 0 }]);
  });

  it('sums two services\' counts in the store and reads them after a restart, today and yesterday', async () => {
    const key = await service().createKey(alice, { name: 'counted' });
    const first = service();
    const second = service();
    first.countUse(key.id, false);
    first.countUse(key.id, true);
    second.countUse(key.id, false);
    now += 4_000; // past midnight UTC: a new day
    first.countUse(key.id, false);
    second.countUse(key.id, true);
    // what is not written yet is answered too
    expect(await first.keyUsage(alice, key.id, 7)).toEqual([
      { day: '2026-03-02', requests: 1, refused: 0 },
      { day: '2026-03-01', requests: 2, refused: 1 },
    ]);
    await first.close();
    await second.close();

    const restarted = service();
    expect(await restarted.keyUsage(alice, key.id, 7)).toEqual([
      { day: '2026-03-02', requests: 2, refused: 1 },
      { day: '2026-03-01', requests: 3, refused: 1 },
    ]);
    expect(await restarted.keyUsage(alice, key.id, 1)).toEqual([{ day: '2026-03-02', requests: 2, refused: 1 }]);
    // an administrator reads anyone's; another user's key answers as an unknown one
    expect(await restarted.keyUsage(admin, key.id, 2)).toHaveLength(2);
    await expect(restarted.keyUsage(bob, key.id, 7)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    for (const days of [0, -1, 91, 1.5]) await expect(restarted.keyUsage(alice, key.id, days)).rejects.toMatchObject({ code: 'BAD_USER_INPUT', field: 'days' });
  });

  it('drops the counts of a key deleted before they were written, and writes the others', async () => {
    const keys = service();
    const gone = await keys.createKey(alice, { name: 'gone' });
    const kept = await keys.createKey(alice, { name: 'kept' });
    keys.countUse(gone.id, false);
    keys.countUse(kept.id, false);
    await keys.deleteKey(alice, gone.id);
    await keys.close();
    expect(await service().keyUsage(alice, kept.id, 7)).toEqual([{ day: '2026-03-01', requests: 1, refused: 0 }]);
  });
});
