import { describe, expect, it } from 'vitest';
import { crashWriter } from './crashSafety.js';
import { report } from '../helpers/harness.js';

describe('key store crash safety', () => {
  it('a writer SIGKILLed 16 times mid-create loses no acknowledged key and leaves an intact file', async () => {
    const run = await crashWriter(16);
    report('crash safety (SQLite, SIGKILL)', { iterations: run.iterations, acknowledged: run.acknowledged, lost: run.lost, corrupt: run.corrupt.length });
    expect(run.iterations).toBe(16);
    expect(run.acknowledged).toBeGreaterThan(16);
    expect(run.lost).toBe(0);
    expect(run.corrupt).toEqual([]);
    expect(run.duplicateNames).toBe(0);
  }, 60_000);
});
