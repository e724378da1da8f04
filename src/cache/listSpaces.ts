import { randomBytes } from 'node:crypto';
import type { SharedCache } from '../ports/cache.js';
import type { ChangeFeed, ChangeNotice } from '../ports/changeFeed.js';

export const itemKey = (id: number): string => `item:${id}`;

/** Item ids of writes not yet told to other processes kept at most; past it their records follow after their TTL. */
const MAX_UNTOLD = 10_000;

/** What ListSpaces asks of the cache whose lists it keys (CachingRecsService). */
export interface KeptInProcess {
  /** Forgets what is kept in process of these items, apart from the cache (a write changed them). */
  forgetItems(itemIds: readonly number[]): void;
  /** Forgets everything kept in process, apart from the cache (a write may have been missed). */
  forgetAll(): void;
  /** Of these items, those this process stored in the shared cache itself, lately. */
  storedHere(itemIds: readonly number[]): number[];
}

/**
 * The key space a REST-mode gateway keeps recommendation lists in, and the writes that move it:
 * those forwarded by this process (written) and, with a change feed (follow), those every other
 * process on the same shared cache announces. Lists are kept under `space`
 * (`<space><kind>:<anchor>`): `recs:` before any write; then, where a change feed tells every
 * process of each write, `recs:w<n>:` after the n-th (shared by every process that heard of it: a
 * list kept there was read after that write); else a space of this process's own for each write
 * (`recs:<random>.<writes>:`), which a restart or another process never takes up with older
 * lists in it. `writes` counts the writes forwarded here or heard of: a read begun before one
 * keeps nothing it read.
 */
export class ListSpaces {
  writes = 0;
  space = 'recs:';
  private readonly spacePrefix = randomBytes(6).toString('hex');
  /** The shared count of writes the space follows; null while in a space of this process's own. */
  private sharedWrites: number | null = 0;
  private feed: ChangeFeed | null = null;
  /** Item ids of this process's writes not yet told to the others (the feed was down); 'many' past MAX_UNTOLD. */
  private untold: Set<number> | 'many' | null = null;
  private resyncTimer: NodeJS.Timeout | undefined;
  private everSynced = false;
  /** The check of the space's count under way (checkSpace), and the space it checks. */
  private checking: { space: number | null; done: Promise<void> } | null = null;
  /** Settles follow()'s promise. */
  private synced: () => void = () => undefined;
  private readonly changeListeners: (() => void)[] = [];

  constructor(
    private readonly cache: SharedCache,
    private readonly kept: KeptInProcess,
  ) {}

  /**
   * A write this process forwarded was taken upstream: every list it kept may have changed, and
   * so may the records of `itemIds`. The records are deleted, in both tiers; lists are read from
   * a new key space from now on (the old entries expire by their TTL). With a change feed (follow)
   * every other process is told, and does the same before it answers from its caches again;
   * without one, or while its store is down, another process on the same shared cache keeps its
   * lists and records for their TTLs.
   */
  async written(itemIds: readonly number[]): Promise<void> {
    this.writes++;
    this.kept.forgetItems(itemIds);
    if (this.feed !== null) {
      // while the feed fails (resync tries it again), this write goes with the others then, not
      // waited for here: a frozen Redis would add its command timeout to every write
      const failing = this.untold !== null;
      this.addUntold(itemIds);
      if (!failing) return this.tell();
    }
    this.moveTo(null);
    await this.cache.delete(itemIds.map(itemKey));
  }

  /**
   * From now on every write this process forwards is announced on `feed`, and every write another
   * process announces there is followed here as if forwarded here (listeners called: the response
   * cache). Until the feed has connected, lists are kept in a space of this process's own.
   */
  follow(feed: ChangeFeed, waitMs = 2000): Promise<void> {
    this.feed = feed;
    this.moveTo(null);
    // resolved once the shared space is taken up, or after waitMs (the feed's store is down: the start goes on)
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

  /** Stops following the feed (its owner closes it). */
  unfollow(): void {
    clearTimeout(this.resyncTimer);
    this.feed = null;
  }

  /** `listener` is called after each write another process announced (follow). */
  onOthersChange(listener: () => void): void {
    this.changeListeners.push(listener);
  }

  /** Lists' key space: the shared one after `shared` writes, or (null) one of this process's own. */
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

  /**
   * Deletes the records of the writes not yet told, then tells the other processes (one notice
   * for all of them): the shared space after it. If the feed is down, this process keeps to a
   * space of its own until it is back (resync tells them then): the shared space may hold lists
   * read before its writes.
   */
  private async tell(): Promise<void> {
    const untold = this.untold;
    if (untold === null || this.feed === null) return;
    this.untold = null;
    const itemIds = untold === 'many' ? [] : [...untold];
    const keys = itemIds.map(itemKey);
    // both tiers; in the shared one again with the count (the cache skips a store it found slow lately)
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
    // not answered from a space kept at a count above this write's until it is known to be a real one
    if (space !== null && told < space) await this.checkSpace();
  }

  /** resync in a second: the feed's store did not answer (down, or slower than its command timeout). */
  private resyncSoon(): void {
    clearTimeout(this.resyncTimer);
    if (this.feed !== null) this.resyncTimer = setTimeout(() => void this.resync(), 1000).unref();
  }

  /** Another process announced a write: followed as one forwarded here. */
  private heard(change: ChangeNotice): void {
    this.writes++;
    // the other process deleted the records from the shared tier before it told; one this process
    // stored may have been read before the write and stored after that delete (it had not heard
    // yet): deleted again, after that store (one connection, in order)
    const stored = this.kept.storedHere(change.itemIds).map(itemKey);
    this.kept.forgetItems(change.itemIds);
    this.cache.forgetLocal?.(change.itemIds.map(itemKey));
    if (stored.length > 0) void this.cache.delete(stored);
    const space = this.sharedWrites;
    this.moveTo(space === null ? null : Math.max(space, change.writes));
    for (const listener of this.changeListeners) listener();
    if (space !== null && change.writes < space) void this.checkSpace();
  }

  /**
   * A write was counted below the space followed here: another taken after it and heard of first,
   * or a space no write was counted to (Redis lost its count, restarted empty; a notice on the
   * channel that no gateway sent). Kept, the space would never move again: every later write
   * counted below it, and lists read before them answered after them. Asks the count: when it is
   * below the space, everything kept in process is dropped and the space follows the count again;
   * when it cannot be read, lists are kept in a space of this process's own until resync. One
   * check of a space at a time.
   */
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
    // moved meanwhile (a count heard, a resync): that move stands
    if (this.feed !== feed || this.sharedWrites !== space) return;
    if (now === null) {
      this.moveTo(null);
      return this.resyncSoon();
    }
    if (now >= space) return;
    this.dropKept(now);
    for (const listener of this.changeListeners) listener();
  }

  /** Everything kept in process dropped (a write may have been missed), the lists' space at the shared count `shared`. */
  private dropKept(shared: number): void {
    this.writes++;
    this.kept.forgetAll();
    this.cache.forgetLocal?.();
    this.moveTo(shared);
  }

  /**
   * The feed (re)connected: notices sent while it was not may have been missed. This process's
   * untold writes are told, and unless the shared count is the one followed here, everything kept
   * in process is dropped and the shared space taken up at that count. Tried again each second
   * while the count cannot be read or the writes cannot be told.
   */
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
    // the count, unless a count was heard or taken meanwhile: a space above the count (Redis lost it) would never move again
    this.dropKept(this.sharedWrites === space ? now : Math.max(now, this.sharedWrites ?? 0));
    // the first time, nothing was answered yet (follow is waited for before the gateway serves)
    if (this.everSynced) for (const listener of this.changeListeners) listener();
    this.everSynced = true;
    this.synced();
  }
}
