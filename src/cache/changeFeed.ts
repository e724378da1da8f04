import { randomBytes } from 'node:crypto';
import { Cluster, type Redis, type RedisOptions } from 'ioredis';
import type { ChangeFeed, ChangeNotice } from '../ports/changeFeed.js';
import { connectRedis, type RedisClient, type RedisConnectOptions } from './redis.js';

const MAX_NOTICE_ITEMS = 10_000;
const MAX_NOTICE_CHARS = 64 + MAX_NOTICE_ITEMS * 17;

/** Deletes the stale entries, counts the write and publishes its notice in one step, so notices go out
 * in count order and a count never comes without its notice or deletes. On a cluster the stale keys
 * lie in other slots: they are deleted first, and the script gets the count's key alone. */
const ANNOUNCE = `
for i = 2, #KEYS do redis.call('DEL', KEYS[i]) end
local n = redis.call('INCR', KEYS[1])
redis.call('PUBLISH', ARGV[1], ARGV[2] .. ' ' .. n .. ' ' .. ARGV[3])
return n`;

/** `<sender> <count> <ids>`; null for anything else: nothing on the channel is trusted to be ours. */
function parseNotice(message: string): (ChangeNotice & { sender: string }) | null {
  // refused before it is split: a huge message on the channel would balloon the heap
  if (message.length > MAX_NOTICE_CHARS) return null;
  const [sender, count, ids, extra] = message.split(' ');
  if (sender === undefined || count === undefined || ids === undefined || extra !== undefined || !/^\d{1,15}$/.test(count)) return null;
  const itemIds = ids === '' ? [] : ids.split(',').map(Number);
  if (itemIds.length > MAX_NOTICE_ITEMS || !itemIds.every((id) => Number.isSafeInteger(id) && id > 0)) return null;
  return { sender, writes: Number(count), itemIds };
}

/** The change feed over Redis: a counter and a pub/sub channel. Redis trouble is never a request's: an
 * unannounced write is answered anyway, and a lost subscription resumes (listener rereads the count). */
export class RedisChangeFeed implements ChangeFeed {
  private readonly commands: RedisClient & { announceChange(...keysThenArgs: (number | string)[]): Promise<number> };
  private subscriber: Redis;
  private readonly channel: string;
  private readonly sender = randomBytes(8).toString('hex');
  private closed = false;
  private retry: NodeJS.Timeout | undefined;
  private seedIndex = 0;
  private listener: { notice: (change: ChangeNotice) => void; connected: () => void } | null = null;

  constructor(private readonly options: RedisConnectOptions) {
    const keyPrefix = options.keyPrefix ?? 'recs-gateway:';
    // a channel is not a key: ioredis does not prefix it
    this.channel = `${keyPrefix}changes`;
    this.commands = connectRedis(options) as RedisChangeFeed['commands'];
    this.commands.defineCommand('announceChange', { lua: ANNOUNCE });
    this.subscriber = this.openSubscriber();
  }

  /** Subscribed again by hand on each (re)connection, so the listener hears once the subscription holds.
   * Every node of a cluster hears every PUBLISH: one connection to one seed, the next when it is gone. */
  private openSubscriber(): Redis {
    const overrides: RedisOptions = { autoResubscribe: false, connectionName: `recs-gateway-changes-${this.sender}` };
    const seeds = this.options.cluster;
    if (seeds === undefined) return connectRedis(this.options, overrides) as Redis;
    const url = seeds[this.seedIndex++ % seeds.length]!;
    const subscriber = connectRedis(
      { ...this.options, cluster: undefined, url },
      { ...overrides, retryStrategy: (attempt) => (attempt > 3 && seeds.length > 1 ? null : Math.min(100 * attempt, 1000)) },
    ) as Redis;
    subscriber.once('end', () => {
      if (this.closed) return;
      this.subscriber = this.openSubscriber();
      this.wire();
    });
    return subscriber;
  }

  async current(): Promise<number | null> {
    try {
      return Number((await this.commands.get('changes')) ?? 0);
    } catch {
      return null;
    }
  }

  async announce(itemIds: readonly number[], staleKeys: readonly string[] = []): Promise<number | null> {
    try {
      let inScript = staleKeys;
      if (this.commands instanceof Cluster) {
        await Promise.all(staleKeys.map((key) => this.commands.del(key)));
        inScript = [];
      }
      return await this.commands.announceChange(1 + inScript.length, 'changes', ...inScript, this.channel, this.sender, itemIds.join(','));
    } catch {
      return null;
    }
  }

  listen(notice: (change: ChangeNotice) => void, connected: () => void): void {
    this.listener = { notice, connected };
    this.wire();
  }

  private wire(): void {
    const listener = this.listener;
    const subscriber = this.subscriber;
    if (listener === null) return;
    subscriber.on('message', (channel: string, message: string) => {
      if (channel !== this.channel) return;
      const parsed = parseNotice(message);
      if (parsed !== null && parsed.sender !== this.sender) listener.notice(parsed);
    });
    const subscribe = (): void => {
      clearTimeout(this.retry);
      if (this.closed || subscriber !== this.subscriber || subscriber.status !== 'ready') return;
      subscriber.subscribe(this.channel).then(listener.connected, () => {
        this.retry = setTimeout(subscribe, 1000).unref();
      });
    };
    subscriber.on('ready', subscribe);
    subscribe();
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retry);
    this.subscriber.disconnect();
    this.commands.disconnect();
    await Promise.resolve();
  }
}

/** The change feed of gateways in one process (tests); `interrupt` stands for a lost connection. */
export class MemoryChangeHub {
  private writes = 0;
  private readonly feeds = new Set<MemoryChangeFeed>();

  /** Redis restarted empty or evicted the count: it starts over, and every feed reconnects. */
  lose(): void {
    this.writes = 0;
    for (const feed of this.feeds) feed.resume();
  }

  /** A notice no gateway sent: every feed hears it. */
  forge(change: ChangeNotice): void {
    for (const feed of this.feeds) feed.deliver(change);
  }

  feed(): ChangeFeed & { interrupt(): void; resume(): void } {
    let listener: { notice: (change: ChangeNotice) => void; connected: () => void } | undefined;
    let up = true;
    const feed: MemoryChangeFeed = {
      current: () => Promise.resolve(up ? this.writes : null),
      announce: (itemIds) => {
        if (!up) return Promise.resolve(null);
        const change = { writes: ++this.writes, itemIds: [...itemIds] };
        for (const other of this.feeds) if (other !== feed) other.deliver(change);
        return Promise.resolve(change.writes);
      },
      listen: (notice, connected) => {
        listener = { notice, connected };
        queueMicrotask(connected);
      },
      deliver: (change) => {
        if (up && listener) queueMicrotask(() => listener?.notice(change));
      },
      interrupt: () => {
        up = false;
      },
      resume: () => {
        up = true;
        if (listener) queueMicrotask(listener.connected);
      },
      close: () => {
        this.feeds.delete(feed);
        return Promise.resolve();
      },
    };
    this.feeds.add(feed);
    return feed;
  }
}

interface MemoryChangeFeed extends ChangeFeed {
  deliver(change: ChangeNotice): void;
  interrupt(): void;
  resume(): void;
}
