import DataLoader from 'dataloader';
import type { CallOptions, ItemModel, RecommendationKind, RecommendationListModel, RecsService } from '../ports/backend.js';
import { MAX_ITEM_IDS } from '../ports/limits.js';

/** The per-request DataLoaders: built by createLoaders for each request, never shared. */
export interface Loaders {
  /** Items by id; null for an unknown id. */
  items: DataLoader<number, ItemModel | null>;
  /** Recommendation lists by `${kind}:${anchorId}`. */
  recommendations: DataLoader<string, RecommendationListModel>;
}

export const recommendationKey = (kind: RecommendationKind, anchorId: number): string => `${kind}:${anchorId}`;

/** Watches the loaders' batches (metrics) and what they fetched (the response cache's AnswerSources). */
export interface LoaderHooks {
  onBatch?: (loader: 'items', size: number) => void;
  /** Every list fetched, as the service returned it. */
  onList?: (list: RecommendationListModel) => void;
  /** Every batch of items fetched: the ids asked and what came back, in the same order. */
  onItems?: (ids: readonly number[], found: readonly (ItemModel | null | Error)[]) => void;
}

export function createLoaders(recs: RecsService, options: CallOptions = {}, hooks: LoaderHooks = {}): Loaders {
  const items = new DataLoader<number, ItemModel | null>((ids) => {
    hooks.onBatch?.('items', ids.length);
    const { onItems } = hooks;
    if (onItems === undefined) return recs.getItems(ids, options);
    return recs.getItems(ids, options).then((found) => {
      onItems(ids, found);
      return found;
    });
  }, {
    // RecsService.getItems' limit
    maxBatchSize: MAX_ITEM_IDS,
  });
  const recommendations = new DataLoader<string, RecommendationListModel>(
    (keys) =>
      Promise.all(
        keys.map(async (key) => {
          const [kind, anchor] = key.split(':') as [RecommendationKind, string];
          try {
            const list = await recs.recommend(kind, Number(anchor), options);
            hooks.onList?.(list);
            // the REST interface returns whole records: later item lookups need not ask again
            for (const item of list.items ?? []) items.prime(item.itemId, item);
            return list;
          } catch (error) {
            return error as Error;
          }
        }),
      ),
    // there is no batch endpoint for recommendations: each key is its own call anyway
    { batch: false },
  );
  return { items, recommendations };
}
