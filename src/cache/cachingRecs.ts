import { createHash } from 'node:crypto';
import { DEFAULT_CACHE_TTL_SECONDS } from '../config/defaults.js';
import { GatewayError, ErrorCode, notFound } from '../errors.js';
import type {
  CallOptions,
  EventInputModel,
  IngestService,
  ItemModel,
  PrincipalModel,
  RecordEventsResultModel,
  RecommendationFilterModel,
  RecommendationKind,
  RecommendationListModel,
  RecsService,
  UpsertItemsResultModel,
} from '../ports/backend.js';
import type { CacheEntry, SharedCache } from '../ports/cache.js';
import type { ChangeFeed } from '../ports/changeFeed.js';
import { itemKey, ListSpaces } from './listSpaces.js';
import { isCancelled } from '../shared/callSignal.js';
import { ClockedLRU } from './lru.js';

export interface CachingOptions {
  /** Seconds an item stays cached; default 300 (CACHE_ITEM_TTL_SECONDS). */
  itemTtlSeconds?: number;
  /** Seconds a recommendation list stays cached; default 300 (CACHE_RECS_TTL_SECONDS). */
  recsTtlSeconds?: number;
  /** Seconds an unknown item or anchor is remembered as unknown, at most 60; default 30. */
  negativeTtlSeconds?: number;
  /** Random TTL stretch, so entries written together do not expire together; default 0.1. */
  jitter?: number;
  /** Clock of the items stored lately, ms; default Date.now. */
  now?: () => number;
}

const STORED_AT_MAX = 100_000;
const PARSED_MAX = 10_000;
const PARSED_BYTES = 32 * 1024 * 1024;
const PARSED_BYTES_PER_CHAR = 3;

/** A list keeps ids and reasons only; items are kept once each, shared by every list. */
type StoredList = Omit<RecommendationListModel, 'items'> | { notFound: true };

const NOT_FOUND = 'null';

interface WriteBatch {
  makers: (() => CacheEntry[])[];
  stored: (() => void)[];
  written: Promise<void>;
}

interface Loaded<T> {
  items: T;
  written: Promise<void> | undefined;
}

/** A read or fetch several requests share, made with the first one's signal. A joiner still waiting
 * when that signal stopped it asks again in its own flight: cheaper than a signal per joiner, as stops are rare. */
interface Flight<T> {
  options: CallOptions | undefined;
  answer: Promise<T>;
  ids: number[] | undefined;
}

function flightOf<T>(options: CallOptions | undefined, loading: Promise<Loaded<T>>, ids?: number[]): Flight<T> {
  return { options, answer: loading.then((loaded) => loaded.items), ids };
}

/** Asked at the failure, not when joining: whether the flight was stopped for its maker while this
 * caller is still there, which then takes the flight out of the map and asks again. */
const stoppedFor = (flight: Flight<unknown>, options: CallOptions | undefined): boolean =>
  flight.options !== options && isCancelled(flight.options?.signal) && !isCancelled(options?.signal);

function endOnceStored(loading: Promise<Loaded<unknown>>, end: () => void): void {
  loading.then((loaded) => loaded.written, () => undefined).finally(end).catch(() => undefined);
}

/** A RecsService keeping items and lists in the shared cache; items are stored once and shared by
 * every list, and concurrent misses for one key share one call. Nothing user-specific passes here. */
export class CachingRecsService implements RecsService {
  private readonly itemTtl: number;
  private readonly recsTtl: number;
  private readonly negativeTtl: number;
  private readonly jitter: number;
  private readonly itemsInFlight = new Map<number, { flight: Flight<(ItemModel | null)[]>; at: number }>();
  /** Items of lists fetched and not yet stored, answered as if in flight, without a promise each. */
  private readonly listedItems = new Map<number, ItemModel>();
  private readonly listsInFlight = new Map<string, Flight<RecommendationListModel>>();
  private readonly pendingWrites = new Set<Promise<void>>();
  private writing: WriteBatch | undefined;
  /** When this process last stored each item: a list's items are not stored again within half their
   * TTL, as most are popular ones already cached. Lookups always store what they fetched. */
  private readonly storedAt: ClockedLRU<number, number>;
  /** Each id's last parsed or serialised text and item: a hit on that very text skips the parse. */
  private readonly parsed = new ClockedLRU<number, { text: string; item: ItemModel }>({
    max: PARSED_MAX,
    maxSize: PARSED_BYTES,
    sizeCalculation: (value) => 1 + value.text.length * PARSED_BYTES_PER_CHAR,
  });
  private readonly now: () => number;
  private readonly spaces: ListSpaces;
  // Passed through: they follow every event, and the embedded backend keeps them cheap itself.
  readonly trending?: RecsService['trending'];
  readonly popular?: RecsService['popular'];
  // per shopper: nothing to share between requests, and it follows every event
  readonly forYou?: RecsService['forYou'];

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
    this.trending = upstream.trending?.bind(upstream);
    this.popular = upstream.popular?.bind(upstream);
    this.forYou = upstream.forYou?.bind(upstream);
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

  private itemOf(id: number, text: string): ItemModel {
    const known = this.parsed.get(id);
    if (known !== undefined && known.text === text) return known.item;
    const item = JSON.parse(text) as ItemModel;
    this.remember(id, text, item);
    return item;
  }

  private notStoredLately(items: readonly ItemModel[]): ItemModel[] {
    const since = this.now() - (this.itemTtl * 1000) / 2;
    return items.filter((item) => (this.storedAt.get(item.itemId) ?? -Infinity) <= since);
  }

  async getItems(ids: readonly number[], options?: CallOptions): Promise<(ItemModel | null)[]> {
    // Single flight covers the cache read too, so a request arriving mid-fetch does not find the cache empty.
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
          // stopped for its maker meanwhile: ask again for this request (see Flight)
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
        for (const id of toLoad) if (this.itemsInFlight.get(id)?.flight === flight) this.itemsInFlight.delete(id);
      });
    }
    return Promise.all(ids.map((id) => result.get(id)!));
  }

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
        // read before a write forwarded since: stored, it would outlive the write
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

  /** Stores after the answer, off the response's path; the flight lasts until the write settles so
   * newcomers share it. Writes of one event-loop turn go together in one setMany (one pipeline). */
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

  async flushed(): Promise<void> {
    await Promise.all([...this.pendingWrites]);
  }

  /** A forwarded write was taken upstream: kept lists, and the records of `itemIds`, may have changed. */
  dataChanged(itemIds: readonly number[]): Promise<void> {
    return this.spaces.written(itemIds);
  }

  follow(feed: ChangeFeed, waitMs?: number): Promise<void> {
    return this.spaces.follow(feed, waitMs);
  }

  unfollow(): void {
    this.spaces.unfollow();
  }

  onOthersChange(listener: () => void): void {
    this.spaces.onOthersChange(listener);
  }

  /** Forgets these items apart from the cache: a lookup begun before the write answers its callers, not later ones. */
  private forgetItems(itemIds: readonly number[]): void {
    for (const id of itemIds) {
      this.itemsInFlight.delete(id);
      this.parsed.delete(id);
      this.storedAt.delete(id);
      this.listedItems.delete(id);
    }
  }

  private forgetAll(): void {
    this.itemsInFlight.clear();
    this.parsed.clear();
    this.storedAt.clear();
    this.listedItems.clear();
  }

  /** A filtered list is kept under its own key (the filter's hash after kind:anchor), as the upstream
   * answered it: an upstream that honours filters fills the list from its deeper candidates, which
   * filtering a kept unfiltered list of 10 could not. */
  async recommend(kind: RecommendationKind, anchorId: number, options?: CallOptions, filter: RecommendationFilterModel | null = null): Promise<RecommendationListModel> {
    const key = `${this.spaces.space}${kind}:${anchorId}${filter === null ? '' : `:f${createHash('sha256').update(filter.key).digest('base64url').slice(0, 22)}`}`;
    const inFlight = this.listsInFlight.get(key);
    if (inFlight !== undefined) {
      // stopped for its maker meanwhile: asked again for this request (see Flight)
      return inFlight.answer.catch((error: unknown) => {
        if (!stoppedFor(inFlight, options)) throw error;
        if (this.listsInFlight.get(key) === inFlight) this.listsInFlight.delete(key);
        return this.recommend(kind, anchorId, options, filter);
      });
    }
    const loading = this.loadList(kind, anchorId, key, options, filter);
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
    options: CallOptions | undefined,
    filter: RecommendationFilterModel | null,
  ): Promise<Loaded<RecommendationListModel>> {
    const [hit] = await this.cache.getMany([key]);
    if (hit) {
      const stored = JSON.parse(hit) as StoredList;
      if ('notFound' in stored) throw notFound(`No item with itemId ${anchorId}`);
      return { items: filter === null ? stored : { ...stored, filter }, written: undefined };
    }
    return this.fetchList(kind, anchorId, key, options, filter);
  }

  private async fetchList(
    kind: RecommendationKind,
    anchorId: number,
    key: string,
    options: CallOptions | undefined,
    filter: RecommendationFilterModel | null,
  ): Promise<Loaded<RecommendationListModel>> {
    try {
      const writes = this.spaces.writes;
      const list = await this.upstream.recommend(kind, anchorId, options, filter);
      // the list's items are answered from here until stored; not those read before a write forwarded since
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

/** REST mode's ingestion, forwarded; an accepted write then drops cached lists and records so the next
 * answer follows it. A refused one drops nothing, or any caller could empty the caches at will. */
export class CachingIngestService implements IngestService {
  readonly knownMayIngest?: IngestService['knownMayIngest'];
  readonly askMayIngest?: IngestService['askMayIngest'];
  readonly recommendationStats?: IngestService['recommendationStats'];

  constructor(
    private readonly upstream: IngestService,
    private readonly recs: CachingRecsService,
    private readonly onChange: () => void,
  ) {
    if (upstream.knownMayIngest && upstream.askMayIngest) {
      this.knownMayIngest = upstream.knownMayIngest.bind(upstream);
      this.askMayIngest = upstream.askMayIngest.bind(upstream);
    }
    if (upstream.recommendationStats) this.recommendationStats = upstream.recommendationStats.bind(upstream);
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
