import { randomBytes } from 'node:crypto';
import { DEFAULT_CACHE_TTL_SECONDS } from '../config/defaults.js';
import { GatewayError, ErrorCode, notFound } from '../errors.js';
import type {
  CallOptions,
  EventInputModel,
  IngestService,
  ItemModel,
  PrincipalModel,
  RecordEventsResultModel,
  RecommendationKind,
  RecommendationListModel,
  RecsService,
  UpsertItemsResultModel,
} from '../ports/backend.js';
import type { CacheEntry, SharedCache } from '../ports/cache.js';
import type { ChangeFeed, ChangeNotice } from '../ports/changeFeed.js';

export interface CachingOptions {
  /** Seconds an item stays cached; default 300 (CACHE_ITEM_TTL_SECONDS). */
  itemTtlSeconds?: number;
  /** Seconds a recommendation list stays cached; default 300 (CACHE_RECS_TTL_SECONDS). */
  recsTtlSeconds?: number;
  /** Seconds an unknown item or anchor is remembered as unknown, at most 60; default 30. */
  negativeTtlSeconds?: number;
  /** Each TTL is stretched by up to this fraction at random, so entries written together do not expire together; default 0.1. */
  jitter?: number;
  /** The clock of the items stored lately (see CachingRecsService.storedAt), in ms; default Date.now. */
  now?: () => number;
}

/** Items remembered as stored lately, at most; past it the memory starts over (a few MB). */
const STORED_AT_MAX = 100_000;
/** Parsed items kept for their cached text (see CachingRecsService.parsed), at most (tens of MB). */
const PARSED_MAX = 10_000;
/** Item ids of writes not yet told to other processes kept at most; past it their records follow after their TTL. */
const MAX_UNTOLD = 10_000;

/** What is kept for a list: ids and reasons only; items are kept once each, shared by every list. */
type StoredList = Omit<RecommendationListModel, 'items'> | { notFound: true };

const NOT_FOUND = 'null';

/** The cache writes asked for in one turn (see CachingRecsService.writeBehind). */
interface WriteBatch {
  makers: (() => CacheEntry[])[];
  /** Called once the batch is stored (or failed to be), before `written` settles. */
  stored: (() => void)[];
  written: Promise<void>;
}

/** What a load gave, and the cache write it started (settled once the data is stored). */
interface Loaded<T> {
  items: T;
  written: Promise<void> | undefined;
}

/** Ends a flight once its data is in the cache too (see writeBehind), or at once if the load failed. */
function endOnceStored(loading: Promise<Loaded<unknown>>, end: () => void): void {
  loading.then((loaded) => loaded.written, () => undefined).finally(end).catch(() => undefined);
}

export const itemKey = (id: number): string => `item:${id}`;

/**
 * A RecsService in front of another, keeping items by id and recommendation lists by kind and
 * anchor in the shared cache. Items are stored once, so post-browse, next-best-product and
 * lookups share them; unknown ids are remembered briefly; concurrent misses for one key in one
 * process share one call. Nothing user-specific passes through here.
 */
export class CachingRecsService implements RecsService {
  private readonly itemTtl: number;
  private readonly recsTtl: number;
  private readonly negativeTtl: number;
  private readonly jitter: number;
  private readonly itemsInFlight = new Map<number, Promise<ItemModel | null>>();
  /**
   * The items of lists fetched and not yet stored: answered from here, as if in flight. Kept as
   * they are, not as settled promises in itemsInFlight: a promise each for ten items a cold list,
   * nearly all of which nobody asks for before they are stored.
   */
  private readonly listedItems = new Map<number, ItemModel>();
  private readonly listsInFlight = new Map<string, Promise<RecommendationListModel>>();
  private readonly pendingWrites = new Set<Promise<void>>();
  /** The writes of this turn, stored together once it is over (see writeBehind). */
  private writing: WriteBatch | undefined;
  /**
   * When this process last stored each item (ms). A list's items are not stored again within half
   * their TTL of that: a cold list's items are mostly popular ones already cached (97% of them in
   * bench scenario 5), and serialising and storing them again was 6 to 8% of a cold request's
   * CPU. An item is never older than its TTL either way; a newer copy the upstream sent meanwhile
   * waits for the next store. Lookups (getItems) store what they fetched always: they were misses.
   */
  private readonly storedAt = new Map<number, number>();
  /**
   * The item each id's cached text was last parsed from or serialised to. A hit whose text is
   * that same text (the memory cache hands back the very string stored) is answered with the
   * item instead of parsing it again: a nested query's variants are mostly items other lists
   * stored moments before. The cache still decides what is there (expiry, newer copies, deletes);
   * this only skips the parse of a text already parsed. Items are shared, as lists' items are.
   */
  private readonly parsed = new Map<number, { text: string; item: ItemModel }>();
  private readonly now: () => number;
  /**
   * Writes this process forwarded or heard of (dataChanged, heard): a read begun before one keeps
   * nothing it read. Lists are kept under `listSpace` (`<space><kind>:<anchor>`): `recs:` before
   * any write; then, where a change feed tells every process of each write, `recs:w<n>:` after the
   * n-th (shared by every process that heard of it: a list kept there was read after that write);
   * else a space of this process's own for each write (`recs:<random>.<writes>:`), which a
   * restart or another process never takes up with older lists in it.
   */
  private writes = 0;
  private readonly spacePrefix = randomBytes(6).toString('hex');
  private listSpace = 'recs:';
  /** The shared count of writes the lists' space follows; null while in a space of this process's own. */
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
    private readonly upstream: RecsService,
    private readonly cache: SharedCache,
    options: CachingOptions = {},
  ) {
    this.itemTtl = options.itemTtlSeconds ?? DEFAULT_CACHE_TTL_SECONDS.item;
    this.recsTtl = options.recsTtlSeconds ?? DEFAULT_CACHE_TTL_SECONDS.recs;
    this.negativeTtl = Math.min(options.negativeTtlSeconds ?? DEFAULT_CACHE_TTL_SECONDS.negative, 60);
    this.jitter = options.jitter ?? 0.1;
    this.now = options.now ?? Date.now;
  }

  private ttl(seconds: number): number {
    return seconds * (1 + Math.random() * this.jitter);
  }

  private itemEntries(items: readonly ItemModel[]): CacheEntry[] {
    const now = this.now();
    if (this.storedAt.size + items.length > STORED_AT_MAX) this.storedAt.clear();
    return items.map((item) => {
      this.storedAt.set(item.itemId, now);
      const value = JSON.stringify(item);
      this.remember(item.itemId, value, item);
      return { key: itemKey(item.itemId), value, ttlSeconds: this.ttl(this.itemTtl) };
    });
  }

  private remember(id: number, text: string, item: ItemModel): void {
    if (this.parsed.size >= PARSED_MAX) this.parsed.clear();
    this.parsed.set(id, { text, item });
  }

  /** The item a cached text holds, parsed once per text. */
  private itemOf(id: number, text: string): ItemModel {
    const known = this.parsed.get(id);
    if (known !== undefined && known.text === text) return known.item;
    const item = JSON.parse(text) as ItemModel;
    this.remember(id, text, item);
    return item;
  }

  /** A list's items this process has not stored within half their TTL. */
  private notStoredLately(items: readonly ItemModel[]): ItemModel[] {
    const since = this.now() - (this.itemTtl * 1000) / 2;
    return items.filter((item) => (this.storedAt.get(item.itemId) ?? -Infinity) <= since);
  }

  async getItems(ids: readonly number[], options?: CallOptions): Promise<(ItemModel | null)[]> {
    // Single flight covers the cache read too: a request arriving while another one's read or
    // fetch of the same id is under way waits for it, instead of finding the cache still empty.
    const result = new Map<number, Promise<ItemModel | null>>();
    const toLoad: number[] = [];
    for (const id of new Set(ids)) {
      const inFlight = this.itemsInFlight.get(id);
      const listed = inFlight === undefined ? this.listedItems.get(id) : undefined;
      if (inFlight) result.set(id, inFlight);
      else if (listed) result.set(id, Promise.resolve(listed));
      else toLoad.push(id);
    }
    if (toLoad.length > 0) {
      const loading = this.loadItems(toLoad, options);
      const batch = loading.then((loaded) => loaded.items);
      const flights = toLoad.map((id, i) => {
        const one = batch.then((items) => items[i] ?? null);
        this.itemsInFlight.set(id, one);
        result.set(id, one);
        return one;
      });
      endOnceStored(loading, () => {
        // a write may have ended this flight for later callers already, and another begun
        toLoad.forEach((id, i) => {
          if (this.itemsInFlight.get(id) === flights[i]) this.itemsInFlight.delete(id);
        });
      });
    }
    return Promise.all(ids.map((id) => result.get(id)!));
  }

  /** Items from the cache, the misses from upstream (and then into the cache). */
  private async loadItems(ids: number[], options?: CallOptions): Promise<Loaded<(ItemModel | null)[]>> {
    const cached = await this.cache.getMany(ids.map(itemKey));
    const missing = ids.filter((_, i) => cached[i] === null || cached[i] === undefined);
    const fetched = missing.length > 0 ? await this.fetchItems(missing, options) : null;
    const byId = new Map(missing.map((id, i) => [id, fetched?.items[i] ?? null]));
    const items = ids.map((id, i) => {
      const hit = cached[i];
      if (hit === null || hit === undefined) return byId.get(id) ?? null;
      return hit === NOT_FOUND ? null : this.itemOf(id, hit);
    });
    return { items, written: fetched?.written };
  }

  private async fetchItems(ids: number[], options?: CallOptions): Promise<Loaded<(ItemModel | null)[]>> {
    const writes = this.writes;
    const items = await this.upstream.getItems(ids, options);
    return {
      items,
      written: this.writeBehind(() => {
        // read before a write this process forwarded since: stored, it would outlive the write
        if (this.writes !== writes) return [];
        const found = items.filter((item): item is ItemModel => item !== null);
        const missing = ids
          .filter((_, i) => items[i] === null)
          .map((id) => {
            this.storedAt.delete(id);
            return { key: itemKey(id), value: NOT_FOUND, ttlSeconds: this.ttl(this.negativeTtl) };
          });
        return [...this.itemEntries(found), ...missing];
      }),
    };
  }

  /**
   * Stores what `entries` gives once the current request has had its answer: serialising and
   * storing (a Redis round trip) is off the response's path. The flight that fetched the data
   * lasts until the write settles, so a request arriving in between shares the flight rather
   * than finding the cache still empty. A failed write only means a later miss.
   *
   * The writes asked for in one turn of the event loop go together, in one setImmediate and one
   * setMany (one Redis pipeline): at 20 connections a cold list's answer seldom arrives alone,
   * and each write of its own cost a macrotask, a promise and a setMany's call (BENCHMARKS.md,
   * "twelfth pass"). `stored` runs once the batch is stored, or failed to be, before the promise
   * settles.
   */
  private writeBehind(entries: () => CacheEntry[], stored?: () => void): Promise<void> {
    if (this.writing === undefined) {
      const makers: (() => CacheEntry[])[] = [];
      const after: (() => void)[] = [];
      const written: Promise<void> = new Promise<void>((resolve) => {
        setImmediate(() => {
          this.writing = undefined;
          const done = (): void => {
            this.pendingWrites.delete(written);
            for (const then of after) then();
            resolve();
          };
          this.cache.setMany(makers.flatMap((make) => make())).then(done, done);
        });
      });
      this.pendingWrites.add(written);
      this.writing = { makers, stored: after, written };
    }
    this.writing.makers.push(entries);
    if (stored) this.writing.stored.push(stored);
    return this.writing.written;
  }

  /** Resolves once every cache write started so far has settled (tests; shutdown). */
  async flushed(): Promise<void> {
    await Promise.all([...this.pendingWrites]);
  }

  /**
   * A write this process forwarded was taken upstream (recordEvents, upsertItems: CachingIngestService):
   * every list it kept may have changed, and so may the records of `itemIds`. The records are
   * deleted, in both tiers; lists are read from a new key space from now on (the old entries
   * expire by their TTL). With a change feed (follow) every other process is told, and does the
   * same before it answers from its caches again; without one, or while its store is down,
   * another process on the same shared cache keeps its lists and records for their TTLs.
   */
  async dataChanged(itemIds: readonly number[]): Promise<void> {
    this.writes++;
    this.forgetItems(itemIds);
    if (this.feed === null) {
      this.moveTo(null);
      await this.cache.delete(itemIds.map(itemKey));
      return;
    }
    // the feed failed lately, and is tried again (resync): this write goes with the others then, not
    // waited for here (a frozen Redis would add its command timeout to every write)
    const failing = this.untold !== null;
    this.addUntold(itemIds);
    if (!failing) return this.tell();
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
    this.listSpace = shared === null ? `recs:${this.spacePrefix}.${this.writes}:` : shared === 0 ? 'recs:' : `recs:w${shared}:`;
  }

  /** What this process keeps of these items apart from the cache: a lookup begun before the write answers its callers, not later ones (nor is it stored: fetchItems). */
  private forgetItems(itemIds: readonly number[]): void {
    for (const id of itemIds) {
      this.itemsInFlight.delete(id);
      this.parsed.delete(id);
      this.storedAt.delete(id);
      this.listedItems.delete(id);
    }
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
    const stored = change.itemIds.filter((id) => this.storedAt.has(id)).map(itemKey);
    this.forgetItems(change.itemIds);
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
    this.itemsInFlight.clear();
    this.parsed.clear();
    this.storedAt.clear();
    this.listedItems.clear();
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

  async recommend(kind: RecommendationKind, anchorId: number, options?: CallOptions): Promise<RecommendationListModel> {
    const key = `${this.listSpace}${kind}:${anchorId}`;
    let inFlight = this.listsInFlight.get(key);
    if (!inFlight) {
      const loading = this.loadList(kind, anchorId, key, options);
      const flight = loading.then((loaded) => loaded.items);
      inFlight = flight;
      this.listsInFlight.set(key, flight);
      endOnceStored(loading, () => {
        if (this.listsInFlight.get(key) === flight) this.listsInFlight.delete(key);
      });
    }
    return inFlight;
  }

  private async loadList(
    kind: RecommendationKind,
    anchorId: number,
    key: string,
    options?: CallOptions,
  ): Promise<Loaded<RecommendationListModel>> {
    const [hit] = await this.cache.getMany([key]);
    if (hit) {
      const stored = JSON.parse(hit) as StoredList;
      if ('notFound' in stored) throw notFound(`No item with itemId ${anchorId}`);
      return { items: stored, written: undefined };
    }
    return this.fetchList(kind, anchorId, key, options);
  }

  private async fetchList(
    kind: RecommendationKind,
    anchorId: number,
    key: string,
    options?: CallOptions,
  ): Promise<Loaded<RecommendationListModel>> {
    try {
      const writes = this.writes;
      const list = await this.upstream.recommend(kind, anchorId, options);
      // until they are stored, the list's items are answered from here, as if in flight; not
      // those read before a write this process forwarded since (nor are they stored, below)
      const kept = (this.writes !== writes ? [] : list.items ?? []).filter((item) => !this.itemsInFlight.has(item.itemId) && !this.listedItems.has(item.itemId));
      for (const item of kept) this.listedItems.set(item.itemId, item);
      const written = this.writeBehind(
        () => {
          const stored: StoredList = { anchorId: list.anchorId, kind: list.kind, entries: list.entries };
          if (this.writes !== writes) return [];
          return [{ key, value: JSON.stringify(stored), ttlSeconds: this.ttl(this.recsTtl) }, ...this.itemEntries(this.notStoredLately(list.items ?? []))];
        },
        () => {
          for (const item of kept) if (this.listedItems.get(item.itemId) === item) this.listedItems.delete(item.itemId);
        },
      );
      return { items: list, written };
    } catch (error) {
      if (error instanceof GatewayError && error.code === ErrorCode.NOT_FOUND) {
        await this.cache.setMany([{ key, value: JSON.stringify({ notFound: true }), ttlSeconds: this.ttl(this.negativeTtl) }]);
      }
      throw error;
    }
  }
}

/**
 * REST mode's ingestion, forwarded as it is, after which this process's cached lists and the
 * records written are dropped (CachingRecsService.dataChanged) and `onChange` is called (the
 * response cache): the upstream answers once its model has taken the call, so the next answer
 * here follows it, as the embedded backend's do. Only a write the upstream accepted drops
 * anything: a refused one (a non-administrator, a bad batch) changed nothing, and must not let a
 * caller empty the caches at will.
 */
export class CachingIngestService implements IngestService {
  constructor(
    private readonly upstream: IngestService,
    private readonly recs: CachingRecsService,
    private readonly onChange: () => void,
  ) {}

  async recordEvents(principal: PrincipalModel, events: readonly EventInputModel[], options?: CallOptions): Promise<RecordEventsResultModel> {
    const result = await this.upstream.recordEvents(principal, events, options);
    // an empty call changed nothing: it must not let an administrator's client empty the caches
    if (events.length > 0) await this.changed([]);
    return result;
  }

  async upsertItems(principal: PrincipalModel, items: readonly ItemModel[], options?: CallOptions): Promise<UpsertItemsResultModel> {
    const result = await this.upstream.upsertItems(principal, items, options);
    if (items.length > 0) await this.changed(items.map((item) => item.itemId));
    return result;
  }

  private async changed(itemIds: readonly number[]): Promise<void> {
    try {
      await this.recs.dataChanged(itemIds);
    } finally {
      this.onChange();
    }
  }
}
