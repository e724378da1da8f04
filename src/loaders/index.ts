import DataLoader from 'dataloader';
import type { ItemModel, RecsService } from '../backends/types.js';

/** The per-request DataLoaders: built once per request by createLoaders, never shared. */
export interface Loaders {
  items: DataLoader<number, ItemModel | null>;
}

/** Items are asked for at most this many at a time (the REST interface takes 20 a call). */
const MAX_BATCH = 100;

export function createLoaders(recs: RecsService): Loaders {
  return {
    items: new DataLoader<number, ItemModel | null>((ids) => recs.getItems(ids), { maxBatchSize: MAX_BATCH }),
  };
}
