import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { badUserInput } from '../../errors.js';
import type { CallOptions, ItemModel, RecommendationKind, RecommendationListModel, RecsService } from '../types.js';
import type { Catalog } from './catalog.js';
import { buildDemo } from './demo.js';
import { EventLog } from './events/event.js';
import { buildModel } from './recommender/model.js';
import type { ModelOptions, RecModel } from './recommender/model.js';
import { Recommender } from './recommender/recommend.js';
import { DB_FILE, RecsStore } from './store.js';

/** At most this many ids per getItems call (RecsService contract). */
const MAX_IDS = 100;

/**
 * The embedded recommendation service: item lookup and both lists from an in-memory catalogue
 * and a model built from the event log. The model is rebuilt as a whole (see `rebuild`): the
 * demo's 200k events build in well under a second and 10M in seconds, which beats the
 * complexity of incremental top-K maintenance for a log that changes by batch imports.
 */
export class EmbeddedRecs implements RecsService {
  private recommender: Recommender;

  constructor(readonly catalog: Catalog, private log: EventLog, private readonly options: ModelOptions = {}) {
    this.recommender = new Recommender(buildModel(log, options, catalog), catalog);
  }

  get model(): RecModel {
    return this.recommender.model;
  }

  // The signal is not consulted: both calls are synchronous and take microseconds.
  async getItems(ids: readonly number[], _options?: CallOptions): Promise<(ItemModel | null)[]> {
    if (ids.length > MAX_IDS) throw badUserInput(`At most ${MAX_IDS} item ids a call, got ${ids.length}`, 'ids');
    return ids.map((id) => this.catalog.get(id) ?? null);
  }

  async recommend(kind: RecommendationKind, anchorId: number, _options?: CallOptions): Promise<RecommendationListModel> {
    return this.recommendNow(kind, anchorId);
  }

  /** The synchronous lookup behind recommend (benchmarks measure this). */
  recommendNow(kind: RecommendationKind, anchorId: number): RecommendationListModel {
    const entries = this.recommender.recommend(kind, anchorId);
    return { anchorId, kind, entries, items: entries.map((e) => this.catalog.get(e.itemId)!) };
  }

  /** Swaps in a model built from a new log (after an import); lookups see the old one until done. */
  rebuild(log: EventLog = this.log): void {
    this.log = log;
    this.recommender = new Recommender(buildModel(log, this.options, this.catalog), this.catalog);
  }

  async close(): Promise<void> {
    // Everything lives in memory; the database was closed after loading.
  }
}

/** Options of openEmbeddedRecs. */
export interface OpenEmbeddedRecsOptions {
  /**
   * DATA_DIR: when DATA_DIR/recs.db holds a catalogue, it and its events are served; otherwise
   * (and always when null) the deterministic demo shop is built in memory.
   */
  dataDir: string | null;
  /** One line per step, for the server log; default silent. */
  log?: (line: string) => void;
  /** Model options; defaults as documented on ModelOptions. */
  model?: ModelOptions;
}

export async function openEmbeddedRecs(options: OpenEmbeddedRecsOptions): Promise<EmbeddedRecs> {
  const say = options.log ?? ((): void => {});
  const t0 = performance.now();
  if (options.dataDir !== null && existsSync(join(options.dataDir, DB_FILE))) {
    const store = RecsStore.open(options.dataDir);
    try {
      if (store.itemCount() > 0) {
        const catalog = store.loadCatalog();
        const log = new EventLog();
        store.loadEvents(log);
        const t1 = performance.now();
        const recs = new EmbeddedRecs(catalog, log, options.model);
        say(`recommender: ${catalog.size} items and ${log.length} events from ${store.path} loaded in ${Math.round(t1 - t0)} ms, model built in ${Math.round(recs.model.buildMs)} ms`);
        return recs;
      }
      say(`recommender: ${store.path} has no catalogue; serving the demo shop`);
    } finally {
      store.close();
    }
  }
  const { catalog, log } = buildDemo();
  const recs = new EmbeddedRecs(catalog, log, options.model);
  say(`recommender: demo shop of ${catalog.size} items and ${log.length} events ready in ${Math.round(performance.now() - t0)} ms`);
  return recs;
}
