import { randomBytes } from 'node:crypto';
import type { SharedCache } from '../ports/cache.js';
import type { ChangeFeed, ChangeNotice } from '../ports/changeFeed.js';

export const itemKey = (id: number): string => `item:${id}`;

/** Untold writes' item ids kept at most; past it their records follow after their TTL. */
const MAX_UNTOLD = 10_000;

export interface KeptInProcess {
  forgetItems(itemIds: readonly number[]): void;
  forgetAll(): void;
  storedHere(itemIds: readonly number[]): number[];
}

/** The key space REST-mode lists are kept in, moved by every write forwarded here or heard on the
 * change feed: shared `recs:w<n>:` after the n-th write, else a space of this process's own. */
export class ListSpaces {
  writes = 0;
  space = 'recs:';
  private readonly spacePrefix = randomBytes(6).toString('hex');
  private sharedWrites: number | null = 0;
  private feed: ChangeFeed | null = null;
  private untold: Set<number> | 'many' | null = null;
  private resyncTimer: NodeJS.Timeout | undefined;
  private everSynced = false;
  private checking: { space: number | null; done: Promise<void> } | null = null;
  private synced: () => void = () => undefined;
  private readonly changeListeners: (() => void)[] = [];

  constructor(
    private readonly cache: SharedCache,
    private readonly kept: KeptInProcess,
  ) {}

  /** A forwarded write was taken upstream: its records are deleted and lists move to a new space. With
   * a feed every other process does the same; without, theirs last their TTLs. */
  async written(itemIds: readonly number[]): Promise<void> {
    this.writes++;
    this.kept.forgetItems(itemIds);
    if (this.feed !== null) {
      // while the feed fails, this write goes later with the others: a frozen Redis would
      // add its command timeout to every write
      const failing = this.untold !== null;
      this.addUntold(itemIds);
      if (!failing) return this.tell();
    }
    this.moveTo(null);
    await this.cache.delete(itemIds.map(itemKey));
  }

  /** Announces writes on `feed` and follows others'; until it connects, lists stay in a space of our own. */
  follow(feed: ChangeFeed, waitMs = 2000): Promise<void> {
    this.feed = feed;
    this.moveTo(null);
    // resolved once the shared space is taken up, or after waitMs: a down store must not stop the start
    const synced = new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, waitMs);
      this.synced = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    feed.listen((change) => this.heard(change), () => void this.resync());
    return synced;
  }

  unfollow(): void {
    clearTimeout(this.resyncTimer);
    this.feed = null;
  }

  onOthersChange(listener: () => void): void {
    this.changeListeners.push(listener);
  }

  private moveTo(shared: number | null): void {
    this.sharedWrites = shared;
    this.space = shared === null ? `recs:${this.spacePrefix}.${this.writes}:` : shared === 0 ? 'recs:' : `recs:w${shared}:`;
  }

  private addUntold(itemIds: readonly number[]): void {
    if (this.untold === 'many') return;
    this.untold ??= new Set();
    for (const id of itemIds) this.untold.add(id);
    if (this.untold.size > MAX_UNTOLD) this.untold = 'many';
  }

  /** Deletes the untold writes' records, then tells the others; while the feed is down, a space of our own. */
  private async tell(): Promise<void> {
    const untold = this.untold;
    if (untold === null || this.feed === null) return;
    this.untold = null;
    const itemIds = untold === 'many' ? [] : [...untold];
    const keys = itemIds.map(itemKey);
    // both tiers; in the shared one again with the count, since the cache skips a store it found slow
    await this.cache.delete(keys);
    const told = await this.feed.announce(itemIds, keys);
    if (told === null) {
      if (untold === 'many') this.untold = 'many';
      else this.addUntold(itemIds);
      this.moveTo(null);
      this.resyncSoon();
      return;
    }
    const space = this.sharedWrites;
    this.moveTo(Math.max(told, space ?? 0));
    // not answered from a space above this write's count until that count is known real
    if (space !== null && told < space) await this.checkSpace();
  }

  private resyncSoon(): void {
    clearTimeout(this.resyncTimer);
    if (this.feed !== null) this.resyncTimer = setTimeout(() => void this.resync(), 1000).unref();
  }

  private heard(change: ChangeNotice): void {
    this.writes++;
    // a record we stored may have been read before the other's write and stored after its delete:
    // deleted again, after that store (one connection, in order)
    const stored = this.kept.storedHere(change.itemIds).map(itemKey);
    this.kept.forgetItems(change.itemIds);
    this.cache.forgetLocal?.(change.itemIds.map(itemKey));
    if (stored.length > 0) void this.cache.delete(stored);
    const space = this.sharedWrites;
    this.moveTo(space === null ? null : Math.max(space, change.writes));
    for (const listener of this.changeListeners) listener();
    if (space !== null && change.writes < space) void this.checkSpace();
  }

  /** A write counted below the followed space (Redis lost its count, a forged notice): kept, the space
   * would never move again. Rereads the count and drops what is kept when it is below. */
  private checkSpace(): Promise<void> {
    const space = this.sharedWrites;
    if (this.checking?.space === space) return this.checking.done;
    const done = this.checkSpaceNow(space).finally(() => {
      if (this.checking?.done === done) this.checking = null;
    });
    this.checking = { space, done };
    return done;
  }

  private async checkSpaceNow(space: number | null): Promise<void> {
    const feed = this.feed;
    if (feed === null || space === null) return;
    const now = await feed.current();
    if (this.feed !== feed || this.sharedWrites !== space) return;
    if (now === null) {
      this.moveTo(null);
      return this.resyncSoon();
    }
    if (now >= space) return;
    this.dropKept(now);
    for (const listener of this.changeListeners) listener();
  }

  private dropKept(shared: number): void {
    this.writes++;
    this.kept.forgetAll();
    this.cache.forgetLocal?.();
    this.moveTo(shared);
  }

  /** The feed (re)connected and notices may have been missed: tell untold writes, and resync to the shared count. */
  private async resync(): Promise<void> {
    const feed = this.feed;
    if (feed === null) return;
    clearTimeout(this.resyncTimer);
    const space = this.sharedWrites;
    const now = await feed.current();
    if (this.feed !== feed) return;
    if (now === null) return this.resyncSoon();
    if (this.untold !== null) {
      await this.tell();
      if (this.untold !== null) return;
    } else if (this.sharedWrites === now) {
      return this.synced();
    }
    // a space above the count (Redis lost it) would never move again
    this.dropKept(this.sharedWrites === space ? now : Math.max(now, this.sharedWrites ?? 0));
    // the first time nothing was answered yet: the gateway waits for follow before serving
    if (this.everSynced) for (const listener of this.changeListeners) listener();
    this.everSynced = true;
    this.synced();
  }
}
