import { describe, expect, it, vi } from 'vitest';
import { hashPassword, SCRYPT_CONCURRENCY, scryptPeakConcurrency, verifyPassword } from '../../src/backends/embedded/keys/passwords.js';

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
    const fresh = await import('../../src/backends/embedded/keys/passwords.js');
    const stored = await fresh.hashPassword('right horse', CHEAP);
    expect(fresh.scryptRuns()).toBe(1);
    await expect(fresh.verifyPassword('right horse', stored)).resolves.toBe(true);
    expect(fresh.scryptRuns()).toBe(2);
    await expect(fresh.verifyPassword('right horse', null)).resolves.toBe(false);
    expect(fresh.scryptRuns()).toBe(3);
  });
});
