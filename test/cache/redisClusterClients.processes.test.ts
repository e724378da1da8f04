import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { RedisCache, REDIS_UNREACHABLE } from '../../src/cache/redis.js';
import { RedisChangeFeed } from '../../src/cache/changeFeed.js';
import { RedisTokenBuckets } from '../../src/auth/tokenBucket.js';
import type { ChangeNotice } from '../../src/ports/changeFeed.js';
import { OwnRedisCluster, testPrefix } from '../helpers/redis.js';

/**
 * The shared cache, the rate limits' buckets and the change feed on a real Redis Cluster of three
 * masters: keys spread over every node, so a command or script over keys of two slots would fail
 * with CROSSSLOT here where one Redis takes it.
 */
describe('Redis clients on a Redis Cluster', () => {
  let cluster: OwnRedisCluster;
  const opened: { close(): Promise<void> }[] = [];
  const open = <T extends { close(): Promise<void> }>(client: T): T => {
    opened.push(client);
    return client;
  };
  const nodes = (): string[] => cluster.nodes.map((node) => `redis://127.0.0.1:${node.port}`);

  beforeAll(async () => {
    cluster = await OwnRedisCluster.start();
  }, 60_000);
  afterAll(async () => {
    for (const client of opened) await client.close();
    await cluster?.stop();
  });

  it('the cache reads and writes keys of every node in one call, and deletes them', async () => {
    const prefix = testPrefix();
    const cache = open(new RedisCache({ cluster: nodes(), keyPrefix: prefix, commandTimeoutMs: 10_000 }));
    await expect.poll(() => cache.check(), { timeout: 10_000 }).toBe('ok');
    const keys = Array.from({ length: 30 }, (_, i) => `item:${i}`);
    await cache.setMany(keys.map((key) => ({ key, value: `v-${key}`, ttlSeconds: 60 })));
    expect(await cache.getMany(keys)).toEqual(keys.map((key) => `v-${key}`));
    // the keys really are spread: each master holds some
    for (const node of cluster.nodes) {
      const direct = new Redis(node.url);
      try {
        expect(await direct.dbsize()).toBeGreaterThan(0);
      } finally {
        direct.disconnect();
      }
    }
    await cache.delete(keys.slice(0, 10));
    const after = await cache.getMany(keys);
    expect(after.slice(0, 10)).toEqual(Array(10).fill(null));
    expect(after.slice(10)).toEqual(keys.slice(10).map((key) => `v-${key}`));
    expect(cache.stats.errors).toBe(0);
  }, 30_000);

  it('two bucket sets share one limit: a burst spent through both is refused as one', async () => {
    const prefix = testPrefix();
    const a = open(new RedisTokenBuckets({ cluster: nodes(), keyPrefix: prefix, commandTimeoutMs: 10_000, leaseMs: 0 }));
    const b = open(new RedisTokenBuckets({ cluster: nodes(), keyPrefix: prefix, commandTimeoutMs: 10_000, leaseMs: 0 }));
    await expect.poll(() => a.check(), { timeout: 10_000 }).toBe('ok');
    await expect.poll(() => b.check(), { timeout: 10_000 }).toBe('ok');
    const limit = { ratePerSecond: 0.01, burst: 6 };
    const allowed: boolean[] = [];
    for (let i = 0; i < 10; i++) allowed.push((await (i % 2 === 0 ? a : b).take('principal:alice', limit)).allowed);
    expect(allowed.filter(Boolean)).toHaveLength(6);
    expect(a.fallbacks + b.fallbacks).toBe(0);
    // marks and buckets of many names land on every node
    for (let i = 0; i < 20; i++) await a.mark(`signedin:user-${i}`, 60_000);
    for (let i = 0; i < 20; i++) expect(await b.marked(`signedin:user-${i}`)).toBe(true);
    expect(await b.marked('signedin:nobody')).toBe(false);
  }, 30_000);

  it('the change feed: a write announced through one is heard by the other, its stale keys deleted on every node', async () => {
    const prefix = testPrefix();
    const cache = open(new RedisCache({ cluster: nodes(), keyPrefix: prefix, commandTimeoutMs: 10_000 }));
    const writer = open(new RedisChangeFeed({ cluster: nodes(), keyPrefix: prefix, commandTimeoutMs: 10_000 }));
    const reader = open(new RedisChangeFeed({ cluster: nodes(), keyPrefix: prefix, commandTimeoutMs: 10_000 }));
    const heard: ChangeNotice[] = [];
    let connected = 0;
    reader.listen((change) => heard.push(change), () => (connected += 1));
    await expect.poll(() => connected, { timeout: 10_000 }).toBeGreaterThan(0);
    // a cluster client takes commands once it has read the slots
    await expect.poll(() => writer.current(), { timeout: 10_000 }).toBe(0);
    await expect.poll(() => cache.check(), { timeout: 10_000 }).toBe('ok');
    const stale = Array.from({ length: 12 }, (_, i) => `item:${100 + i}`);
    await cache.setMany(stale.map((key) => ({ key, value: 'old', ttlSeconds: 60 })));
    const first = await writer.announce([100, 101], stale);
    expect(first).toBe(1);
    expect(await cache.getMany(stale)).toEqual(Array(stale.length).fill(null));
    expect(await writer.announce([7])).toBe(2);
    await expect.poll(() => heard, { timeout: 10_000 }).toMatchObject([
      { writes: 1, itemIds: [100, 101] },
      { writes: 2, itemIds: [7] },
    ]);
    expect(await reader.current()).toBe(2);
  }, 30_000);

  it('the node the feed listens on is gone: it listens on the next seed, rereads the count, and hears what follows', async () => {
    const prefix = testPrefix();
    const writer = open(new RedisChangeFeed({ cluster: nodes(), keyPrefix: prefix, commandTimeoutMs: 10_000 }));
    const reader = open(new RedisChangeFeed({ cluster: nodes(), keyPrefix: prefix, commandTimeoutMs: 10_000 }));
    const heard: ChangeNotice[] = [];
    let connected = 0;
    reader.listen((change) => heard.push(change), () => (connected += 1));
    await expect.poll(() => connected, { timeout: 10_000 }).toBe(1);
    // the first seed, where a feed listens first
    const first = cluster.nodes[0]!;
    await first.stop();
    try {
      await expect.poll(() => connected, { timeout: 15_000 }).toBe(2);
    } finally {
      await first.start();
    }
    await cluster.settled();
    await expect.poll(() => writer.announce([42]), { timeout: 15_000 }).toBe(1);
    await expect.poll(() => heard, { timeout: 10_000 }).toMatchObject([{ writes: 1, itemIds: [42] }]);
  }, 60_000);

  it('a master gone: the cache misses at once and says unreachable in the words it uses for one Redis, then recovers', async () => {
    const prefix = testPrefix();
    const cache = open(new RedisCache({ cluster: nodes(), keyPrefix: prefix, commandTimeoutMs: 500, backoffMs: 100 }));
    await expect.poll(() => cache.check(), { timeout: 10_000 }).toBe('ok');
    const keys = Array.from({ length: 30 }, (_, i) => `gone:${i}`);
    await cache.setMany(keys.map((key) => ({ key, value: 'here', ttlSeconds: 60 })));
    const victim = cluster.nodes[1]!;
    await victim.stop();
    await expect.poll(() => cache.check(), { timeout: 10_000 }).toBe(REDIS_UNREACHABLE);
    const started = Date.now();
    const values = await cache.getMany(keys);
    expect(Date.now() - started).toBeLessThan(1000);
    // answered as misses: nothing thrown to the caller
    expect(values.every((value) => value === null || value === 'here')).toBe(true);
    await victim.start();
    await cluster.settled();
    await expect.poll(() => cache.check(), { timeout: 20_000 }).toBe('ok');
    await cache.setMany([{ key: 'back', value: 'yes', ttlSeconds: 60 }]);
    await expect.poll(async () => (await cache.getMany(['back']))[0], { timeout: 10_000 }).toBe('yes');
  }, 60_000);
});
