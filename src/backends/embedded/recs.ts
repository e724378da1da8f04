import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { badUserInput } from '../../errors.js';
import type { CallOptions, ItemModel, RecommendationKind, RecommendationListModel, RecsService } from '../types.js';
import { Catalog } from './catalog.js';
import { buildDemo } from './demo.js';
import { EventLog } from './events/event.js';
import type { RecEvent } from './events/event.js';
import { LiveModel } from './recommender/live.js';
import type { ApplyStats } from './recommender/live.js';
import { buildModel } from './recommender/model.js';
import type { ModelOptions, RecModel } from './recommender/model.js';
import type { BuildMessage, BuildRequest } from './recommender/builtModel.js';
import { fromBuiltModel } from './recommender/builtModel.js';
import { parseItemRecord } from '../itemRecord.js';
import { Recommender } from './recommender/recommend.js';
import { DB_FILE, RecsStore } from './store.js';

/** At most this many ids per getItems call (RecsService contract). */
const MAX_IDS = 100;

/**
 * How long after a batch its remaining work runs (EmbeddedRecs.applyEvents): short against
 * issue 20's second of freshness, long enough for a stream of small batches to share one
 * rebuild of next-best-product.
 */
export const FLUSH_DELAY_MS = 100;

/** What a reload did. */
export interface ReloadResult {
  /** False when DATA_DIR has no catalogue (the model in use stays). */
  reloaded: boolean;
  /** The imports version loaded (see RecsStore.importsVersion). */
  version: string;
  items: number;
  events: number;
  /** Reading the database in the worker, then building the model there, then the hand-over here. */
  loadMs: number;
  buildMs: number;
  swapMs: number;
  totalMs: number;
}

const here = import.meta.url;
const fromSource = here.endsWith('.ts');
const WORKER = new URL(fromSource ? './recommender/buildWorker.ts' : './recommender/buildWorker.js', here);

/**
 * The build worker. Built, it is plain .js; from source (tsx, vitest) it is TypeScript, and a
 * worker does not inherit the loader, so a bootstrap registers tsx's before importing it.
 */
function startWorker(workerData: BuildRequest): Worker {
  if (!fromSource) return new Worker(WORKER, { workerData });
  const bootstrap = `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(WORKER.href)}); })`;
  return new Worker(bootstrap, { eval: true, workerData });
}

/**
 * The embedded recommendation service: item lookup and both lists from an in-memory catalogue
 * and a model built from the event log. Built whole at start-up and after imports that replace
 * data (reload: in a worker thread, swapped in whole); events and item records that arrive one
 * batch at a time are applied to the model in use without a rebuild (applyEvents, applyItems:
 * see recommender/live.ts): post-browse answers change when those calls return, next-best-product's
 * after the flush that follows (FLUSH_DELAY_MS).
 */
export class EmbeddedRecs implements RecsService {
  private recommender: Recommender;
  private current: Catalog;
  private version: string | null = null;
  private reloading: Promise<ReloadResult> | null = null;
  private worker: Worker | null = null;
  private timer: NodeJS.Timeout | null = null;
  private closed = false;
  private flushTimer: NodeJS.Timeout | null = null;
  /** The model in use, once a batch has been applied (made on the first: start-up builds only what it serves). */
  private live: LiveModel | null = null;
  /** Whether this.log is what the model in use was built from (not after a reload from DATA_DIR). */
  private logMatches = true;

  constructor(catalog: Catalog, private log: EventLog, private readonly options: ModelOptions = {}, private readonly dataDir: string | null = null) {
    this.current = catalog;
    this.recommender = new Recommender(buildModel(log, options, catalog), catalog);
  }

  get catalog(): Catalog {
    return this.current;
  }

  get model(): RecModel {
    return this.recommender.model;
  }

  // The signal is not consulted: both calls are synchronous and take microseconds.
  async getItems(ids: readonly number[], _options?: CallOptions): Promise<(ItemModel | null)[]> {
    if (ids.length > MAX_IDS) throw badUserInput(`At most ${MAX_IDS} item ids a call, got ${ids.length}`, 'ids');
    const catalog = this.current;
    return ids.map((id) => catalog.get(id) ?? null);
  }

  async recommend(kind: RecommendationKind, anchorId: number, _options?: CallOptions): Promise<RecommendationListModel> {
    return this.recommendNow(kind, anchorId);
  }

  /** The synchronous lookup behind recommend (benchmarks measure this). */
  recommendNow(kind: RecommendationKind, anchorId: number): RecommendationListModel {
    // One read of the field: the catalogue and the model of a list always belong together.
    const recommender = this.recommender;
    const entries = recommender.recommend(kind, anchorId);
    return { anchorId, kind, entries, items: entries.map((e) => recommender.catalog!.get(e.itemId)!) };
  }

  /**
   * Applies events already stored (in store order) to the model in use: what the process that
   * stored them and the replicas following the store call. Incremental (recommender/live.ts):
   * from the moment this returns, post-browse lists and popularity are those a full build over
   * the same events gives (an anchor a batch touched is re-ranked when it is looked up, or by
   * the flush); next-best-product's, rebuilt whole because of its prior, after the flush that
   * follows within FLUSH_DELAY_MS (batches in between share it).
   */
  applyEvents(events: readonly RecEvent[]): void {
    const live = this.liveModel();
    this.lastApply = live.applyEvents(events);
    // A new Recommender: its per-category popularity lists are computed again on first use.
    this.recommender = new Recommender(live, this.current);
    if (live.pending && this.flushTimer === null && !this.closed) {
      // At least as long as the last flush took: on a large log where a flush comes close to a
      // rebuild, upkeep then takes at most half the time, and freshness degrades instead.
      this.flushTimer = setTimeout(() => this.flush(), Math.max(FLUSH_DELAY_MS, this.lastFlushMs));
      this.flushTimer.unref();
    }
  }

  private lastFlushMs = 0;

  /** Does now what applyEvents left to its flush (tests, benchmarks); null when there is no live model. */
  flush(): ApplyStats | null {
    if (this.flushTimer !== null) clearTimeout(this.flushTimer);
    this.flushTimer = null;
    const stats = this.live?.flush() ?? null;
    if (stats !== null) this.lastFlushMs = stats.ms;
    return stats;
  }

  /** Applies item records already stored: they join the catalogue, replacing older records of the same ids. */
  applyItems(items: readonly ItemModel[]): void {
    const live = this.liveModel();
    this.lastApply = live.applyItems(items);
    this.recommender = new Recommender(live, this.current);
  }

  /** What the last applyEvents or applyItems did (benchmarks, logs); null before any. */
  lastApply: ApplyStats | null = null;

  private liveModel(): LiveModel {
    if (this.live === null) {
      if (!this.logMatches && this.dataDir !== null) {
        // After a reload the log was read in the worker: read it again here, once.
        const log = new EventLog();
        const store = RecsStore.openReadOnly(this.dataDir);
        try {
          store?.loadEvents(log);
        } finally {
          store?.close();
        }
        this.log = log;
        this.live = new LiveModel(log, this.options, this.current);
      } else {
        this.live = new LiveModel(this.log, this.options, this.current, this.recommender.model);
      }
      this.logMatches = true;
    }
    return this.live;
  }

  /** Swaps in a model built here, synchronously, from a new in-memory log (demo, benchmarks). */
  rebuild(log: EventLog = this.log): void {
    this.log = log;
    this.live = null;
    this.logMatches = true;
    this.recommender = new Recommender(buildModel(log, this.options, this.current), this.current);
  }

  /**
   * Reloads DATA_DIR/recs.db: a worker thread reads the catalogue and the events and builds the
   * model; the records come over in chunks parsed between requests, and the model's arrays are
   * transferred, so the event loop is never held for long. The new catalogue and model replace
   * the old ones together. Concurrent calls share one reload.
   */
  reload(): Promise<ReloadResult> {
    if (this.dataDir === null) return Promise.reject(new Error('reload needs a DATA_DIR'));
    this.reloading ??= this.reloadFrom(this.dataDir).finally(() => {
      this.reloading = null;
    });
    return this.reloading;
  }

  private reloadFrom(dataDir: string): Promise<ReloadResult> {
    const t0 = performance.now();
    const request: BuildRequest = { dataDir, options: this.options };
    const worker = startWorker(request);
    this.worker = worker;
    const catalog = new Catalog();
    return new Promise<ReloadResult>((resolve, reject) => {
      let settled = false;
      const settle = (error: Error | null, result?: ReloadResult): void => {
        if (settled) return;
        settled = true;
        if (this.worker === worker) this.worker = null;
        void worker.terminate();
        if (error === null) resolve(result!);
        else reject(error);
      };
      worker.on('message', (message: BuildMessage) => {
        try {
          if (message.type === 'records') {
            for (const record of message.records) catalog.add(parseItemRecord(JSON.parse(record)));
            return;
          }
          if (message.type === 'empty') {
            this.version = message.version;
            settle(null, { reloaded: false, version: message.version, items: 0, events: 0, loadMs: 0, buildMs: 0, swapMs: 0, totalMs: performance.now() - t0 });
            return;
          }
          const t1 = performance.now();
          const model = fromBuiltModel(message.model);
          if (!this.closed) {
            this.recommender = new Recommender(model, catalog);
            this.current = catalog;
            this.version = message.version;
            this.live = null;
            this.logMatches = false;
          }
          const t2 = performance.now();
          settle(null, {
            reloaded: true, version: message.version, items: catalog.size, events: message.events,
            loadMs: message.loadMs, buildMs: model.buildMs, swapMs: t2 - t1, totalMs: t2 - t0,
          });
        } catch (error) {
          settle(error as Error);
        }
      });
      worker.on('error', (error) => settle(error));
      worker.on('exit', (code) => settle(new Error(`the model build worker exited with code ${code} before it was done`)));
    });
  }

  /**
   * Polls DATA_DIR/recs.db every `intervalMs` for finished imports (one small query) and reloads
   * in the background when there are new ones. `say` gets one line per reload.
   */
  watch(intervalMs: number, say: (line: string) => void = () => {}): void {
    if (this.dataDir === null || this.timer !== null) return;
    const dataDir = this.dataDir;
    const check = (): void => {
      if (this.reloading !== null || this.closed) return;
      let version: string | null;
      try {
        const store = RecsStore.openReadOnly(dataDir);
        if (store === null) return;
        try {
          version = store.importsVersion();
        } finally {
          store.close();
        }
      } catch (error) {
        say(`recommender: cannot read ${join(dataDir, DB_FILE)}: ${(error as Error).message}`);
        return;
      }
      if (version === this.version) return;
      this.reload().then(
        (r) => say(r.reloaded
          ? `recommender: reloaded ${r.items} items and ${r.events} events after an import in ${Math.round(r.totalMs)} ms (load ${Math.round(r.loadMs)} ms, build ${Math.round(r.buildMs)} ms in a worker, swap ${Math.round(r.swapMs)} ms)`
          : `recommender: ${join(dataDir, DB_FILE)} has no catalogue yet; the model in use stays`),
        (error: unknown) => say(`recommender: reload failed, the model in use stays: ${(error as Error).message}`),
      );
    };
    this.timer = setInterval(check, intervalMs);
    this.timer.unref();
  }

  /** Marks the DATA_DIR state the current model was loaded from (so that watch does not reload it again). */
  loadedVersion(version: string): void {
    this.version = version;
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.flushTimer !== null) clearTimeout(this.flushTimer);
    this.flushTimer = null;
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    await this.worker?.terminate();
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
  /**
   * How often to look for new imports in DATA_DIR/recs.db and reload in the background (see
   * EmbeddedRecs.watch); 0 never. Default RELOAD_INTERVAL_MS (10 s).
   */
  reloadIntervalMs?: number;
}

/** Default of OpenEmbeddedRecsOptions.reloadIntervalMs. */
export const RELOAD_INTERVAL_MS = 10_000;

export async function openEmbeddedRecs(options: OpenEmbeddedRecsOptions): Promise<EmbeddedRecs> {
  const say = options.log ?? ((): void => {});
  const t0 = performance.now();
  const interval = options.reloadIntervalMs ?? RELOAD_INTERVAL_MS;
  const dataDir = options.dataDir;
  const watching = (recs: EmbeddedRecs): EmbeddedRecs => {
    if (interval > 0) recs.watch(interval, say);
    return recs;
  };
  if (dataDir !== null && existsSync(join(dataDir, DB_FILE))) {
    const store = RecsStore.open(dataDir);
    try {
      const version = store.importsVersion();
      if (store.itemCount() > 0) {
        const catalog = store.loadCatalog();
        const log = new EventLog();
        store.loadEvents(log);
        const t1 = performance.now();
        const recs = new EmbeddedRecs(catalog, log, options.model, dataDir);
        recs.loadedVersion(version);
        say(`recommender: ${catalog.size} items and ${log.length} events from ${store.path} loaded in ${Math.round(t1 - t0)} ms, model built in ${Math.round(recs.model.buildMs)} ms`);
        return watching(recs);
      }
      say(`recommender: ${store.path} has no catalogue; serving the demo shop`);
    } finally {
      store.close();
    }
  }
  const { catalog, log } = buildDemo();
  const recs = new EmbeddedRecs(catalog, log, options.model, dataDir);
  say(`recommender: demo shop of ${catalog.size} items and ${log.length} events ready in ${Math.round(performance.now() - t0)} ms`);
  return watching(recs);
}
