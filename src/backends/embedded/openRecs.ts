import type { ModelOptions } from '../../recommender/index.js';
import { buildDemo, demoEndsAt } from './demo.js';
import { StoreOpenError } from './dataFiles.js';
import type { RecsSource } from './liveStore.js';
import { demoWithStored, loadInWorker, openRecsData } from './loadFromStore.js';
import type { Loaded } from './loadFromStore.js';
import { EmbeddedRecs } from './recs.js';
export interface OpenEmbeddedRecsOptions {
  /** DATA_DIR: recs.db there holds the events and catalogue, unless `databaseUrl`; null: the demo shop, no store. */
  dataDir: string | null;
  /** DATABASE_URL: events and catalogue in PostgreSQL, shared by every replica. */
  databaseUrl?: string | null;
  /** A PostgreSQL schema for the tables (tests); default the connection's search_path. */
  schema?: string;
  /** One line per step, for the server log; default silent. */
  log?: (line: string) => void;
  model?: ModelOptions;
  /** How often to follow the store (see EmbeddedRecs.follow); 0 never. Default FOLLOW_INTERVAL_MS. */
  followIntervalMs?: number;
  /** Behind by more events than this, reload whole rather than apply them; default FULL_RELOAD_EVENTS, or a fifth of those held. */
  fullReloadEvents?: number;
  /** SQLite: how long a write waits for another process's write lock (tests); default LOCK_RETRY_MS (store.ts). */
  storeLockRetryMs?: number;
}

/** Default of followIntervalMs: a follow is one query on an index, so four a second cost little. */
export const FOLLOW_INTERVAL_MS = 250;

/** The source config asks for: PostgreSQL with a URL, SQLite in DATA_DIR otherwise, none without either. */
export function recsSource(options: Pick<OpenEmbeddedRecsOptions, 'dataDir' | 'databaseUrl' | 'schema'>): RecsSource | null {
  if (options.databaseUrl) return { kind: 'postgres', connectionString: options.databaseUrl, ...(options.schema ? { schema: options.schema } : {}) };
  return options.dataDir === null ? null : { kind: 'sqlite', dataDir: options.dataDir };
}

export async function openEmbeddedRecs(options: OpenEmbeddedRecsOptions): Promise<EmbeddedRecs> {
  const say = options.log ?? ((): void => {});
  const t0 = performance.now();
  const interval = options.followIntervalMs ?? FOLLOW_INTERVAL_MS;
  const source = recsSource(options);
  if (source === null) {
    const { catalog, log } = buildDemo({ endsAt: demoEndsAt() });
    const recs = new EmbeddedRecs(catalog, log, options.model);
    say(`recommender: demo shop of ${catalog.size} items and ${log.length} events ready in ${Math.round(performance.now() - t0)} ms`);
    return recs;
  }
  const store = (await openRecsData(source, options.storeLockRetryMs === undefined ? {} : { lockRetryMs: options.storeLockRetryMs }))!;
  const reloadAt = options.fullReloadEvents === undefined ? {} : { fullReloadEvents: options.fullReloadEvents };
  let recs: EmbeddedRecs;
  try {
    const loaded: Loaded = await loadInWorker({ source, options: options.model ?? {} });
    if (loaded.empty || loaded.demo) {
      // no catalogue: the demo shop with the stored events (built by the worker where the store exists)
      const demo = loaded.empty ? await demoWithStored(store, options.model ?? {}) : loaded;
      const model = loaded.empty ? {} : { model: loaded.model };
      recs = new EmbeddedRecs(demo.catalog, demo.log, options.model, store, source, { mode: 'demo', head: demo.head, ...model, ...reloadAt });
      const stored = demo.head.lastEventId > 0 ? `, with the events stored there (${recs.state().itemsWithoutRecord} items without a record)` : '';
      say(`recommender: ${store.where} has no catalogue; serving the demo shop of ${demo.catalog.size} items${stored}, ready in ${Math.round(performance.now() - t0)} ms`);
    } else {
      recs = new EmbeddedRecs(loaded.catalog, loaded.log, options.model, store, source, { mode: 'store', head: loaded.head, model: loaded.model, ...reloadAt });
      say(`recommender: ${loaded.catalog.size} items and ${loaded.events} events from ${store.where} loaded in ${Math.round(loaded.loadMs)} ms, model built in ${Math.round(loaded.model.buildMs)} ms (worker), ready in ${Math.round(performance.now() - t0)} ms`);
    }
  } catch (error) {
    await store.close();
    // a start stops on one line naming the store, not on a bare message from deep in a worker
    if (error instanceof StoreOpenError) throw error;
    const why = (error instanceof Error ? error.message : String(error)).split('\n')[0];
    throw new StoreOpenError(`cannot load the recommender from ${store.where}: ${why}`, { cause: error });
  }
  recs.follow(interval, say);
  return recs;
}
