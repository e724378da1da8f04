import { EmbeddedIngest, type EmbeddedIngestOptions, type LiveRecs } from '../../src/backends/embedded/index.js';
import type { EventRow } from '../../src/backends/embedded/liveStore.js';
import { withoutRepeatedIds } from '../../src/backends/embedded/liveStore.js';
import type { EmbeddedRecs } from '../../src/backends/embedded/recs.js';
import type { Backend } from '../../src/ports/backend.js';
import type { RecEvent } from '../../src/recommender/index.js';
import { KIND_PURCHASE, KIND_VIEW } from '../../src/recommender/index.js';

/**
 * A recommender without a store (the demo shop in memory) with a store of its own in memory:
 * calls are applied to its model as they come, and eventIds are kept as a store keeps them, for
 * as long as the test runs.
 */
export function inMemoryStore(recs: EmbeddedRecs): LiveRecs {
  const seen = new Set<string>();
  const held = new Map<number, RecEvent>();
  let lastId = 0;
  let lastSeq = 0;
  return {
    store: {
      appendEvents: (events) => {
        const rows = withoutRepeatedIds(events, seen).map((e): EventRow => {
          held.set(++lastId, e);
          return [lastId, e.kind === 'purchase' ? KIND_PURCHASE : KIND_VIEW, e.itemId, -1, -1, -1, e.time];
        });
        return Promise.resolve(rows);
      },
      upsertItems: () => Promise.resolve(++lastSeq),
    },
    get catalog() {
      return recs.catalog;
    },
    get itemCount() {
      return recs.itemCount;
    },
    newItemCount: (ids) => recs.newItemCount(ids),
    applyOwnEvents: (rows) => {
      // the events as sent, not as a store's row spells them: their keys stay the shop's names
      recs.applyEvents(rows.map((row) => held.get(row[0])!));
      for (const row of rows) held.delete(row[0]);
      return Promise.resolve();
    },
    applyOwnItems: (items) => {
      recs.applyItems(items);
      return Promise.resolve();
    },
  };
}

/** EmbeddedIngest over a recommender without a store (see inMemoryStore). */
export function inMemoryIngest(recs: EmbeddedRecs, options: EmbeddedIngestOptions = {}): EmbeddedIngest {
  return new EmbeddedIngest(inMemoryStore(recs), options);
}

/** `backend`, its ingest taken in memory by `recs`, which keeps no store. */
export function withIngestInMemory(backend: Backend, recs: EmbeddedRecs, options: EmbeddedIngestOptions = {}): Backend {
  backend.ingest = inMemoryIngest(recs, options);
  return backend;
}
