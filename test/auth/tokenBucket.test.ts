import { describe, expect, it } from 'vitest';
import { MemoryTokenBuckets } from '../../src/auth/tokenBucket.js';

describe('failed sign-ins kept apart from other buckets', () => {
  it('keeps a username\'s failures however many other buckets come after', async () => {
    const buckets = new MemoryTokenBuckets(10);
    const limit = { ratePerSecond: 0.001, burst: 1 };
    expect((await buckets.take('authfail-user:victim', limit, 1)).allowed).toBe(true);
    expect((await buckets.take('authfail-user:victim', limit, 0)).allowed).toBe(false);
    // strangers without credentials: a bucket each, twenty of them
    for (let i = 0; i < 20; i++) await buckets.take(`addr:10.0.0.${i}`, limit);
    expect((await buckets.take('authfail-user:victim', limit, 0)).allowed).toBe(false);
  });
});
