import { describe, expect, it } from 'vitest';
import type { UsageCount } from '../../../../src/backends/embedded/keys/store.js';
import { quotaSlack, UsageCounter } from '../../../../src/backends/embedded/keys/usageCounter.js';

/** The in-memory counts: by day across midnight UTC, and kept for the next write when one fails. */
describe('UsageCounter', () => {
  it('counts by UTC day, and keeps a failed write\'s counts for the next, one row per key and day', async () => {
    let now = Date.parse('2026-03-01T23:59:59.500Z');
    const writes: UsageCount[][] = [];
    let failing = true;
    const counter = new UsageCounter({
      addUsage: (counts) => {
        writes.push(counts.map((c) => ({ ...c })));
        return failing ? Promise.reject(new Error('store down')) : Promise.resolve([]);
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

  it('decides a daily quota on the store\'s totals: two counters on one store overshoot by their slack at most', async () => {
    const rows = new Map<string, UsageCount>();
    let writes = 0;
    const store = {
      addUsage: (counts: readonly UsageCount[]) => {
        writes += 1;
        return Promise.resolve(counts.map((c) => {
          const row = rows.get(c.keyId) ?? { keyId: c.keyId, day: c.day, requests: 0, refused: 0 };
          row.requests += c.requests;
          row.refused += c.refused;
          rows.set(c.keyId, row);
          return { ...row };
        }));
      },
    };
    const now = (): number => Date.parse('2026-03-01T12:00:00Z');
    const replicas = [new UsageCounter(store, now, 600_000), new UsageCounter(store, now, 600_000)];
    const quota = 200;
    expect(quotaSlack(quota)).toBe(2);
    let admitted = 0;
    // as the rate limiter asks: look, settle while undecided, count in the same turn as the last look
    const ask = async (counter: UsageCounter): Promise<void> => {
      let left = counter.quotaLeft('k', quota);
      while (left === undefined) {
        await counter.settleQuota('k');
        left = counter.quotaLeft('k', quota);
      }
      counter.count('k', !left);
      if (left) admitted += 1;
    };
    // 600 requests, 20 at once, spread over both
    for (let round = 0; round < 30; round++) await Promise.all(Array.from({ length: 20 }, (_, i) => ask(replicas[i % 2]!)));
    expect(admitted).toBeGreaterThanOrEqual(quota);
    expect(admitted).toBeLessThanOrEqual(quota + 2 * quotaSlack(quota));
    // past the quota a replica refuses on what it knows, without a write a request
    const before = writes;
    await ask(replicas[0]!);
    expect(writes).toBe(before);
    for (const counter of replicas) await counter.close();
    expect(rows.get('k')).toMatchObject({ requests: 601, refused: 601 - admitted });
  });

  it('decides on what the process knows while the store fails, and never shows a day of nothing', async () => {
    const counter = new UsageCounter({ addUsage: () => Promise.reject(new Error('store down')) }, () => Date.parse('2026-03-01T12:00:00Z'), 600_000);
    expect(counter.quotaLeft('k', 2)).toBeUndefined();
    await counter.settleQuota('k');
    expect(counter.unwritten('k')).toEqual([]);
    expect(counter.quotaLeft('k', 2)).toBe(true);
    counter.count('k', false);
    counter.count('k', false);
    expect(counter.quotaLeft('k', 2)).toBe(false);
    await counter.close();
  });
});
