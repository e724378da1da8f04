import { GatewayError, ErrorCode, notFound } from '../errors.js';
import type {
  CallOptions,
  ItemModel,
  RecommendationKind,
  RecommendationListModel,
  RecsService,
} from '../backends/types.js';
import type { CacheEntry, SharedCache } from './types.js';

export interface CachingOptions {
  /** Seconds an item stays cached; default 300 (CACHE_ITEM_TTL_SECONDS). */
  itemTtlSeconds?: number;
  /** Seconds a recommendation list stays cached; default 300 (CACHE_RECS_TTL_SECONDS). */
  recsTtlSeconds?: number;
  /** Seconds an unknown item or anchor is remembered as unknown, at most 60; default 30. */
  negativeTtlSeconds?: number;
  /** Each TTL is stretched by up to this fraction at random, so entries written together do not expire together; default 0.1. */
  jitter?: number;
}

/** What is kept for a list: ids and reasons only; items are kept once each, shared by every list. */
type StoredList = Omit<RecommendationListModel, 'items'> | { notFound: true };

const NOT_FOUND = 'null';

export const itemKey = (id: number): string => `item:${id}`;
export const recsKey = (kind: RecommendationKind, anchorId: number): string => `recs:${kind}:${anchorId}`;

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
  private readonly listsInFlight = new Map<string, Promise<RecommendationListModel>>();

  constructor(
    private readonly upstream: RecsService,
    private readonly cache: SharedCache,
    options: CachingOptions = {},
  ) {
    this.itemTtl = options.itemTtlSeconds ?? 300;
    this.recsTtl = options.recsTtlSeconds ?? 300;
    this.negativeTtl = Math.min(options.negativeTtlSeconds ?? 30, 60);
    this.jitter = options.jitter ?? 0.1;
  }

  private ttl(seconds: number): number {
    return seconds * (1 + Math.random() * this.jitter);
  }

  private itemEntries(items: readonly ItemModel[]): CacheEntry[] {
    return items.map((item) => ({ key: itemKey(item.itemId), value: JSON.stringify(item), ttlSeconds: this.ttl(this.itemTtl) }));
  }

  async getItems(ids: readonly number[], options?: CallOptions): Promise<(ItemModel | null)[]> {
    // Single flight covers the cache read too: a request arriving while another one's read or
    // fetch of the same id is under way waits for it, instead of finding the cache still empty.
    const result = new Map<number, Promise<ItemModel | null>>();
    const toLoad: number[] = [];
    for (const id of new Set(ids)) {
      const inFlight = this.itemsInFlight.get(id);
      if (inFlight) result.set(id, inFlight);
      else toLoad.push(id);
    }
    if (toLoad.length > 0) {
      const batch = this.loadItems(toLoad, options);
      toLoad.forEach((id, i) => {
        const one = batch.then((items) => items[i] ?? null);
        this.itemsInFlight.set(id, one);
        result.set(id, one);
      });
      batch
        .finally(() => {
          for (const id of toLoad) this.itemsInFlight.delete(id);
        })
        .catch(() => undefined);
    }
    return Promise.all(ids.map((id) => result.get(id)!));
  }

  /** Items from the cache, the misses from upstream (and then into the cache). */
  private async loadItems(ids: number[], options?: CallOptions): Promise<(ItemModel | null)[]> {
    const cached = await this.cache.getMany(ids.map(itemKey));
    const missing = ids.filter((_, i) => cached[i] === null || cached[i] === undefined);
    const fetched = missing.length > 0 ? await this.fetchItems(missing, options) : [];
    const byId = new Map(missing.map((id, i) => [id, fetched[i] ?? null]));
    return ids.map((id, i) => {
      const hit = cached[i];
      if (hit === null || hit === undefined) return byId.get(id) ?? null;
      return hit === NOT_FOUND ? null : (JSON.parse(hit) as ItemModel);
    });
  }

  private async fetchItems(ids: number[], options?: CallOptions): Promise<(ItemModel | null)[]> {
    const items = await this.upstream.getItems(ids, options);
    const found = items.filter((item): item is ItemModel => item !== null);
    const missing = ids
      .filter((_, i) => items[i] === null)
      .map((id) => ({ key: itemKey(id), value: NOT_FOUND, ttlSeconds: this.ttl(this.negativeTtl) }));
    await this.cache.setMany([...this.itemEntries(found), ...missing]);
    return items;
  }

  async recommend(kind: RecommendationKind, anchorId: number, options?: CallOptions): Promise<RecommendationListModel> {
    const key = recsKey(kind, anchorId);
    let inFlight = this.listsInFlight.get(key);
    if (!inFlight) {
      inFlight = this.loadList(kind, anchorId, key, options).finally(() => this.listsInFlight.delete(key));
      this.listsInFlight.set(key, inFlight);
    }
    return inFlight;
  }

  private async loadList(
    kind: RecommendationKind,
    anchorId: number,
    key: string,
    options?: CallOptions,
  ): Promise<RecommendationListModel> {
    const [hit] = await this.cache.getMany([key]);
    if (hit) {
      const stored = JSON.parse(hit) as StoredList;
      if ('notFound' in stored) throw notFound(`No item with itemId ${anchorId}`);
      return stored;
    }
    return this.fetchList(kind, anchorId, key, options);
  }

  private async fetchList(
    kind: RecommendationKind,
    anchorId: number,
    key: string,
    options?: CallOptions,
  ): Promise<RecommendationListModel> {
    try {
      const list = await this.upstream.recommend(kind, anchorId, options);
      const stored: StoredList = { anchorId: list.anchorId, kind: list.kind, entries: list.entries };
      await this.cache.setMany([
        { key, value: JSON.stringify(stored), ttlSeconds: this.ttl(this.recsTtl) },
        ...this.itemEntries(list.items ?? []),
      ]);
      return list;
    } catch (error) {
      if (error instanceof GatewayError && error.code === ErrorCode.NOT_FOUND) {
        await this.cache.setMany([{ key, value: JSON.stringify({ notFound: true }), ttlSeconds: this.ttl(this.negativeTtl) }]);
      }
      throw error;
    }
  }
}
