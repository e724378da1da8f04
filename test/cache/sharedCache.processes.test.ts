import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MemoryCache } from '../../src/cache/memory.js';
import { RedisCache } from '../../src/cache/redis.js';
import { TieredCache } from '../../src/cache/tiered.js';
import type { SharedCache } from '../../src/ports/cache.js';
import { drainPrefix, OwnRedis, REDIS_URL, testPrefix } from '../helpers/redis.js';

const prefixes: string[] = [];
afterAll(async () => {
  for (const prefix of prefixes) await drainPrefix(prefix);
});

async function ready(cache: SharedCache): Promise<void> {
  for (let i = 0; i < 50 && (await cache.check()) !== 'ok'; i++) await new Promise((r) => setTimeout(r, 20));
  // the first command after connecting must not find the client still handshaking
  await new Promise((r) => setTimeout(r, 20));
}

// One suite, both implementations (the graphql-hive pubsub pattern).
describe.each([
  { name: 'memory', make: () => new MemoryCache({ maxEntries: 100 }) },
  {
    name: 'redis',
    make: () => {
      const keyPrefix = testPrefix();
      prefixes.push(keyPrefix);
      return new RedisCache({ url: REDIS_URL, keyPrefix, commandTimeoutMs: 10_000 });
    },
  },
  {
    name: 'tiered (in-process over redis)',
    make: () => {
      const keyPrefix = testPrefix();
      prefixes.push(keyPrefix);
      return new TieredCache(new RedisCache({ url: REDIS_URL, keyPrefix, commandTimeoutMs: 10_000 }), { localTtlSeconds: 5 });
    },
  },
])('shared cache: $name', ({ make }) => {
  let cache: SharedCache;
  beforeEach(async () => {
    cache = make();
    await ready(cache);
  });
  afterEach(async () => {
    await cache.close();
  });

  it('returns what was set, in order, with nulls for misses, and counts both', async () => {
    await cache.setMany([
      { key: 'a', value: '1', ttlSeconds: 60 },
      { key: 'c', value: '3', ttlSeconds: 60 },
    ]);
    expect(await cache.getMany(['a', 'b', 'c'])).toEqual(['1', null, '3']);
    expect(cache.stats).toMatchObject({ hits: 2, misses: 1, errors: 0 });
  });

  it('forgets an entry after its time to live, and on delete', async () => {
    await cache.setMany([
      { key: 'short', value: 'x', ttlSeconds: 0.05 },
      { key: 'gone', value: 'y', ttlSeconds: 60 },
    ]);
    await cache.delete(['gone']);
    await new Promise((r) => setTimeout(r, 120));
    expect(await cache.getMany(['short', 'gone'])).toEqual([null, null]);
  });

  it('answers an empty question without asking', async () => {
    expect(await cache.getMany([])).toEqual([]);
    await expect(cache.setMany([])).resolves.toBeUndefined();
  });
});

describe('the tiered cache', () => {
  it('shares what one process writes with another, and answers from memory while Redis is gone', async () => {
    const own = await OwnRedis.start();
    const a = new TieredCache(new RedisCache({ url: own.url, commandTimeoutMs: 10_000 }), { localTtlSeconds: 5 });
    const b = new TieredCache(new RedisCache({ url: own.url, commandTimeoutMs: 10_000 }), { localTtlSeconds: 5 });
    try {
      await ready(a);
      await ready(b);
      await a.setMany([{ key: 'k', value: 'v', ttlSeconds: 60 }]);
      expect(await b.getMany(['k'])).toEqual(['v']);
      await own.stop();
      // both processes saw 'k' in the last seconds: no Redis needed to answer it
      expect(await a.getMany(['k'])).toEqual(['v']);
      expect(await b.getMany(['k', 'other'])).toEqual(['v', null]);
      expect(b.stats.hits).toBe(2);
      expect(b.stats.errors).toBeGreaterThan(0);
    } finally {
      await a.close();
      await b.close();
      await own.stop();
    }
  });
});
