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
import type { ChangeFeed } from '../ports/changeFeed.js';
import { itemKey, ListSpaces } from './listSpaces.js';
import { isCancelled } from '../ports/callSignal.js';
import { ClockedLRU } from './lru.js';

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

/** Items remembered as stored lately, at most; the least recently stored go first (a few MB). */
const STORED_AT_MAX = 100_000;
/** Parsed items kept for their cached text (see CachingRecsService.parsed), at most. */
const PARSED_MAX = 10_000;
/** Bytes the parsed items and their texts may hold at most (PARSED_BYTES_PER_CHAR a character of text). */
const PARSED_BYTES = 32 * 1024 * 1024;
/** A parsed item's text and the item itself, in bytes a character of the text. */
const PARSED_BYTES_PER_CHAR = 3;

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

/**
 * A read or fetch several requests wait for, made with the options of the first (its signal: its
 * deadline, its client's going). A request that joined it and is still there when that signal
 * stopped it (the first's client gone, its deadline past, while this one's is later) is not
 * answered with the stop: it asks again (stoppedFor), in a flight of its own. Nothing is added to
 * a flight that is not stopped: a signal of its own that waits for every joiner
 * (ports/callSignal.ts SharedCall, the rate limiter's) costs an AbortController and a listener on
 * each caller's signal; a stop here costs an upstream call again instead, and stops are rare.
 */
interface Flight<T> {
  options: CallOptions | undefined;
  answer: Promise<T>;
  /** A lookup's ids, in the order of its answer; undefined for a list. */
  ids: number[] | undefined;
}

/** The flight of `loading`, made with `options`. */
function flightOf<T>(options: CallOptions | undefined, loading: Promise<Loaded<T>>, ids?: number[]): Flight<T> {
  return { options, answer: loading.then((loaded) => loaded.items), ids };
}

/**
 * Asked of a joiner as `flight` fails: whether it was stopped for its maker (whose signal is
 * cancelled then only if that was the cause: the maker waits for this very answer) while the
 * caller with `options` is still there (it then takes the flight out of the map, which
 * endOnceStored would a few microtasks on, and asks again). A flight that
 * answered stays until its answer is stored, and its maker's signal is cancelled once the maker is
 * answered, which is why this is asked at the failure and not when joining (dfdc3b9 did: 2
 * upstream calls for 100 identical requests, test/reliability/singleFlight.test.ts).
 */
const stoppedFor = (flight: Flight<unknown>, options: CallOptions | undefined): boolean =>
  flight.options !== options && isCancelled(flight.options?.signal) && !isCancelled(options?.signal);

/** Ends a flight once its data is in the cache too (see writeBehind), or at once if the load failed. */
function endOnceStored(loading: Promise<Loaded<unknown>>, end: () => void): void {
  loading.then((loaded) => loaded.written, () => undefined).finally(end).catch(() => undefined);
}

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
  /** Ids being read or fetched, each with the lookup it is in and its place there. */
  private readonly itemsInFlight = new Map<number, { flight: Flight<(ItemModel | null)[]>; at: number }>();
  /**
   * The items of lists fetched and not yet stored: answered from here, as if in flight. Kept as
   * they are, not as settled promises in itemsInFlight: a promise each for ten items a cold list,
   * nearly all of which nobody asks for before they are stored.
   */
  private readonly listedItems = new Map<number, ItemModel>();
  private readonly listsInFlight = new Map<string, Flight<RecommendationListModel>>();
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
  private readonly storedAt: ClockedLRU<number, number>;
  /**
   * The item each id's cached text was last parsed from or serialised to. A hit whose text is
   * that same text (the memory cache hands back the very string stored) is answered with the
   * item instead of parsing it again: a nested query's variants are mostly items other lists
   * stored moments before. The cache still decides what is there (expiry, newer copies, deletes);
   * this only skips the parse of a text already parsed. Items are shared, as lists' items are.
   */
  private readonly parsed = new ClockedLRU<number, { text: string; item: ItemModel }>({
    max: PARSED_MAX,
    maxSize: PARSED_BYTES,
    sizeCalculation: (value) => 1 + value.text.length * PARSED_BYTES_PER_CHAR,
  });
  private readonly now: () => number;
  /** The lists' key space, moved by every write forwarded here or heard of (src/cache/listSpaces.ts). */
  private readonly spaces: ListSpaces;

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
    // an item stored here is cached no longer than its TTL with the most jitter
    this.storedAt = new ClockedLRU({ max: STORED_AT_MAX, ttl: Math.ceil(this.itemTtl * 1000 * (1 + this.jitter)), now: this.now });
    this.spaces = new ListSpaces(cache, {
      forgetItems: (itemIds) => this.forgetItems(itemIds),
      forgetAll: () => this.forgetAll(),
      storedHere: (itemIds) => itemIds.filter((id) => this.storedAt.has(id)),
    });
  }

  private ttl(seconds: number): number {
    return seconds * (1 + Math.random() * this.jitter);
  }

  private itemEntries(items: readonly ItemModel[]): CacheEntry[] {
    const now = this.now();
    return items.map((item) => {
      this.storedAt.set(item.itemId, now);
      const value = JSON.stringify(item);
      this.remember(item.itemId, value, item);
      return { key: itemKey(item.itemId), value, ttlSeconds: this.ttl(this.itemTtl) };
    });
  }

  private remember(id: number, text: string, item: ItemModel): void {
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
    let joined: Map<Flight<(ItemModel | null)[]>, Promise<(ItemModel | null)[]>> | undefined;
    const toLoad: number[] = [];
    for (const id of new Set(ids)) {
      const inFlight = this.itemsInFlight.get(id);
      if (inFlight !== undefined) {
        const { flight, at } = inFlight;
        joined ??= new Map();
        let items = joined.get(flight);
        if (items === undefined) {
          // stopped for its maker meanwhile: this request's ids of it asked again (see Flight)
          items = flight.answer.catch((error: unknown) => {
            if (!stoppedFor(flight, options)) throw error;
            for (const id of flight.ids!) if (this.itemsInFlight.get(id)?.flight === flight) this.itemsInFlight.delete(id);
            return this.getItems(flight.ids!, options);
          });
          joined.set(flight, items);
        }
        result.set(id, items.then((found) => found[at] ?? null));
        continue;
      }
      const listed = this.listedItems.get(id);
      if (listed) result.set(id, Promise.resolve(listed));
      else toLoad.push(id);
    }
    if (toLoad.length > 0) {
      const loading = this.loadItems(toLoad, options);
      const flight = flightOf(options, loading, toLoad);
      toLoad.forEach((id, at) => this.itemsInFlight.set(id, { flight, at }));
      toLoad.forEach((id, at) => result.set(id, flight.answer.then((found) => found[at] ?? null)));
      endOnceStored(loading, () => {
        // a write may have ended this flight for later callers already, and another begun
        for (const id of toLoad) if (this.itemsInFlight.get(id)?.flight === flight) this.itemsInFlight.delete(id);
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
    const writes = this.spaces.writes;
    const items = await this.upstream.getItems(ids, options);
    return {
      items,
      written: this.writeBehind(() => {
        // read before a write this process forwarded since: stored, it would outlive the write
        if (this.spaces.writes !== writes) return [];
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
   * every list it kept may have changed, and so may the records of `itemIds` (ListSpaces.written).
   */
  dataChanged(itemIds: readonly number[]): Promise<void> {
    return this.spaces.written(itemIds);
  }

  /** Every write is told to the other processes on `feed`, and theirs followed here (ListSpaces.follow). */
  follow(feed: ChangeFeed, waitMs?: number): Promise<void> {
    return this.spaces.follow(feed, waitMs);
  }

  /** Stops following the feed (its owner closes it). */
  unfollow(): void {
    this.spaces.unfollow();
  }

  /** `listener` is called after each write another process announced (follow). */
  onOthersChange(listener: () => void): void {
    this.spaces.onOthersChange(listener);
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

  /** Everything this process keeps apart from the cache (a write may have been missed). */
  private forgetAll(): void {
    this.itemsInFlight.clear();
    this.parsed.clear();
    this.storedAt.clear();
    this.listedItems.clear();
  }

  async recommend(kind: RecommendationKind, anchorId: number, options?: CallOptions): Promise<RecommendationListModel> {
    const key = `${this.spaces.space}${kind}:${anchorId}`;
    const inFlight = this.listsInFlight.get(key);
    if (inFlight !== undefined) {
      // stopped for its maker meanwhile: asked again for this request (see Flight)
      return inFlight.answer.catch((error: unknown) => {
        if (!stoppedFor(inFlight, options)) throw error;
        if (this.listsInFlight.get(key) === inFlight) this.listsInFlight.delete(key);
        return this.recommend(kind, anchorId, options);
      });
    }
    const loading = this.loadList(kind, anchorId, key, options);
    const flight = flightOf(options, loading);
    this.listsInFlight.set(key, flight);
    endOnceStored(loading, () => {
      if (this.listsInFlight.get(key) === flight) this.listsInFlight.delete(key);
    });
    return flight.answer;
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
      const writes = this.spaces.writes;
      const list = await this.upstream.recommend(kind, anchorId, options);
      // until they are stored, the list's items are answered from here, as if in flight; not
      // those read before a write this process forwarded since (nor are they stored, below)
      const kept = (this.spaces.writes !== writes ? [] : list.items ?? []).filter((item) => !this.itemsInFlight.has(item.itemId) && !this.listedItems.has(item.itemId));
      for (const item of kept) this.listedItems.set(item.itemId, item);
      const written = this.writeBehind(
        () => {
          const stored: StoredList = { anchorId: list.anchorId, kind: list.kind, entries: list.entries };
          if (this.spaces.writes !== writes) return [];
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
  readonly knownMayIngest?: IngestService['knownMayIngest'];
  readonly askMayIngest?: IngestService['askMayIngest'];

  constructor(
    private readonly upstream: IngestService,
    private readonly recs: CachingRecsService,
    private readonly onChange: () => void,
  ) {
    // who may send is the upstream's to say, as the forwarded calls are
    if (upstream.knownMayIngest && upstream.askMayIngest) {
      this.knownMayIngest = upstream.knownMayIngest.bind(upstream);
      this.askMayIngest = upstream.askMayIngest.bind(upstream);
    }
  }

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
