import path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { basicAuthorization } from '../../../../src/auth/authorization.js';
import { EmbeddedKeyService } from '../../../../src/backends/embedded/keys/keyService.js';
import { hashPassword, SCRYPT_CONCURRENCY, scryptPeakConcurrency, scryptRuns, verifyPassword } from '../../../../src/backends/embedded/keys/passwords.js';
import { SqliteKeyStore } from '../../../../src/backends/embedded/keys/sqliteStore.js';
import { addUser } from '../../../../src/backends/embedded/keys/users.js';
import { abandon, CallerGone, CLIENT_GONE } from '../../../../src/shared/callSignal.js';
import { tempDir } from '../../../helpers/stores.js';

// A cheap cost: the subject is how many hashes run at once, not how long one takes.
const CHEAP = { N: 2 ** 10, r: 8, p: 1 };

describe('password hashing', () => {
  it('checks right and wrong passwords', async () => {
    const stored = await hashPassword('right horse', CHEAP);
    await expect(verifyPassword('right horse', stored)).resolves.toBe(true);
    await expect(verifyPassword('wrong horse', stored)).resolves.toBe(false);
    await expect(verifyPassword('anything', null)).resolves.toBe(false);
  });

  it('runs at most one core fewer than the machine has at once, and answers every queued check', async () => {
    const stored = await hashPassword('pw', CHEAP);
    const results = await Promise.all(Array.from({ length: 12 }, (_, i) => verifyPassword(i % 2 === 0 ? 'pw' : 'nope', stored)));
    expect(results).toEqual(Array.from({ length: 12 }, (_, i) => i % 2 === 0));
    expect(scryptPeakConcurrency()).toBeLessThanOrEqual(SCRYPT_CONCURRENCY);
    expect(SCRYPT_CONCURRENCY).toBeGreaterThanOrEqual(1);
  });

  it('hashes once a check, a process\'s first included: the decoy an unknown user is checked against costs no hash of its own', async () => {
    // a module of its own: the decoy was made at the first check of the process
    vi.resetModules();
    const fresh = await import('../../../../src/backends/embedded/keys/passwords.js');
    const stored = await fresh.hashPassword('right horse', CHEAP);
    expect(fresh.scryptRuns()).toBe(1);
    await expect(fresh.verifyPassword('right horse', stored)).resolves.toBe(true);
    expect(fresh.scryptRuns()).toBe(2);
    await expect(fresh.verifyPassword('right horse', null)).resolves.toBe(false);
    expect(fresh.scryptRuns()).toBe(3);
  });

  // Which checks are queued is decided in the order of the calls, before any of them runs: the
  // slots are taken synchronously, so these hold however slow the machine is.
  it('skips a check that waited its turn and is no longer wanted; the next in line still runs', async () => {
    const stored = await hashPassword('pw', CHEAP);
    const before = scryptRuns();
    const holders = Array.from({ length: SCRYPT_CONCURRENCY }, () => verifyPassword('pw', stored));
    const unwanted = verifyPassword('pw', stored, () => false);
    const next = verifyPassword('nope', stored, () => true);
    await expect(unwanted).rejects.toBeInstanceOf(CallerGone);
    expect(await Promise.all(holders)).toEqual(holders.map(() => true));
    expect(await next).toBe(false);
    expect(scryptRuns() - before).toBe(SCRYPT_CONCURRENCY + 1);
  });
});

describe('a sign-in whose callers have all gone while it waited for a slot', () => {
  it('is not checked; one that a caller still waits for is, and a passed deadline is not a caller gone', async () => {
    const dir = tempDir();
    const store = new SqliteKeyStore(path.join(dir.dir, 'keys.db'));
    try {
      await addUser(store, { username: 'alice', password: 'alice-password' }, CHEAP);
      // the SQLite store answers findUser within the microtasks that follow the calls, so every
      // sign-in below asks for its hash before any holder's can have come back from the pool
      const keys = new EmbeddedKeyService(store);
      const stored = await hashPassword('pw', CHEAP);
      const before = scryptRuns();
      const holders = Array.from({ length: SCRYPT_CONCURRENCY }, () => verifyPassword('pw', stored));
      const signal = (): AbortController => new AbortController();
      // two callers of one credential, both gone: its connection closed with a call waiting (aborted), or after (abandoned)
      const [closed, abandoned] = [signal(), signal()];
      const gone = [keys.authenticate(basicAuthorization('alice', 'guess-1'), { signal: closed.signal }), keys.authenticate(basicAuthorization('alice', 'guess-1'), { signal: abandoned.signal })];
      // two callers of another, one still there
      const [left, stays] = [signal(), signal()];
      const shared = [keys.authenticate(basicAuthorization('alice', 'guess-2'), { signal: left.signal }), keys.authenticate(basicAuthorization('alice', 'guess-2'), { signal: stays.signal })];
      // one whose deadline passed: answered (UNAUTHENTICATED), and so counted as a failure by the limits
      const late = signal();
      const timedOut = keys.authenticate(basicAuthorization('alice', 'guess-3'), { signal: late.signal });
      closed.abort(CLIENT_GONE);
      abandon(abandoned.signal);
      left.abort(CLIENT_GONE);
      late.abort(new DOMException('The request deadline passed', 'TimeoutError'));
      for (const call of gone) await expect(call).rejects.toBeInstanceOf(CallerGone);
      for (const call of shared) await expect(call).rejects.toMatchObject({ extensions: { code: 'UNAUTHENTICATED' } });
      await expect(timedOut).rejects.toMatchObject({ extensions: { code: 'UNAUTHENTICATED' } });
      await Promise.all(holders);
      expect(scryptRuns() - before).toBe(SCRYPT_CONCURRENCY + 2);
    } finally {
      await store.close();
      dir.remove();
    }
  });
});
