import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { MemoryChangeHub, RedisChangeFeed } from '../../src/cache/changeFeed.js';
import type { ChangeFeed, ChangeNotice } from '../../src/ports/changeFeed.js';
import { drainPrefix, REDIS_URL, testPrefix } from '../helpers/redis.js';

/**
 * The change feed REST-mode gateways tell each other of writes on (src/ports/changeFeed.ts): one
 * suite, run against the in-process hub and against real Redis (a key prefix of its own).
 */
interface Listened {
  feed: ChangeFeed;
  heard: ChangeNotice[];
  connections: number;
  /** Resolves once the feed has connected `n` times in all. */
  connected(n: number): Promise<void>;
  /** Resolves once `n` notices have been heard in all. */
  hearing(n: number): Promise<void>;
}

function listened(feed: ChangeFeed): Listened {
  const waiting: (() => void)[] = [];
  const result: Listened = {
    feed,
    heard: [],
    connections: 0,
    connected: (n) => until(() => result.connections >= n),
    hearing: (n) => until(() => result.heard.length >= n),
  };
  // bounded by the test's timeout; checked at every notice or connection, never by a clock
  const until = (done: () => boolean): Promise<void> =>
    new Promise((resolve) => {
      const check = (): void => (done() ? resolve() : void waiting.push(check));
      check();
    });
  const wake = (): void => {
    for (const check of waiting.splice(0)) check();
  };
  feed.listen(
    (change) => {
      result.heard.push(change);
      wake();
    },
    () => {
      result.connections += 1;
      wake();
    },
  );
  return result;
}

interface Implementation {
  name: string;
  open(): ChangeFeed;
  /** Cuts the feed off from the others; it connects again by itself or with `resume`. */
  interrupt(feed: ChangeFeed): Promise<void>;
  resume(feed: ChangeFeed): void;
  cleanUp(): Promise<void>;
}

const hub = new MemoryChangeHub();
const prefix = testPrefix();
const memory: Implementation = {
  name: 'in process',
  open: () => hub.feed(),
  interrupt: (feed) => Promise.resolve((feed as ReturnType<MemoryChangeHub['feed']>).interrupt()),
  resume: (feed) => (feed as ReturnType<MemoryChangeHub['feed']>).resume(),
  cleanUp: () => Promise.resolve(),
};
const redis: Implementation = {
  name: 'Redis',
  // 10 s a command: on a busy machine a count read past 100 ms would read as Redis down
  open: () => new RedisChangeFeed({ url: REDIS_URL, keyPrefix: prefix, commandTimeoutMs: 10_000 }),
  async interrupt(feed) {
    // the feed's subscription connection, found by the name it gives itself, killed by id: no other client is touched
    const admin = new Redis(REDIS_URL);
    try {
      const sender = (feed as unknown as { sender: string }).sender;
      const clients = (await admin.client('LIST')) as string;
      const line = clients.split('\n').find((l) => l.includes(`name=recs-gateway-changes-${sender}`));
      expect(line).toBeDefined();
      await admin.client('KILL', 'ID', /id=(\d+)/.exec(line!)![1]!);
    } finally {
      admin.disconnect();
    }
  },
  resume: () => undefined,
  cleanUp: async () => {
    await drainPrefix(prefix);
  },
};

describe.each([memory, redis])('the change feed ($name)', (impl) => {
  const feeds: ChangeFeed[] = [];
  const open = (): Listened => {
    const feed = impl.open();
    feeds.push(feed);
    return listened(feed);
  };
  afterAll(async () => {
    for (const feed of feeds) await feed.close();
    await impl.cleanUp();
  });

  it('tells every other feed of a write, in order, with its items and count; never the feed that wrote', async () => {
    const [a, b, c] = [open(), open(), open()];
    await Promise.all([a.connected(1), b.connected(1), c.connected(1)]);
    const before = await a.feed.current();
    expect(before).not.toBeNull();
    const first = await a.feed.announce([31000005, 31000012]);
    const second = await b.feed.announce([]);
    expect(first).toBe(before! + 1);
    expect(second).toBe(before! + 2);
    expect(await c.feed.current()).toBe(second);
    await Promise.all([a.hearing(1), b.hearing(1), c.hearing(2)]);
    expect(c.heard.map(({ writes, itemIds }) => ({ writes, itemIds }))).toEqual([{ writes: first, itemIds: [31000005, 31000012] }, { writes: second, itemIds: [] }]);
    expect(a.heard).toEqual([expect.objectContaining({ writes: second })]);
    expect(b.heard).toEqual([expect.objectContaining({ writes: first })]);
  }, 20_000);

  it('says so when it is connected again after an interruption, so that its listener can read the count', async () => {
    const [a, b] = [open(), open()];
    await Promise.all([a.connected(1), b.connected(1)]);
    await impl.interrupt(b.feed);
    await a.feed.announce([31000005]);
    impl.resume(b.feed);
    await b.connected(2);
    expect(await b.feed.current()).toBe(await a.feed.current());
    // and hears what comes after
    const next = await a.feed.announce([]);
    await until(() => b.heard.some((n) => n.writes === next));
  }, 20_000);
});

describe('the Redis change feed, with what else may be on its channel', () => {
  const channelPrefix = testPrefix();
  afterAll(() => drainPrefix(channelPrefix));

  it('ignores messages that are not notices, and goes on hearing those that are', async () => {
    const feed = new RedisChangeFeed({ url: REDIS_URL, keyPrefix: channelPrefix, commandTimeoutMs: 10_000 });
    const writer = new RedisChangeFeed({ url: REDIS_URL, keyPrefix: channelPrefix, commandTimeoutMs: 10_000 });
    const other = new Redis(REDIS_URL);
    try {
      const b = listened(feed);
      const w = listened(writer);
      await Promise.all([b.connected(1), w.connected(1)]);
      const channel = `${channelPrefix}changes`;
      for (const junk of ['', 'x', 'x 1', 'x one 1', 'x 1 1,2,three', 'x 1 -5', 'x 1 1.5', `x 1 ${'1,'.repeat(10_001)}1`, 'x 1 1 extra', 'x 99999999999999999999 1']) {
        await other.publish(channel, junk);
      }
      const told = await writer.announce([7]);
      await b.hearing(1);
      expect(b.heard).toEqual([expect.objectContaining({ writes: told, itemIds: [7] })]);
    } finally {
      other.disconnect();
      await feed.close();
      await writer.close();
    }
  }, 20_000);
});

/** Polls a condition every 20 ms (bounded by the test's timeout). */
async function until(done: () => boolean): Promise<void> {
  while (!done()) await new Promise((resolve) => setTimeout(resolve, 20));
}
