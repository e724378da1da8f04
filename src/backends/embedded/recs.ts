import type { Worker } from 'node:worker_threads';
import { badUserInput } from '../../errors.js';
import { checkListFirst } from '../../model/itemLists.js';
import type { CallOptions, ForYouListModel, ItemModel, ShopperModel, ItemRankingModel, RecommendationFilterModel, RecommendationKind, RecommendationListModel, RecommenderStateModel, RecsService } from '../../ports/backend.js';
import type { Catalog } from '../../recommender/index.js';
import type { EventLog, RecEvent } from '../../recommender/index.js';
import { buildModel } from '../../recommender/index.js';
import type { ModelOptions, RecModel } from '../../recommender/index.js';
import { LiveModel } from '../../recommender/index.js';
import type { AnchoredList, ApplyStats, Kind } from '../../recommender/index.js';
import { anchoredIn, forYou, inCategory, latestTime, maxAgeMsOf, Recommender, ShopperHistories, TrendingScores } from '../../recommender/index.js';
import type { EventRow, RecsDataStore, RecsSource, StoreHead } from './liveStore.js';
import { demoWithStored, loadInWorker } from './loadFromStore.js';
import { promised } from '../../shared/promised.js';
import { LogCompactor } from './logCompaction.js';
import { RebuildScheduler } from './rebuildScheduler.js';
import { StoreFollower } from './storeFollower.js';

/** At most this many ids per getItems call (RecsService contract). */
const MAX_IDS = 100;
/** How long a slice of filing the log into a new live model holds the event loop (prepareLive). */
const LOAD_SLICE_MS = 10;

/** What a reload did. */
export interface ReloadResult {
  /** False when the store has no catalogue (the demo shop is served, with the stored events). */
  reloaded: boolean;
  /** The point of the store the model now reflects. */
  head: StoreHead;
  items: number;
  events: number;
  loadMs: number;
  buildMs: number;
  swapMs: number;
  totalMs: number;
}

/** Where the served catalogue comes from: the store, or the demo shop while the store has none. */
export type RecsMode = RecommenderStateModel['mode'];

/** What /readyz shows of the recommender. */
export type RecsState = RecommenderStateModel;

/** The embedded recommendation service: lookups from an in-memory catalogue and model, kept
 * current by applying batches in place (recommender/live.ts) and, with a store, by following it. */
export class EmbeddedRecs implements RecsService {
  private recommender: Recommender;
  private current: Catalog;
  private reloading: Promise<ReloadResult> | null = null;
  private worker: Worker | null = null;
  private closed = false;
  private mode: RecsMode;
  private head: StoreHead = { generation: 0, lastEventId: 0, lastItemSeq: 0 };
  private missingCache: { at: number; count: number } | null = null;
  private readonly listeners: (() => void)[] = [];
  /** Made at the first batch: start-up builds only what it serves. */
  private live: LiveModel | null = null;
  private readonly rebuilds: RebuildScheduler;
  private readonly compactor: LogCompactor;
  private readonly follower: StoreFollower | null;

  /** `store`: the data it follows (it takes ownership), with `source` to reload it from in a worker. */
  constructor(
    catalog: Catalog,
    private log: EventLog,
    private readonly options: ModelOptions = {},
    readonly store: RecsDataStore | null = null,
    private readonly source: RecsSource | null = null,
    init: { mode?: RecsMode; head?: StoreHead; model?: RecModel; fullReloadEvents?: number; compactMinEvents?: number; compactStepEvents?: number } = {},
  ) {
    const host = { live: () => this.live, closed: () => this.closed, changed: () => this.changed(), say: (line: string) => this.say(line) };
    this.rebuilds = new RebuildScheduler(host);
    this.compactor = new LogCompactor({ ...host, logLength: () => this.log.length }, init.compactMinEvents, init.compactStepEvents);
    this.follower = store === null ? null : new StoreFollower(store, {
      head: () => this.head,
      mode: () => this.mode,
      hasLive: () => this.live !== null,
      liveReady: () => this.liveReady(),
      reloading: () => this.reloading,
      reload: () => this.reload(),
      applyEvents: (events) => this.applyEvents(events),
      applyItems: (items) => this.applyItems(items),
      closed: () => this.closed,
      heldEvents: () => this.log.length,
    }, init.fullReloadEvents);
    this.current = catalog;
    this.mode = init.mode ?? (store === null ? 'demo' : 'store');
    if (init.head) this.head = { ...init.head };
    this.recommender = new Recommender(init.model ?? buildModel(log, options, catalog), catalog);
    if (store !== null) this.prepareLive();
  }

  get catalog(): Catalog {
    return this.current;
  }

  get model(): RecModel {
    return this.recommender.model;
  }

  /** How many distinct items the model holds: those named by an event or a record (its ItemIndex). */
  get itemCount(): number {
    return this.log.items.size;
  }

  /** How many distinct ids of `ids` the model does not hold yet: the items a batch of them would add. */
  newItemCount(ids: Iterable<number>): number {
    const items = this.log.items;
    const fresh = new Set<number>();
    for (const id of ids) if (items.indexOf(id) < 0) fresh.add(id);
    return fresh.size;
  }

  /** Calls `listener` after every change of the model or catalogue: a cache of answers drops them then. */
  onChange(listener: () => void): void {
    this.listeners.push(listener);
  }

  private changed(): void {
    this.missingCache = null;
    for (const listener of this.listeners) listener();
  }

  get applied(): Readonly<StoreHead> {
    return this.head;
  }

  // The signal is not consulted: both calls are synchronous and take microseconds.
  getItems(ids: readonly number[], _options?: CallOptions): Promise<(ItemModel | null)[]> {
    return promised(() => {
      if (ids.length > MAX_IDS) throw badUserInput(`At most ${MAX_IDS} item ids a call, got ${ids.length}`, 'ids');
      const catalog = this.current;
      return ids.map((id) => catalog.get(id) ?? null);
    });
  }

  recommend(kind: RecommendationKind, anchorId: number, _options?: CallOptions, filter: RecommendationFilterModel | null = null): Promise<RecommendationListModel> {
    return promised(() => this.recommendNow(kind, anchorId, filter));
  }

  /** The synchronous lookup behind recommend (benchmarks measure this). */
  recommendNow(kind: RecommendationKind, anchorId: number, filter: RecommendationFilterModel | null = null): RecommendationListModel {
    // One read of the field: the catalogue and the model of a list always belong together.
    const recommender = this.recommender;
    if (filter === null) {
      const entries = recommender.recommend(kind, anchorId);
      return { anchorId, kind, entries, items: entries.map((e) => recommender.catalog!.get(e.itemId)!) };
    }
    const entries = recommender.recommend(kind, anchorId, undefined, filter);
    return { anchorId, kind, entries, items: entries.map((e) => recommender.catalog!.get(e.itemId)!), filter };
  }

  /** The first `limit` entries of an unfiltered list (a learner publishes them for filters to pick from). */
  candidatesNow(kind: RecommendationKind, anchorId: number, limit: number): RecommendationListModel['entries'] {
    return this.recommender.recommend(kind, anchorId, limit);
  }

  /** The anchor's neighbour list of `kind` as recommendedForYou sums it, for a learner to publish; null without one. */
  anchoredNow(kind: RecommendationKind, anchorId: number): AnchoredList | null {
    return anchoredIn(this.recommender.model, kind, anchorId);
  }

  /** The items under a category path by popularity, `depth` deep, for a learner to publish. */
  rankedUnderNow(kind: RecommendationKind, categoryPath: string, depth: number): number[] {
    return this.recommender.rankedUnder(kind, categoryPath, depth);
  }

  /** Trending and popular of both kinds, `depth` deep, for a learner to publish. */
  rankingsNow(depth: number): { trending: ItemRankingModel['entries']; popular: Record<RecommendationKind, ItemRankingModel['entries']> } {
    const recommender = this.recommender;
    const scores = this.trendingScores.of(recommender, this.log, recommender.catalog, maxAgeMsOf(this.options));
    return {
      trending: inCategory(scores, recommender.catalog, null, depth).map(({ itemId, score }) => ({ itemId, score })),
      popular: { POST_BROWSE: recommender.popular('POST_BROWSE', null, depth), NEXT_BEST_PRODUCT: recommender.popular('NEXT_BEST_PRODUCT', null, depth) },
    };
  }

  trending(categoryPath: string | null, first: number, _options?: CallOptions): Promise<ItemRankingModel> {
    return promised(() => this.trendingNow(categoryPath, first));
  }

  /** Kept per model: every change makes a new Recommender. */
  private readonly trendingScores = new TrendingScores();

  trendingNow(categoryPath: string | null, first: number): ItemRankingModel {
    const n = checkListFirst(first);
    const recommender = this.recommender;
    const scores = this.trendingScores.of(recommender, this.log, recommender.catalog, maxAgeMsOf(this.options));
    const entries = inCategory(scores, recommender.catalog, categoryPath, n).map(({ itemId, score }) => ({ itemId, score }));
    return this.ranking(recommender, entries);
  }

  popular(kind: RecommendationKind, categoryPath: string | null, first: number, _options?: CallOptions): Promise<ItemRankingModel> {
    return promised(() => {
      const recommender = this.recommender;
      return this.ranking(recommender, recommender.popular(kind, categoryPath, checkListFirst(first)));
    });
  }

  /** A followed store names sessions and users in the log by their key-table ids (loadWorker.ts): the shopper's are
   * looked up first; a name it never took has no events. */
  async forYou(shopper: ShopperModel, first: number, _options?: CallOptions, filter: RecommendationFilterModel | null = null): Promise<ForYouListModel> {
    checkListFirst(first);
    if (this.store === null) return this.forYouNow(shopper, first, filter);
    const ids = await this.store.keyIds(shopper.sessionId, shopper.userId);
    const named = (id: number | null): string | null => (id === null ? null : String(id));
    return this.forYouNow({ sessionId: named(ids.session), userId: named(ids.user) }, first, filter);
  }

  /** Kept from the first list asked for after a (re)load, then by every batch: null until then. */
  private shoppers: ShopperHistories | null = null;

  /** The synchronous lookup behind forYou. */
  forYouNow(shopper: ShopperModel, first: number, filter: RecommendationFilterModel | null = null): ForYouListModel {
    const n = checkListFirst(first);
    const recommender = this.recommender;
    const maxAgeMs = maxAgeMsOf(this.options);
    this.shoppers ??= ShopperHistories.fromLog(this.log, maxAgeMs > 0 ? latestTime(this.log) - maxAgeMs : -Infinity);
    const since = maxAgeMs > 0 ? this.shoppers.latest - maxAgeMs : -Infinity;
    const entries = forYou(recommender, this.shoppers.history(shopper.sessionId, shopper.userId, since), n, filter);
    return { entries, items: entries.map((e) => recommender.catalog!.get(e.itemId)!) };
  }

  private ranking(recommender: Recommender, entries: ItemRankingModel['entries']): ItemRankingModel {
    return { entries, items: entries.map((e) => recommender.catalog!.get(e.itemId)!) };
  }

  /** Applies stored events (in store order) in place, so that answers follow them when this
   * returns; the re-ranking and full builds they call for follow in the flush (RebuildScheduler). */
  applyEvents(events: readonly RecEvent[]): void {
    const live = this.liveModel();
    this.lastApply = live.applyEvents(events);
    this.shoppers?.add(events);
    // A new Recommender: its per-category popularity lists are computed again on first use.
    this.recommender = new Recommender(live, this.current);
    this.rebuilds.schedule();
    this.compactor.soon();
    this.changed();
  }

  get compactions(): LogCompactor['compactions'] {
    return this.compactor.compactions;
  }

  /** Does now what applyEvents left to its flush (tests, benchmarks: a timer does it otherwise). */
  flush(except: readonly Kind[] = [], ms = Infinity): ApplyStats | null {
    return this.rebuilds.flush(except, ms);
  }

  get offLoop(): RebuildScheduler['offLoop'] {
    return this.rebuilds.offLoop;
  }

  get settling(): boolean {
    return this.rebuilds.settling;
  }

  applyItems(items: readonly ItemModel[]): void {
    const live = this.liveModel();
    this.lastApply = live.applyItems(items);
    this.recommender = new Recommender(live, this.current);
    this.changed();
  }

  lastApply: ApplyStats | null = null;

  private liveModel(): LiveModel {
    if (this.live === null && this.preparing !== null) {
      // a batch before the slices are done: the rest now
      this.preparing.model.loadFor(Infinity);
      this.prepared();
    }
    // the log the model in use was built from (a reload swaps both in together)
    this.live ??= new LiveModel(this.log, this.options, this.current, this.recommender.model);
    return this.live;
  }

  private preparing: { model: LiveModel; done: Promise<void>; resolve: () => void } | null = null;

  /** Files the log into a live model in slices between requests, where a store is followed: made
   * at once by the first batch, a large log held every request for as long. */
  private prepareLive(): void {
    if (this.live !== null || this.preparing !== null || this.closed) return;
    const model = new LiveModel(this.log, this.options, this.current, this.recommender.model, true);
    let resolve!: () => void;
    const done = new Promise<void>((r) => (resolve = r));
    const preparing = { model, done, resolve };
    this.preparing = preparing;
    const slice = (): void => {
      if (this.preparing !== preparing || this.closed) return resolve(); // swapped meanwhile, taken whole by a batch, or closed
      if (model.loadFor(LOAD_SLICE_MS)) this.prepared();
      else setImmediate(slice);
    };
    setImmediate(slice);
  }

  private prepared(): void {
    const preparing = this.preparing!;
    this.preparing = null;
    this.live = preparing.model;
    preparing.resolve();
  }

  private liveReady(): Promise<void> {
    if (this.live !== null || this.store === null) return Promise.resolve();
    this.prepareLive();
    return this.preparing?.done ?? Promise.resolve();
  }

  /** Swaps in a model built here, synchronously, from a new in-memory log (demo, benchmarks). */
  rebuild(log: EventLog = this.log): void {
    this.log = log;
    this.live = null;
    this.shoppers = null;
    this.preparing = null;
    this.recommender = new Recommender(buildModel(log, this.options, this.current), this.current);
  }

  async applyOwnEvents(rows: readonly EventRow[]): Promise<void> {
    return this.following().applyOwnEvents(rows);
  }

  async applyOwnItems(items: readonly ItemModel[], seq: number): Promise<void> {
    return this.following().applyOwnItems(items, seq);
  }

  async catchUp(target: Partial<Pick<StoreHead, 'lastEventId' | 'lastItemSeq'>>): Promise<void> {
    await this.follower?.catchUp(target);
  }

  poll(): Promise<void> {
    return this.follower?.poll() ?? Promise.resolve();
  }

  /** Whether the model is the demo shop's (the store holds no catalogue). */
  get demo(): boolean {
    return this.mode === 'demo';
  }

  /** Whether the follower is reading a backlog of events, a page applied and more to come. */
  get readingBacklog(): boolean {
    return this.follower?.readingPages ?? false;
  }

  private following(): StoreFollower {
    if (this.follower === null) throw new Error('this recommender follows no store');
    return this.follower;
  }

  /** Reloads the store whole in a worker thread, so that the event loop is never held for long;
   * the new catalogue and model replace the old ones together. Concurrent calls share one reload. */
  reload(): Promise<ReloadResult> {
    if (this.source === null || this.store === null) return Promise.reject(new Error('reload needs a store'));
    const wasDemo = this.mode === 'demo';
    this.reloading ??= this.reloadNow(this.source, this.store).then((r) => {
      // a newcomer's first upsertItems takes the demo shop's items away: say so
      if (wasDemo && r.reloaded) this.say(`recommender: the store has a catalogue now (${r.items} items): it replaces the demo shop, whose items are no longer served`);
      this.say(r.reloaded
        ? `recommender: reloaded ${r.items} items and ${r.events} events whole in ${Math.round(r.totalMs)} ms (load ${Math.round(r.loadMs)} ms, build ${Math.round(r.buildMs)} ms in a worker, swap ${Math.round(r.swapMs)} ms)`
        : `recommender: the store has no catalogue; serving the demo shop with the ${r.head.lastEventId > 0 ? 'stored events' : 'demo events only'}`);
      return r;
    }).finally(() => {
      this.reloading = null;
    });
    return this.reloading;
  }

  /** Whole reloads built in the worker, and on the loop (a store not made yet: the demo shop alone). */
  readonly wholeReloads = { inWorker: 0, onLoop: 0 };

  private async reloadNow(source: RecsSource, store: RecsDataStore): Promise<ReloadResult> {
    const t0 = performance.now();
    const loaded = await loadInWorker({ source, options: this.options }, (worker) => {
      this.worker = worker;
    });
    const t1 = performance.now();
    if (loaded.empty) {
      this.wholeReloads.onLoop++;
      const demo = await demoWithStored(store, this.options);
      if (!this.closed) this.swap(demo.catalog, demo.log, buildModel(demo.log, this.options, demo.catalog), 'demo', demo.head);
      const t2 = performance.now();
      return { reloaded: false, head: demo.head, items: demo.catalog.size, events: demo.log.length, loadMs: t1 - t0, buildMs: t2 - t1, swapMs: 0, totalMs: t2 - t0 };
    }
    this.wholeReloads.inWorker++;
    if (!this.closed) this.swap(loaded.catalog, loaded.log, loaded.model, loaded.demo ? 'demo' : 'store', loaded.head);
    const t2 = performance.now();
    return {
      reloaded: !loaded.demo, head: loaded.head, items: loaded.catalog.size, events: loaded.events,
      loadMs: loaded.loadMs, buildMs: loaded.model.buildMs, swapMs: t2 - t1, totalMs: t2 - t0,
    };
  }

  private swap(catalog: Catalog, log: EventLog, model: RecModel, mode: RecsMode, head: StoreHead): void {
    this.recommender = new Recommender(model, catalog);
    this.current = catalog;
    this.log = log;
    this.live = null;
    this.shoppers = null;
    this.preparing = null;
    this.mode = mode;
    this.head = { ...head };
    this.changed();
    this.prepareLive();
  }

  /** Follows the store every `intervalMs`; `say` gets one line per whole reload and per failure. */
  follow(intervalMs: number, say: (line: string) => void = () => {}): void {
    if (this.follower === null) return;
    if (this.follower.follow(intervalMs, say)) this.say = say;
  }

  private say: (line: string) => void = () => {};

  /** What /readyz shows; the items without a record counted at most once a second (a scan of them all). */
  state(): RecsState {
    const now = Date.now();
    if (this.missingCache === null || now - this.missingCache.at > 1000) {
      const items = this.log.items;
      let count = 0;
      for (let i = 0; i < items.size; i++) if (this.current.get(items.idAt(i)) === undefined) count++;
      this.missingCache = { at: now, count };
    }
    return {
      mode: this.mode, store: this.store?.kind ?? null, items: this.current.size, events: this.log.length,
      itemsWithoutRecord: this.missingCache.count, lastEventId: this.head.lastEventId, lastItemSeq: this.head.lastItemSeq,
      followError: this.follower?.error ?? null,
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    this.rebuilds.cancelFlush();
    this.follower?.stop();
    await this.worker?.terminate();
    await this.rebuilds.terminate();
    await this.reloading?.catch(() => undefined);
    await this.follower?.settled();
    await this.store?.close();
  }
}
