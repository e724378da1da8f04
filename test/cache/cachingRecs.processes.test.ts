import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import type { IngestService, ItemModel, PrincipalModel, RecommendationKind, RecommendationListModel, RecsService } from '../../src/ports/backend.js';
import { CachingIngestService, CachingRecsService } from '../../src/cache/cachingRecs.js';
import { MemoryChangeHub, RedisChangeFeed } from '../../src/cache/changeFeed.js';
import { MemoryCache } from '../../src/cache/memory.js';
import { TieredCache } from '../../src/cache/tiered.js';
import { RedisCache } from '../../src/cache/redis.js';
import type { SharedCache } from '../../src/ports/cache.js';
import type { ChangeFeed, ChangeNotice } from '../../src/ports/changeFeed.js';
import { notFound, rateLimited, upstreamUnavailable } from '../../src/errors.js';
import { drainPrefix, OwnRedis, REDIS_URL, testPrefix } from '../helpers/redis.js';
import { ManualClock } from '../helpers/clock.js';

/** A backend that counts its calls: the cache's whole job is to make fewer of them. */
class CountingRecs implements RecsService {
  itemCalls: number[][] = [];
  recommendCalls = 0;
  delayMs = 0;
  /** When set, recommend answers once it resolves rather than after delayMs (answers released together). */
  gate: Promise<void> | null = null;
  /** The score of every entry: set to tell a list read after a change from one read before. */
  version: number | null = null;
  constructor(private readonly known: Set<number>) {}

  async getItems(ids: readonly number[]): Promise<(ItemModel | null)[]> {
    this.itemCalls.push([...ids]);
    await new Promise((r) => setTimeout(r, this.delayMs));
    return ids.map((id) => (this.known.has(id) ? { itemId: id, name: `Item ${id}`, attributes: [] } : null));
  }

  async recommend(kind: RecommendationKind, anchorId: number): Promise<RecommendationListModel> {
    this.recommendCalls += 1;
    await (this.gate ?? new Promise((r) => setTimeout(r, this.delayMs)));
    if (!this.known.has(anchorId)) throw notFound(`No item with itemId ${anchorId}`);
    const ids = [anchorId + 1, anchorId + 2];
    return {
      anchorId,
      kind,
      entries: ids.map((itemId, i) => ({ rank: i + 1, itemId, score: this.version, evidence: 0, source: 'UPSTREAM' as const })),
      items: ids.map((itemId) => ({ itemId, name: `Item ${itemId}`, attributes: [] })),
    };
  }
}

const known = new Set([1, 2, 3, 4, 5, 10, 11, 12, 5_000_000_001]);
const prefixes: string[] = [];
afterAll(async () => {
  for (const p of prefixes) await drainPrefix(p);
});

function redisCache(url = REDIS_URL, keyPrefix = testPrefix()): RedisCache {
  prefixes.push(keyPrefix);
  // these tests count upstream calls: a slow answer on a busy machine must not read as a miss
  return new RedisCache({ url, keyPrefix, commandTimeoutMs: 10_000 });
}

async function connected(cache: RedisCache): Promise<void> {
  for (let i = 0; i < 100 && (await cache.check()) !== 'ok'; i++) await new Promise((r) => setTimeout(r, 20));
  await new Promise((r) => setTimeout(r, 20));
}

describe('caching recommendations in real Redis', () => {
  let upstream: CountingRecs;
  beforeEach(() => {
    upstream = new CountingRecs(known);
  });

  it('makes no upstream call for a warm list and its items, and shares items between lists and lookups', async () => {
    const cache = redisCache();
    await connected(cache);
    const recs = new CachingRecsService(upstream, cache);
    const list = await recs.recommend('POST_BROWSE', 10);
    expect(list.entries.map((e) => e.itemId)).toEqual([11, 12]);
    expect(upstream.recommendCalls).toBe(1);

    const again = await recs.recommend('POST_BROWSE', 10);
    expect(again.entries).toEqual(list.entries);
    // the items came with the list: a lookup of them is warm already
    expect(await recs.getItems([11, 12])).toEqual([expect.objectContaining({ itemId: 11 }), expect.objectContaining({ itemId: 12 })]);
    expect(upstream.recommendCalls).toBe(1);
    expect(upstream.itemCalls).toEqual([]);
    await cache.close();
  });

  it('stores a fetched list just after answering, and shares the flight until it is stored', async () => {
    const cache = redisCache();
    await connected(cache);
    const recs = new CachingRecsService(upstream, cache);
    const first = recs.recommend('POST_BROWSE', 10);
    await first;
    // answered before the write: a request meanwhile shares the flight, its items too
    const meanwhile = await recs.recommend('POST_BROWSE', 10);
    expect(await recs.getItems([11])).toEqual([expect.objectContaining({ itemId: 11 })]);
    await recs.flushed();
    expect(await cache.getMany(['recs:POST_BROWSE:10', 'item:11'])).toEqual([expect.stringContaining('"entries"'), expect.stringContaining('"itemId":11')]);
    // a new service on the same cache finds it stored
    const other = new CountingRecs(known);
    expect((await new CachingRecsService(other, cache).recommend('POST_BROWSE', 10)).entries).toEqual(meanwhile.entries);
    expect(upstream.recommendCalls + other.recommendCalls).toBe(1);
    expect(upstream.itemCalls).toEqual([]);
    await cache.close();
  });

  it('remembers unknown items and anchors briefly (negative entries)', async () => {
    const cache = redisCache();
    await connected(cache);
    const recs = new CachingRecsService(upstream, cache, { negativeTtlSeconds: 30 });
    expect(await recs.getItems([1, 999])).toEqual([expect.objectContaining({ itemId: 1 }), null]);
    expect(await recs.getItems([999, 1])).toEqual([null, expect.objectContaining({ itemId: 1 })]);
    expect(upstream.itemCalls).toEqual([[1, 999]]);
    await expect(recs.recommend('NEXT_BEST_PRODUCT', 777)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(recs.recommend('NEXT_BEST_PRODUCT', 777)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    expect(upstream.recommendCalls).toBe(1);
    await cache.close();
  });

  it('keeps nothing of a failed lookup or list (no negative entry): the next call asks again', async () => {
    const cache = redisCache();
    await connected(cache);
    const failing = new CountingRecs(known);
    failing.getItems = (ids) => {
      failing.itemCalls.push([...ids]);
      return Promise.reject(rateLimited(60));
    };
    failing.recommend = () => {
      failing.recommendCalls += 1;
      return Promise.reject(upstreamUnavailable('recommendations', 'HTTP 503'));
    };
    const recs = new CachingRecsService(failing, cache);
    await expect(recs.getItems([1, 999])).rejects.toMatchObject({ code: 'RATE_LIMITED' });
    await expect(recs.recommend('POST_BROWSE', 10)).rejects.toMatchObject({ code: 'UPSTREAM_UNAVAILABLE' });
    await recs.flushed();
    expect(await cache.getMany(['item:1', 'item:999', 'recs:POST_BROWSE:10'])).toEqual([null, null, null]);
    const recovered = new CachingRecsService(upstream, cache);
    expect(await recovered.getItems([1, 999])).toEqual([expect.objectContaining({ itemId: 1 }), null]);
    expect((await recovered.recommend('POST_BROWSE', 10)).entries.map((e) => e.itemId)).toEqual([11, 12]);
    expect([upstream.itemCalls, upstream.recommendCalls]).toEqual([[[1, 999]], 1]);
    await cache.close();
  });

  it('makes one upstream call for 100 concurrent misses of one key in one process', async () => {
    const cache = redisCache();
    await connected(cache);
    const recs = new CachingRecsService(upstream, cache);
    upstream.delayMs = 30;
    const lists = await Promise.all(Array.from({ length: 100 }, () => recs.recommend('POST_BROWSE', 3)));
    const items = await Promise.all(Array.from({ length: 100 }, () => recs.getItems([5_000_000_001, 2])));
    expect(new Set(lists.map((l) => JSON.stringify(l.entries))).size).toBe(1);
    expect(items[99]).toEqual([expect.objectContaining({ itemId: 5_000_000_001 }), expect.objectContaining({ itemId: 2 })]);
    expect(upstream.recommendCalls).toBe(1);
    expect(upstream.itemCalls).toHaveLength(1);
    await cache.close();
  });

  it('lets a second process on the same Redis answer warm with no upstream call', async () => {
    const prefix = testPrefix();
    const first = redisCache(REDIS_URL, prefix);
    const second = redisCache(REDIS_URL, prefix);
    await Promise.all([connected(first), connected(second)]);
    const writer = new CachingRecsService(upstream, first);
    await writer.recommend('NEXT_BEST_PRODUCT', 4);
    // stored just after the answer (off the response's path)
    await writer.flushed();
    const otherUpstream = new CountingRecs(known);
    const list = await new CachingRecsService(otherUpstream, second).recommend('NEXT_BEST_PRODUCT', 4);
    expect(list.entries.map((e) => e.itemId)).toEqual([5, 6]);
    expect(otherUpstream.recommendCalls).toBe(0);
    await Promise.all([first.close(), second.close()]);
  });

  it('keeps answering while its own Redis is down, frozen and restarted, and hits again once it is back', async () => {
    const own = await OwnRedis.start();
    // the back-off's time moves by hand: on a busy machine 20 calls may take longer than the
    // back-off, and more of them would probe the frozen Redis than the machine's speed decides
    const clock = new ManualClock();
    const cache = new RedisCache({ url: own.url, keyPrefix: 'rg:', backoffMs: 200, now: clock.now });
    await connected(cache);
    const recs = new CachingRecsService(upstream, cache);
    await recs.getItems([1]);
    expect(await recs.getItems([1])).toEqual([expect.objectContaining({ itemId: 1 })]);
    expect(upstream.itemCalls).toHaveLength(1);

    own.freeze();
    const frozenTimes: number[] = [];
    for (let i = 0; i < 20; i++) {
      const started = performance.now();
      expect(await recs.getItems([2])).toEqual([expect.objectContaining({ itemId: 2 })]);
      frozenTimes.push(performance.now() - started);
    }
    // a frozen Redis costs one command timeout (100 ms) at most per request, and only the probing ones pay it
    expect(Math.max(...frozenTimes)).toBeLessThan(400);
    expect(frozenTimes.filter((t) => t > 50).length).toBeLessThanOrEqual(5);
    own.thaw();

    await own.stop();
    const downStarted = performance.now();
    for (let i = 0; i < 20; i++) expect(await recs.getItems([3])).toEqual([expect.objectContaining({ itemId: 3 })]);
    expect((performance.now() - downStarted) / 20).toBeLessThan(20);
    expect(cache.stats.errors).toBeGreaterThan(0);

    await own.start();
    const backAt = performance.now();
    let hitAgain = false;
    while (!hitAgain && performance.now() - backAt < 5000) {
      const before = upstream.itemCalls.length;
      await recs.getItems([4]);
      hitAgain = upstream.itemCalls.length === before;
      if (!hitAgain) {
        // ioredis reconnects in real time; the back-off runs on the test's clock, kept in step
        await new Promise((r) => setTimeout(r, 50));
        clock.advance(50);
      }
    }
    expect(hitAgain).toBe(true);
    expect(performance.now() - backAt).toBeLessThan(2000 + 500);
    await cache.close();
    await own.stop();
  });
});

describe("a list's items, stored once per half their TTL", () => {
  it('stores a list item this process stored lately only after half its TTL, and a looked-up item always', async () => {
    const cache = new MemoryCache();
    const storedItems: string[] = [];
    const setMany = cache.setMany.bind(cache);
    cache.setMany = (entries) => {
      storedItems.push(...entries.filter((e) => e.key.startsWith('item:')).map((e) => e.key));
      return setMany(entries);
    };
    const clock = new ManualClock();
    const recs = new CachingRecsService(new CountingRecs(known), cache, { itemTtlSeconds: 300, now: clock.now });

    await recs.recommend('POST_BROWSE', 10); // items 11 and 12
    await recs.flushed();
    await recs.recommend('POST_BROWSE', 11); // items 12 (stored lately) and 13
    await recs.flushed();
    expect(storedItems).toEqual(['item:11', 'item:12', 'item:13']);
    // the items are in the cache, each once
    expect((await cache.getMany(['item:11', 'item:12', 'item:13'])).map((v) => v !== null)).toEqual([true, true, true]);

    clock.advance(150_000 + 1);
    await recs.recommend('NEXT_BEST_PRODUCT', 10); // 11 and 12 again, half their TTL later
    await recs.flushed();
    expect(storedItems.slice(3)).toEqual(['item:11', 'item:12']);

    // a lookup stores what it fetched, stored lately or not: it was a miss
    await cache.delete(['item:12']);
    expect(await recs.getItems([12])).toEqual([expect.objectContaining({ itemId: 12 })]);
    await recs.flushed();
    expect(storedItems.slice(5)).toEqual(['item:12']);
    await cache.close();
  });
});

describe('the writes of one turn, stored together', () => {
  it('stores the lists fetched in one turn, and their items, in one setMany, and the lists answer from the cache after', async () => {
    const cache = new MemoryCache();
    const calls: string[][] = [];
    const setMany = cache.setMany.bind(cache);
    cache.setMany = (entries) => {
      calls.push(entries.map((e) => e.key));
      return setMany(entries);
    };
    const upstream = new CountingRecs(known);
    const recs = new CachingRecsService(upstream, cache);
    // both upstream answers come in the same turn: held until both calls are made, then released
    // together (two timers of 0 ms could fire in two turns on a loaded machine)
    let release = (): void => {};
    upstream.gate = new Promise<void>((resolve) => (release = resolve));
    const both = Promise.all([recs.recommend('POST_BROWSE', 10), recs.recommend('NEXT_BEST_PRODUCT', 3)]);
    for (let turns = 0; upstream.recommendCalls < 2 && turns < 1_000; turns++) await new Promise((r) => setImmediate(r));
    expect(upstream.recommendCalls).toBe(2);
    release();
    upstream.gate = null;
    const [a, b] = await both;
    expect([a.entries.map((e) => e.itemId), b.entries.map((e) => e.itemId)]).toEqual([[11, 12], [4, 5]]);
    await recs.flushed();
    expect(calls).toEqual([['recs:POST_BROWSE:10', 'item:11', 'item:12', 'recs:NEXT_BEST_PRODUCT:3', 'item:4', 'item:5']]);
    // a list fetched later is a write of its own
    await recs.recommend('POST_BROWSE', 1);
    await recs.flushed();
    expect(calls.slice(1)).toEqual([['recs:POST_BROWSE:1', 'item:2', 'item:3']]);
    expect((await recs.recommend('NEXT_BEST_PRODUCT', 3)).entries.map((e) => e.itemId)).toEqual([4, 5]);
    expect(upstream.recommendCalls).toBe(3);
    await cache.close();
  });
});

describe('items parsed once per cached text', () => {
  it('answers a hit with the item its text was parsed to, and a changed or removed entry as the cache has it', async () => {
    const cache = new MemoryCache();
    const upstream = new CountingRecs(known);
    const recs = new CachingRecsService(upstream, cache);
    await recs.recommend('POST_BROWSE', 10); // stores items 11 and 12
    await recs.flushed();
    const [first] = await recs.getItems([11]);
    const [again] = await recs.getItems([11]);
    expect(again).toBe(first);
    expect(again).toEqual(expect.objectContaining({ itemId: 11, name: 'Item 11' }));

    // another writer's newer copy is what is answered, not the one parsed before
    await cache.setMany([{ key: 'item:11', value: JSON.stringify({ itemId: 11, name: 'Renamed', attributes: [] }), ttlSeconds: 60 }]);
    expect(await recs.getItems([11])).toEqual([expect.objectContaining({ name: 'Renamed' })]);
    // a removed entry is a miss again, whatever was parsed before
    expect(await recs.getItems([12])).toEqual([expect.objectContaining({ itemId: 12 })]);
    expect(upstream.itemCalls).toEqual([]);
    await cache.delete(['item:12']);
    expect(await recs.getItems([12])).toEqual([expect.objectContaining({ itemId: 12 })]);
    expect(upstream.itemCalls).toEqual([[12]]);
    await cache.close();
  });
});

describe('a write forwarded while a lookup of its records is under way (dataChanged)', () => {
  /** An upstream whose answers are read when asked and held until released: a lookup begun before a write. */
  class HeldRecs implements RecsService {
    names = new Map<number, string>([[1, 'old']]);
    holding = true;
    private gates: (() => void)[] = [];
    async getItems(ids: readonly number[]): Promise<(ItemModel | null)[]> {
      const read = ids.map((id) => (this.names.has(id) ? { itemId: id, name: this.names.get(id)!, attributes: [] } : null));
      if (this.holding) await new Promise<void>((r) => this.gates.push(r));
      return read;
    }
    async recommend(kind: RecommendationKind, anchorId: number): Promise<RecommendationListModel> {
      const items = [{ itemId: 1, name: this.names.get(1)!, attributes: [] }];
      await new Promise<void>((r) => this.gates.push(r));
      return { anchorId, kind, entries: [{ rank: 1, itemId: 1, score: null, evidence: 0, source: 'UPSTREAM' as const }], items };
    }
    /** Until `n` answers are held (bounded: 200 turns of 5 ms). */
    async held(n: number): Promise<void> {
      for (let i = 0; i < 200 && this.gates.length < n; i++) await new Promise((r) => setTimeout(r, 5));
      expect(this.gates.length).toBe(n);
    }
    /** Releases the answers held once `n` are. */
    async release(n = 1): Promise<void> {
      await this.held(n);
      for (const open of this.gates.splice(0)) open();
    }
  }

  it('answers the record written, not one read before the write, after the write (neither the old flight nor its store)', async () => {
    const upstream = new HeldRecs();
    const recs = new CachingRecsService(upstream, new MemoryCache());
    const before = recs.getItems([1]);
    const list = recs.recommend('POST_BROWSE', 7);
    await upstream.held(2);
    upstream.names.set(1, 'new');
    await recs.dataChanged([1]);
    const after = recs.getItems([1]);
    await upstream.release(3);
    expect((await before)[0]?.name).toBe('old');
    expect((await list).items?.[0]?.name).toBe('old');
    expect((await after)[0]?.name).toBe('new');
    await recs.flushed();
    // the lookup and the list begun before the write stored nothing that outlives it
    upstream.holding = false;
    expect((await recs.getItems([1]))[0]?.name).toBe('new');
  }, 5_000);
});

describe('an empty write forwarded (CachingIngestService)', () => {
  it('drops nothing after an empty recordEvents or upsertItems, and drops after one with entries', async () => {
    const upstream = new CountingRecs(known);
    const recs = new CachingRecsService(upstream, new MemoryCache());
    let changes = 0;
    const taken: IngestService = {
      recordEvents: (_p, events) => Promise.resolve({ accepted: events.length, itemsWithoutRecord: 0 }),
      upsertItems: (_p, items) => Promise.resolve({ upserted: items.length }),
    };
    const ingest = new CachingIngestService(taken, recs, () => changes++);
    const admin = { authorization: 'Basic x' } as unknown as PrincipalModel;
    await recs.recommend('POST_BROWSE', 10);
    await recs.flushed();
    await ingest.recordEvents(admin, []);
    await ingest.upsertItems(admin, []);
    await recs.recommend('POST_BROWSE', 10);
    expect(upstream.recommendCalls).toBe(1);
    expect(changes).toBe(0);
    await ingest.recordEvents(admin, [{ kind: 'VIEW', itemId: 10, sessionId: 's', userId: null, orderId: null, time: 0 }]);
    await recs.recommend('POST_BROWSE', 10);
    expect(upstream.recommendCalls).toBe(2);
    expect(changes).toBe(1);
  }, 5_000);
});

describe('writes told to the other processes on the shared cache (a change feed)', () => {
  /** Two processes: each its own in-process tier before one shared store, one upstream, one feed between them. */
  async function twoProcesses() {
    const upstream = new CountingRecs(known);
    const shared = new MemoryCache();
    const hub = new MemoryChangeHub();
    const open = async () => {
      const feed = hub.feed();
      const recs = new CachingRecsService(upstream, new TieredCache(shared));
      let heard = 0;
      recs.onOthersChange(() => heard++);
      await recs.follow(feed);
      return { recs, feed, heard: () => heard };
    };
    return { upstream, shared, hub, a: await open(), b: await open() };
  }
  const until = async (done: () => boolean): Promise<void> => {
    while (!done()) await new Promise((r) => setTimeout(r, 5));
  };

  it('a write through one: the other answers its next list and record from upstream, and both share lists again after', async () => {
    const { upstream, a, b } = await twoProcesses();
    await a.recs.recommend('POST_BROWSE', 10);
    await a.recs.getItems([3]);
    await a.recs.flushed();
    await b.recs.recommend('POST_BROWSE', 10);
    await b.recs.getItems([3]);
    expect(upstream.recommendCalls).toBe(1);
    expect(upstream.itemCalls).toEqual([[3]]);

    await a.recs.dataChanged([3]);
    await until(() => b.heard() === 1);
    await b.recs.recommend('POST_BROWSE', 10);
    expect(upstream.recommendCalls).toBe(2);
    await b.recs.getItems([3]);
    expect(upstream.itemCalls).toEqual([[3], [3]]);
    await b.recs.flushed();
    // the list b read after the write is a's too
    await a.recs.recommend('POST_BROWSE', 10);
    expect(upstream.recommendCalls).toBe(2);
    // a is not told of its own write
    expect(a.heard()).toBe(0);
  }, 5_000);

  it('a write while the feed is down: the writer keeps to lists of its own, and tells the others once the feed is back', async () => {
    const { upstream, a, b } = await twoProcesses();
    await b.recs.recommend('POST_BROWSE', 10);
    await b.recs.flushed();
    a.feed.interrupt();
    await a.recs.dataChanged([]);
    await a.recs.recommend('POST_BROWSE', 10);
    expect(upstream.recommendCalls).toBe(2);
    // not told: b answers what it kept (for its TTL, were the feed not back)
    await b.recs.recommend('POST_BROWSE', 10);
    expect(upstream.recommendCalls).toBe(2);
    expect(b.heard()).toBe(0);
    a.feed.resume();
    await until(() => b.heard() === 1);
    await b.recs.recommend('POST_BROWSE', 10);
    expect(upstream.recommendCalls).toBe(3);
  }, 5_000);

  it('a process that was cut off from the feed drops what it kept once it is back: it may have missed a write', async () => {
    const { upstream, a, b } = await twoProcesses();
    await b.recs.recommend('POST_BROWSE', 10);
    await b.recs.getItems([4]);
    await b.recs.flushed();
    b.feed.interrupt();
    await a.recs.dataChanged([4]);
    expect(b.heard()).toBe(0);
    b.feed.resume();
    await until(() => b.heard() === 1);
    await b.recs.recommend('POST_BROWSE', 10);
    await b.recs.getItems([4]);
    expect(upstream.recommendCalls).toBe(2);
    expect(upstream.itemCalls).toEqual([[4], [4]]);
  }, 5_000);

  const version = async (recs: CachingRecsService): Promise<number | null> => (await recs.recommend('POST_BROWSE', 10)).entries[0]!.score;
  /** b keeps a list (version 1), then a write through a: a answers the list read after it (version 2). */
  async function writeAfterRead({ upstream, a, b }: Awaited<ReturnType<typeof twoProcesses>>): Promise<void> {
    upstream.version = 1;
    expect(await version(b.recs)).toBe(1);
    await b.recs.flushed();
    upstream.version = 2;
    await a.recs.dataChanged([]);
    expect(await version(a.recs)).toBe(2);
    await a.recs.flushed();
  }

  it('a count lost (Redis restarted empty): the next write is still followed, by the writer and the others', async () => {
    const processes = await twoProcesses();
    const { shared, hub, a, b } = processes;
    await a.recs.dataChanged([]);
    await a.recs.dataChanged([]);
    await until(() => b.heard() === 2);
    hub.lose();
    shared.forget();
    await until(() => b.heard() === 3);
    await writeAfterRead(processes);
    await until(() => b.heard() === 4);
    expect(await version(b.recs)).toBe(2);
  }, 5_000);

  it('a notice with a count no gateway took (999999999999999): the writes after it are still followed, by the writer and the others', async () => {
    const processes = await twoProcesses();
    const { upstream, hub, a, b } = processes;
    hub.forge({ writes: 999_999_999_999_999, itemIds: [] });
    await until(() => a.heard() === 1 && b.heard() === 1);
    await writeAfterRead(processes);
    // b follows too, once it has checked the count (the notice's is below the one it followed)
    for (let answer = await version(b.recs); answer !== 2; answer = await version(b.recs)) await new Promise((r) => setTimeout(r, 5));
    // and both share lists again
    const calls = upstream.recommendCalls;
    await a.recs.recommend('POST_BROWSE', 10);
    await b.recs.recommend('POST_BROWSE', 10);
    expect(upstream.recommendCalls).toBe(calls);
  }, 5_000);

  it('a space checked while another forged count arrives: the write after it checks that one too, not only the first', async () => {
    const upstream = new CountingRecs(known);
    const shared = new MemoryCache();
    const hub = new MemoryChangeHub();
    const hubFeed = hub.feed();
    // a's reads of the count wait for the gate
    let open: () => void = () => undefined;
    let gate: Promise<void> = Promise.resolve();
    const held: ChangeFeed = { ...hubFeed, current: async () => (await gate, hubFeed.current()) };
    const a = new CachingRecsService(upstream, new TieredCache(shared));
    let heard = 0;
    a.onOthersChange(() => heard++);
    await a.follow(held);
    const b = new CachingRecsService(upstream, new TieredCache(shared));
    await b.follow(hub.feed());
    hub.forge({ writes: 100, itemIds: [] });
    await until(() => heard === 1);
    gate = new Promise((resolve) => (open = resolve));
    // counted 1, below a's 100: a checks the count (held)
    await b.dataChanged([]);
    await until(() => heard === 2);
    hub.forge({ writes: 200, itemIds: [] });
    await until(() => heard === 3);
    upstream.version = 1;
    expect(await version(a)).toBe(1);
    await a.flushed();
    upstream.version = 2;
    const writing = a.dataChanged([]);
    open();
    await writing;
    expect(await version(a)).toBe(2);
  }, 5_000);

  it('writes while the feed is failing are not held by it: the first is tried, the next are left to the retry (resync)', async () => {
    const upstream = new CountingRecs(known);
    const hubFeed = new MemoryChangeHub().feed();
    // the first announce fails (a Redis that timed out); the next never answer (frozen)
    let announces = 0;
    const freezing: ChangeFeed = { ...hubFeed, announce: () => (announces++ === 0 ? Promise.resolve(null) : new Promise<null>(() => undefined)) };
    const a = new CachingRecsService(upstream, new TieredCache(new MemoryCache()));
    await a.follow(freezing);
    await a.dataChanged([]);
    upstream.version = 1;
    expect(await version(a)).toBe(1);
    await a.flushed();
    upstream.version = 2;
    await a.dataChanged([3]);
    expect(await version(a)).toBe(2);
    a.unfollow();
  }, 5_000);

  it('a record another process read before a write and stored after the writer deleted it, before it heard: deleted again when it hears', async () => {
    const names = new Map([[3, 'old']]);
    let release: () => void = () => undefined;
    let asked = 0;
    // read when asked, answered when released
    const upstream: RecsService = {
      getItems: async (ids) => {
        asked++;
        const read = ids.map((id) => ({ itemId: id, name: names.get(id)!, attributes: [] }));
        await new Promise<void>((resolve) => (release = resolve));
        return read;
      },
      recommend: () => Promise.reject(new Error('not asked')),
    };
    const shared = new MemoryCache();
    const hub = new MemoryChangeHub();
    const a = new CachingRecsService(upstream, new TieredCache(shared));
    await a.follow(hub.feed());
    // b hears of writes when the test says
    const bFeed = hub.feed();
    const held: ChangeNotice[] = [];
    let hear: (change: ChangeNotice) => void = () => undefined;
    const holding: ChangeFeed = { ...bFeed, listen: (notice, connected) => ((hear = notice), bFeed.listen((change) => held.push(change), connected)) };
    const b = new CachingRecsService(upstream, new TieredCache(shared));
    await b.follow(holding);
    const reading = b.getItems([3]);
    await until(() => asked === 1);
    names.set(3, 'new');
    await a.dataChanged([3]);
    release();
    expect(await reading).toEqual([{ itemId: 3, name: 'old', attributes: [] }]);
    await b.flushed();
    for (const change of held.splice(0)) hear(change);
    await new Promise((resolve) => setImmediate(resolve));
    const after = a.getItems([3]);
    // asked again (the fix), or answered from the shared cache
    await Promise.race([after, until(() => asked === 2)]);
    release();
    expect(await after).toEqual([{ itemId: 3, name: 'new', attributes: [] }]);
  }, 5_000);

  it("a write whose records' delete did not reach Redis (the cache skips it within its back-off): they go with the count, and no process answers the old ones", async () => {
    const prefix = testPrefix();
    const upstream = new CountingRecs(known);
    const opened: (() => Promise<void>)[] = [];
    const open = async () => {
      const redis = new RedisCache({ url: REDIS_URL, keyPrefix: prefix, commandTimeoutMs: 10_000 });
      // what RedisCache does with a delete for a second after a command of its failed (a Redis slower than 100 ms)
      const skipping: SharedCache = {
        stats: redis.stats,
        getMany: (keys) => redis.getMany(keys),
        setMany: (entries) => redis.setMany(entries),
        delete: () => Promise.resolve(),
        check: () => redis.check(),
        close: () => redis.close(),
      };
      const feed = new RedisChangeFeed({ url: REDIS_URL, keyPrefix: prefix, commandTimeoutMs: 10_000 });
      const recs = new CachingRecsService(upstream, new TieredCache(skipping));
      let heard = 0;
      recs.onOthersChange(() => heard++);
      await recs.follow(feed, 10_000);
      opened.push(async () => {
        recs.unfollow();
        await feed.close();
        await redis.close();
      });
      return { recs, heard: () => heard };
    };
    try {
      const a = await open();
      const b = await open();
      await a.recs.getItems([3]);
      await a.recs.flushed();
      await b.recs.getItems([3]);
      expect(upstream.itemCalls).toEqual([[3]]);
      await a.recs.dataChanged([3]);
      await until(() => b.heard() === 1);
      await b.recs.getItems([3]);
      expect(upstream.itemCalls).toEqual([[3], [3]]);
      await b.recs.flushed();
      // the writer's next read: the record read after the write, b's
      await a.recs.getItems([3]);
      expect(upstream.itemCalls).toEqual([[3], [3]]);
    } finally {
      for (const close of opened) await close();
      await drainPrefix(prefix);
    }
  }, 20_000);
});
