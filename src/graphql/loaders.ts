import DataLoader from 'dataloader';
import type { CallOptions, ItemModel, RecommendationKind, RecommendationListModel, RecsNow, RecsService } from '../ports/backend.js';
import { MAX_ITEM_IDS } from '../ports/limits.js';

/** The per-request loaders: built by createLoaders for each request, never shared. */
export interface Loaders {
  /** Items by id; null for an unknown id. */
  items: DataLoader<number, ItemModel | null>;
  /** Recommendation lists by kind and anchor. */
  recommendations: RecommendationLoader;
  /**
   * The item records a list came with (RecommendationListModel.items), in the order of its
   * entries, when it came with one for each; null when it did not (then load them by id).
   */
  itemsOf(list: RecommendationListModel): readonly ItemModel[] | null;
  /**
   * The list as the backend has it at this instant, read synchronously where the backend can (the
   * embedded one, through RecsNow), so that a resolver answers it without a promise; undefined
   * where it cannot, or where the lookup fails: the resolver then takes the loader's path, which
   * asks again and fails as it always did (in the same order among a request's errors).
   */
  listNow(kind: RecommendationKind, anchorId: number): RecommendationListModel | undefined;
}

/** One backend call per list a request, however often it is asked for. */
export interface RecommendationLoader {
  load(kind: RecommendationKind, anchorId: number): Promise<RecommendationListModel>;
}

/** Watches the loaders' batches (metrics) and what they fetched (the response cache's AnswerSources). */
export interface LoaderHooks {
  onBatch?: (loader: 'items', size: number) => void;
  /** Every list fetched, as the service returned it. */
  onList?: (list: RecommendationListModel) => void;
  /** Every batch of items fetched: the ids asked and what came back, in the same order. */
  onItems?: (ids: readonly number[], found: readonly (ItemModel | null | Error)[]) => void;
}

/**
 * The loaders of one request, made for every uncached GraphQL request, so they cost little until
 * used: the items DataLoader is made on first use (a recommendations query whose list came with
 * its records never needs it: resolvers take them from itemsOf), and a list's records are
 * remembered in a map that the items loader's batches answer from, rather than primed into the
 * DataLoader (a resolved promise each).
 */
class RequestLoaders implements Loaders {
  private itemLoader: DataLoader<number, ItemModel | null> | undefined;
  /** Records that came with lists: the items loader answers them without asking the backend. */
  private readonly known = new Map<number, ItemModel>();
  /** Lists read synchronously (listNow), by the listLoader's key: a request sees one list a key. */
  private nowLists: Map<string, RecommendationListModel> | undefined;

  /**
   * A DataLoader, batching off, for its timing: a list is asked for a turn after its resolver
   * ran, as the items are, so that which of a request's failures comes first does not change.
   */
  private readonly listLoader = new DataLoader<string, RecommendationListModel>(
    (keys) => Promise.all(keys.map((key) => this.loadList(key))),
    { batch: false },
  );

  readonly recommendations: RecommendationLoader = {
    load: (kind, anchorId) => this.listLoader.load(`${kind}:${anchorId}`),
  };

  constructor(
    private readonly recs: RecsService,
    private readonly options: CallOptions,
    private readonly hooks: LoaderHooks,
    private readonly now: RecsNow | null,
  ) {}

  listNow(kind: RecommendationKind, anchorId: number): RecommendationListModel | undefined {
    if (this.now === null) return undefined;
    const key = `${kind}:${anchorId}`;
    let list = this.nowLists?.get(key);
    if (list !== undefined) return list;
    try {
      list = this.now.recommend(kind, anchorId);
    } catch {
      return undefined;
    }
    this.hooks.onList?.(list);
    (this.nowLists ??= new Map()).set(key, list);
    return list;
  }

  get items(): DataLoader<number, ItemModel | null> {
    this.itemLoader ??= new DataLoader<number, ItemModel | null>((ids) => this.loadItems(ids), {
      // RecsService.getItems' limit
      maxBatchSize: MAX_ITEM_IDS,
    });
    return this.itemLoader;
  }

  itemsOf(list: RecommendationListModel): readonly ItemModel[] | null {
    const { items, entries } = list;
    if (items === undefined || items.length !== entries.length) return null;
    for (let i = 0; i < entries.length; i++) if (items[i]!.itemId !== entries[i]!.itemId) return null;
    return items;
  }

  private async loadList(key: string): Promise<RecommendationListModel | Error> {
    const read = this.nowLists?.get(key);
    if (read !== undefined) return read;
    const at = key.indexOf(':');
    try {
      const list = await this.recs.recommend(key.slice(0, at) as RecommendationKind, Number(key.slice(at + 1)), this.options);
      this.hooks.onList?.(list);
      // the REST interface returns whole records: later item lookups need not ask again
      if (list.items !== undefined) for (const item of list.items) if (!this.known.has(item.itemId)) this.known.set(item.itemId, item);
      return list;
    } catch (error) {
      return error as Error;
    }
  }

  /** A batch of the items loader: the records lists brought, and the backend for the rest. */
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

/** A request's loaders; with `now` (Backend.recsNow), lists are read synchronously where they can be (listNow). */
export function createLoaders(recs: RecsService, options: CallOptions = {}, hooks: LoaderHooks = {}, now: RecsNow | null = null): Loaders {
  return new RequestLoaders(recs, options, hooks, now);
}
