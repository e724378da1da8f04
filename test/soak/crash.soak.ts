import { describe, expect, it } from 'vitest';
import { crashWriter } from '../e2e/crashSafety.js';
import { report } from '../helpers/harness.js';

describe('key store crash safety, long', () => {
  it('100 SIGKILLs mid-create: no acknowledged key lost, integrity_check ok every time', async () => {
    const run = await crashWriter(100);
    report('crash safety x100 (SQLite, SIGKILL)', { iterations: run.iterations, acknowledged: run.acknowledged, lost: run.lost, corrupt: run.corrupt.length });
    expect(run.lost).toBe(0);
    expect(run.corrupt).toEqual([]);
    expect(run.duplicateNames).toBe(0);
  });
});
