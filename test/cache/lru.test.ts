import { describe, expect, it } from 'vitest';
import { MemoryTokenBuckets } from '../../src/auth/tokenBucket.js';
import { ClockedLRU } from '../../src/cache/lru.js';

describe('ClockedLRU', () => {
  it('serves an entry while now < set + ttl, on a clock that starts at 0', () => {
    let now = 0;
    const cache = new ClockedLRU<string, number>({ max: 10, ttl: 1000, now: () => now });
    cache.set('a', 1);
    now = 999;
    expect(cache.get('a')).toBe(1);
    now = 1000;
    expect(cache.get('a')).toBeUndefined();
  });

  it('counts a TTL given on set from its start, and keeps nothing for a TTL of 0', () => {
    let now = 5000;
    const cache = new ClockedLRU<string, number>({ max: 10, now: () => now });
    cache.set('a', 1, { ttl: 100, start: 4950 });
    now = 5049;
    expect(cache.has('a')).toBe(true);
    now = 5050;
    expect(cache.has('a')).toBe(false);
    cache.set('b', 2, { ttl: 0 });
    expect(cache.has('b')).toBe(false);
  });

  it('never holds more than its size, least recently used out first', () => {
    const cache = new ClockedLRU<string, string>({ max: 100, maxSize: 10, sizeCalculation: (value) => value.length });
    cache.set('a', 'xxxx');
    cache.set('b', 'xxxx');
    cache.get('a');
    cache.set('c', 'xxxx');
    expect(cache.calculatedSize).toBeLessThanOrEqual(10);
    expect([...cache.keys()].sort()).toEqual(['a', 'c']);
  });
});

describe('MemoryTokenBuckets marks', () => {
  it('are not served once their TTL is over', async () => {
    let now = 0;
    const buckets = new MemoryTokenBuckets(10, () => now);
    await buckets.mark('signedin:a', 1000);
    now = 999;
    expect(await buckets.marked('signedin:a')).toBe(true);
    now = 1000;
    expect(await buckets.marked('signedin:a')).toBe(false);
  });
});
