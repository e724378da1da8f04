import DataLoader from 'dataloader';
import type {
  CallOptions, ItemModel, RecommendationFilterModel, RecommendationKind, RecommendationListModel, RecsNow, RecsService,
} from '../../ports/backend.js';
import { MAX_ITEM_IDS } from '../../config/limits.js';

/** Per-request loaders, never shared: the cross-request cache is Redis. */
export interface Loaders {
  items: DataLoader<number, ItemModel | null>;
  recommendations: RecommendationLoader;
  /** The records a list came with, in entry order, when there is one for each; else null (load by id). */
  itemsOf(list: RecommendationListModel): readonly ItemModel[] | null;
  /** Records a list came with (trending, popular), so that loading their ids asks the backend nothing more. */
  know(items: readonly ItemModel[]): void;
  /** The list read synchronously where the backend can, to answer without a promise; undefined means take the loader. */
  listNow(kind: RecommendationKind, anchorId: number, filter?: RecommendationFilterModel | null): RecommendationListModel | undefined;
}

export interface RecommendationLoader {
  load(kind: RecommendationKind, anchorId: number, filter?: RecommendationFilterModel | null): Promise<RecommendationListModel>;
}

interface ListKey {
  kind: RecommendationKind;
  anchorId: number;
  filter: RecommendationFilterModel | null;
}

/** kind:anchor, and the filter's canonical key after it: a filtered list is another list. */
const listKeyOf = ({ kind, anchorId, filter }: ListKey): string => (filter === null ? `${kind}:${anchorId}` : `${kind}:${anchorId}:${filter.key}`);

/** Watches batches (metrics) and what they fetched (the response cache's AnswerSources). */
export interface LoaderHooks {
  onBatch?: (loader: 'items', size: number) => void;
  onList?: (list: RecommendationListModel) => void;
  onItems?: (ids: readonly number[], found: readonly (ItemModel | null | Error)[]) => void;
}

/** Made for every uncached request, so cheap until used: the items DataLoader is made on first use,
 * and list records are kept in a map rather than primed (a resolved promise each). */
class RequestLoaders implements Loaders {
  private itemLoader: DataLoader<number, ItemModel | null> | undefined;
  private readonly known = new Map<number, ItemModel>();
  /** Lists read synchronously, by the listLoader's key: a request sees one list a key. */
  private nowLists: Map<string, RecommendationListModel> | undefined;

  /** A DataLoader with batching off, for its timing: keeps the order of a request's failures. */
  private readonly listLoader = new DataLoader<ListKey, RecommendationListModel, string>(
    (keys) => Promise.all(keys.map((key) => this.loadList(key))),
    { batch: false, cacheKeyFn: listKeyOf },
  );

  readonly recommendations: RecommendationLoader = {
    load: (kind, anchorId, filter = null) => this.listLoader.load({ kind, anchorId, filter }),
  };

  constructor(
    private readonly recs: RecsService,
    private readonly options: CallOptions,
    private readonly hooks: LoaderHooks,
    private readonly now: RecsNow | null,
  ) {}

  listNow(kind: RecommendationKind, anchorId: number, filter: RecommendationFilterModel | null = null): RecommendationListModel | undefined {
    if (this.now === null) return undefined;
    const key = listKeyOf({ kind, anchorId, filter });
    let list = this.nowLists?.get(key);
    if (list !== undefined) return list;
    try {
      list = this.now.recommend(kind, anchorId, filter);
    } catch {
      return undefined;
    }
    this.hooks.onList?.(list);
    (this.nowLists ??= new Map()).set(key, list);
    return list;
  }

  get items(): DataLoader<number, ItemModel | null> {
    this.itemLoader ??= new DataLoader<number, ItemModel | null>((ids) => this.loadItems(ids), {
      maxBatchSize: MAX_ITEM_IDS,
    });
    return this.itemLoader;
  }

  know(items: readonly ItemModel[]): void {
    for (const item of items) if (!this.known.has(item.itemId)) this.known.set(item.itemId, item);
  }

  itemsOf(list: RecommendationListModel): readonly ItemModel[] | null {
    const { items, entries } = list;
    if (items === undefined || items.length !== entries.length) return null;
    for (let i = 0; i < entries.length; i++) if (items[i]!.itemId !== entries[i]!.itemId) return null;
    return items;
  }

  private async loadList(key: ListKey): Promise<RecommendationListModel | Error> {
    const read = this.nowLists?.get(listKeyOf(key));
    if (read !== undefined) return read;
    try {
      const list = await this.recs.recommend(key.kind, key.anchorId, this.options, key.filter);
      this.hooks.onList?.(list);
      if (list.items !== undefined) this.know(list.items);
      return list;
    } catch (error) {
      return error as Error;
    }
  }

  private async loadItems(ids: readonly number[]): Promise<(ItemModel | null)[]> {
    const missing = this.known.size === 0 ? ids : ids.filter((id) => !this.known.has(id));
    if (missing.length === 0) return ids.map((id) => this.known.get(id)!);
    this.hooks.onBatch?.('items', missing.length);
    const loaded = await this.recs.getItems(missing, this.options);
    this.hooks.onItems?.(missing, loaded);
    if (missing === ids) return loaded;
    const byId = new Map(missing.map((id, i) => [id, loaded[i] ?? null]));
    return ids.map((id) => this.known.get(id) ?? byId.get(id) ?? null);
  }
}

export function createLoaders(recs: RecsService, options: CallOptions = {}, hooks: LoaderHooks = {}, now: RecsNow | null = null): Loaders {
  return new RequestLoaders(recs, options, hooks, now);
}
