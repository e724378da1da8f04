import { describe, expect, it } from 'vitest';
import type { UsageCount } from '../../../../src/backends/embedded/keys/store.js';
import { UsageCounter } from '../../../../src/backends/embedded/keys/usageCounter.js';

/** The in-memory counts: by day across midnight UTC, and kept for the next write when one fails. */
describe('UsageCounter', () => {
  it('counts by UTC day, and keeps a failed write\'s counts for the next, one row per key and day', async () => {
    let now = Date.parse('2026-03-01T23:59:59.500Z');
    const writes: UsageCount[][] = [];
    let failing = true;
    const counter = new UsageCounter({
      addUsage: (counts) => {
        writes.push(counts.map((c) => ({ ...c })));
        return failing ? Promise.reject(new Error('store down')) : Promise.resolve();
      },
    }, () => now, 600_000);
    counter.count('k1', false);
    now += 1_000;
    counter.count('k1', true);
    counter.count('k2', false);
    expect(counter.unwritten('k1')).toEqual([
      { keyId: 'k1', day: '2026-03-01', requests: 1, refused: 0 },
      { keyId: 'k1', day: '2026-03-02', requests: 1, refused: 1 },
    ]);
    await expect(counter.flush()).rejects.toThrow('store down');
    counter.count('k1', false);
    failing = false;
    await counter.close();
    expect(writes[1]).toEqual([
      { keyId: 'k1', day: '2026-03-01', requests: 1, refused: 0 },
      { keyId: 'k1', day: '2026-03-02', requests: 2, refused: 1 },
      { keyId: 'k2', day: '2026-03-02', requests: 1, refused: 0 },
    ]);
    expect(counter.unwritten('k1')).toEqual([]);
  });
});
