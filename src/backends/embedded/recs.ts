import type { Worker } from 'node:worker_threads';
import { badUserInput } from '../../errors.js';
import type { CallOptions, ItemModel, RecommendationKind, RecommendationListModel, RecommenderStateModel, RecsService } from '../../ports/backend.js';
import { buildModel, KINDS, LiveModel, Recommender } from '../../recommender/index.js';
import type { ApplyStats, Catalog, CompactionUnderWay, EventLog, Kind, ModelOptions, RebuildJob, RecEvent, RecModel } from '../../recommender/index.js';
import { buildDemo, demoEndsAt } from './demo.js';
import { parseStoredRecord } from '../../ports/itemRecord.js';
import type { RebuildAnswer } from './rebuildWorker.js';
import type { EventRow, RecsDataStore, RecsSource, StoreHead } from './liveStore.js';
import { rowToRecEvent } from './liveStore.js';
import { StoreOpenError } from './dataFiles.js';
import { demoWithStored, loadInWorker, openRecsData, startWorker } from './loadFromStore.js';
import type { Loaded } from './loadFromStore.js';
import { promised } from '../../ports/promised.js';

/** At most this many ids per getItems call (RecsService contract). */
const MAX_IDS = 100;

/**
 * How long after a batch its remaining work runs (EmbeddedRecs.applyEvents): short against
 * issue 20's second of freshness, long enough for a stream of small batches to share one
 * rebuild of next-best-product.
 */
export const FLUSH_DELAY_MS = 100;
/**
 * How much lower than the gateway's a rebuild thread's priority is (its nice value this much
 * higher, at most 19: rebuildNice): a rebuild makes lookups cheaper (an anchor a batch marked is
 * re-ranked when read until then); it is not what keeps answers current, so it takes what CPU
 * requests leave. A worker on the gateway's core at the same priority took a fifth to a third of
 * its CPU under a stream of 5,000-event batches (bench/ingest.ts pins the process to one core);
 * 10 lower, Linux's scheduler gives it about a tenth of a core the event loop wants (weights 110
 * against 1024 at nice 10 and 0), and all of an idle one.
 */
export const REBUILD_NICE = 10;
/** How long a slice of filing the log into a new live model holds the event loop (prepareLive). */
const LOAD_SLICE_MS = 10;
/** How long one flush by the timer re-ranks at most (what is left follows in later slices). */
const FLUSH_SLICE_MS = 10;
/** A flush on the event loop waits this many times as long as the last one took after it ended. */
const FLUSH_PACE = 3;

/** What a reload did. */
export interface ReloadResult {
  /** False when the store has no catalogue (the demo shop is served, with the stored events). */
  reloaded: boolean;
  /** The point of the store the model now reflects. */
  head: StoreHead;
  items: number;
  events: number;
  /** Reading the store in the worker, then building the model there, then the hand-over here. */
  loadMs: number;
  buildMs: number;
  swapMs: number;
  totalMs: number;
}

/** Where the served catalogue comes from: the store, or the demo shop while the store has none. */
export type RecsMode = RecommenderStateModel['mode'];

/** What /readyz shows of the recommender. */
export type RecsState = RecommenderStateModel;

/**
 * The live model's log is compacted (LiveModel.compact) once this many of its events, and at
 * least half of them, have aged out of the window: each event is then copied about once more
 * in its life. A pass comes at most once per as many new events as the log holds after it, in
 * steps (compactSoon).
 */
export const COMPACT_MIN_EVENTS = 100_000;
/**
 * Events a step of a compaction scans or copies (a key's name moved counting 8: NAME_COST):
 * about a millisecond on a quiet host (bench/compaction.ts), up to about 14 ms for the steps where
 * a new map grows past a power of two (V8 copies it whole), whatever the step's size; under a
 * probe's load, up to 111 ms of wall time. The last step, which swaps the log and the live
 * indexes' maps in, grows with the events kept: about 3 ms at 720,000 (renumbering the expiry heap).
 */
export const COMPACT_STEP_EVENTS = 65_536;

/** Rows a follower reads a query. */
const FOLLOW_PAGE = 20_000;
/**
 * Behind by more events than this (a large import elsewhere), a follower reloads whole in a
 * worker rather than applying them on its event loop.
 */
export const FULL_RELOAD_EVENTS = 200_000;

/**
 * The embedded recommendation service: item lookup and both lists from an in-memory catalogue
 * and a model built from the event log, built whole at start-up. With a store (SQLite or
 * PostgreSQL) it follows it: rows other processes wrote are read after the last applied id every
 * `followIntervalMs` and applied; the process that stores a call applies it before answering (see
 * applyOwnEvents). Batches are applied to the model in use without a rebuild (applyEvents,
 * applyItems: see recommender/live.ts): answers of both kinds change when those calls return
 * (next-best-product's scored with the prior statistics of its last full build, which a worker
 * makes again now and then: ModelOptions.nextBestRebuildShare, nextBestRebuildSeconds). Deletions (import --replace),
 * a switch from the demo shop to a catalogue and a large backlog reload whole in a worker thread;
 * lookups see the old model until the new one is swapped in.
 */
export class EmbeddedRecs implements RecsService {
  private recommender: Recommender;
  private current: Catalog;
  private reloading: Promise<ReloadResult> | null = null;
  private worker: Worker | null = null;
  private timer: NodeJS.Timeout | null = null;
  private closed = false;
  private polling: Promise<void> = Promise.resolve();
  private pollQueued: Promise<void> | null = null;
  private mode: RecsMode;
  private head: StoreHead = { generation: 0, lastEventId: 0, lastItemSeq: 0 };
  private followError: string | null = null;
  private missingCache: { at: number; count: number } | null = null;
  private readonly listeners: (() => void)[] = [];
  private readonly fullReloadEvents: number;
  private readonly compactMinEvents: number;
  private readonly compactStepEvents: number;
  /** A compaction of the live model's log is scheduled (compactSoon). */
  private compactQueued = false;
  /** Compactions of the live model's log: how many, the events they dropped, and the longest step of the last (ms; tests, logs). */
  readonly compactions = { count: 0, dropped: 0, lastMs: 0 };
  private flushTimer: NodeJS.Timeout | null = null;
  /** The model in use, once a batch has been applied (made on the first: start-up builds only what it serves). */
  private live: LiveModel | null = null;

  /**
   * `store`: the durable data this recommender follows (it takes ownership and closes it), with
   * `source` to reload it from in a worker; `prebuilt`: a model already built from `log`.
   */
  constructor(
    catalog: Catalog,
    private log: EventLog,
    private readonly options: ModelOptions = {},
    readonly store: RecsDataStore | null = null,
    private readonly source: RecsSource | null = null,
    init: { mode?: RecsMode; head?: StoreHead; model?: RecModel; fullReloadEvents?: number; compactMinEvents?: number; compactStepEvents?: number } = {},
  ) {
    this.fullReloadEvents = init.fullReloadEvents ?? FULL_RELOAD_EVENTS;
    this.compactMinEvents = init.compactMinEvents ?? COMPACT_MIN_EVENTS;
    this.compactStepEvents = init.compactStepEvents ?? COMPACT_STEP_EVENTS;
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

  /**
   * Calls `listener` after every change of the model or catalogue this recommender makes from its
   * store (applied rows, reloads): what a cache of its answers (the response cache) needs to drop them.
   */
  onChange(listener: () => void): void {
    this.listeners.push(listener);
  }

  private changed(): void {
    this.missingCache = null;
    for (const listener of this.listeners) listener();
  }

  /** The point of the store applied so far. */
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

  recommend(kind: RecommendationKind, anchorId: number, _options?: CallOptions): Promise<RecommendationListModel> {
    return promised(() => this.recommendNow(kind, anchorId));
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
   * the same events gives, next-best-product's those of a build with its last full build's prior
   * statistics (an anchor a batch touched is re-ranked when it is looked up, or by the flush
   * within FLUSH_DELAY_MS); a full build of next-best-product, when due, follows in a worker.
   * Listeners of onChange are told.
   */
  applyEvents(events: readonly RecEvent[]): void {
    const live = this.liveModel();
    this.lastApply = live.applyEvents(events);
    // A new Recommender: its per-category popularity lists are computed again on first use.
    this.recommender = new Recommender(live, this.current);
    this.scheduleFlush();
    this.compactSoon();
    this.changed();
  }

  /**
   * Compacts the live model's log between requests once enough of it has aged out (see
   * COMPACT_MIN_EVENTS): without it, a gateway that runs for months held every event it was ever
   * sent, though only the window's count. In steps of COMPACT_STEP_EVENTS, each in a turn of
   * the event loop of its own, batches going on between them; the last renumbers what the live
   * indexes hold.
   */
  private compactSoon(): void {
    const live = this.live;
    if (live === null || this.compactQueued || live.agedEvents < Math.max(this.compactMinEvents, this.log.length / 2)) return;
    this.compactQueued = true;
    let underWay: CompactionUnderWay | null = null;
    let started = 0;
    let longest = 0;
    const step = (): void => {
      if (this.live !== live || this.closed) {
        this.compactQueued = false;
        return;
      }
      const t0 = performance.now();
      if (underWay === null) {
        underWay = live.beginCompaction();
        started = t0;
      }
      const done = underWay !== null && live.compactStep(underWay, this.compactStepEvents);
      const moved = done ? live.finishCompaction(underWay!) : null;
      longest = Math.max(longest, performance.now() - t0);
      if (underWay !== null && !done) {
        setImmediate(step);
        return;
      }
      this.compactQueued = false;
      if (moved === null) return;
      this.compactions.count++;
      this.compactions.dropped += moved.before - moved.kept;
      this.compactions.lastMs = longest;
      const ms = performance.now() - started;
      this.say(`recommender: dropped ${moved.before - moved.kept} events older than the window from memory (${moved.kept} kept) in ${Math.round(ms)} ms, the event loop held at most ${Math.round(longest)} ms at a time`);
    };
    setImmediate(step);
  }

  private scheduleFlush(delay = FLUSH_DELAY_MS): void {
    const live = this.live;
    if (live === null || this.closed) return;
    // Work left by a batch after `delay`; else, where purchases came since next-best-product's
    // last full build, when its time bound makes the next one due (a timer that work comes before).
    const due = !live.pending;
    const wait = due ? live.rebuildDueInMs() : delay;
    if (!Number.isFinite(wait)) return;
    if (this.flushTimer !== null) {
      if (!this.flushTimerDue || (due && this.flushAt <= performance.now() + wait)) return;
      clearTimeout(this.flushTimer);
    }
    this.flushAt = performance.now() + wait;
    this.flushTimerDue = due;
    this.flushTimer = setTimeout(() => this.flushSoon(), Math.max(0, wait));
    this.flushTimer.unref();
  }

  /** When the flush timer fires (performance.now()), and whether it is only the time bound's. */
  private flushAt = Infinity;
  private flushTimerDue = false;

  private lastFlushMs = 0;
  /** When the last flush on the event loop ended (performance.now()). */
  private lastFlushEnd = -Infinity;

  /**
   * Does now, on the event loop, what applyEvents left to its flush (tests, benchmarks; the timer
   * runs flushSoon); null when there is no live model. `except`: kinds whose rebuild a worker has.
   */
  flush(except: readonly Kind[] = [], ms = Infinity): ApplyStats | null {
    if (this.flushTimer !== null) clearTimeout(this.flushTimer);
    this.flushTimer = null;
    const stats = this.live?.flush(except, ms) ?? null;
    if (stats !== null) {
      this.lastFlushMs = stats.ms;
      this.lastFlushEnd = performance.now();
      this.changed(); // lists re-ranked or rebuilt
    }
    return stats;
  }

  /** Per kind, the worker that rebuilds it (made at its first rebuild) and its job under way. */
  private readonly rebuilders: Record<Kind, Worker | null> = { postBrowse: null, nextBest: null };
  private readonly rebuildUnderWay: Record<Kind, { live: LiveModel; job: Pick<RebuildJob, 'kind' | 'build'> } | null> = { postBrowse: null, nextBest: null };
  /** Set when a worker failed: rebuilds stay on the event loop from then on. */
  private rebuildOnLoop = false;
  /** Rebuilds made in a worker: swapped in, or dropped because a later build came first (tests, benchmarks). */
  readonly offLoop = { adopted: 0, discarded: 0 };

  /**
   * Per kind, until when (performance.now()) its next rebuild in a worker waits: FLUSH_PACE
   * times as long as its last one took, as the flush on the loop waits, so that under a stream of
   * large batches a worker builds at most a quarter of the time rather than back to back (the
   * worker's core is often the gateway's own: bench/ingest.ts pins the process to one). Times are
   * wall times: a rebuild that requests slowed (it runs at a lower priority: REBUILD_NICE) rests
   * the longer.
   */
  private readonly restUntil: Record<Kind, number> = { postBrowse: -Infinity, nextBest: -Infinity };

  /** The kinds a worker is rebuilding now. */
  private kindsUnderWay(): Kind[] {
    return KINDS.filter((kind) => this.rebuildUnderWay[kind] !== null);
  }

  /** The kinds the flush leaves to a worker: under way there, or waiting for their next rebuild there. */
  private kindsLeftToWorkers(now: number): Kind[] {
    if (this.rebuildOnLoop) return this.kindsUnderWay();
    return KINDS.filter((kind) => this.rebuildUnderWay[kind] !== null || now < this.restUntil[kind]);
  }

  /** Whether work of a batch is still to come: a flush, or a rebuild under way in a worker. */
  get settling(): boolean {
    return this.kindsUnderWay().length > 0 || (this.live?.pending ?? false);
  }

  /**
   * What the flush timer runs: the flush, with the full builds it would make on the event loop in
   * worker threads instead (LiveModel.takeRebuild: next-best-product's when due, either kind's
   * where a batch marked so much that a build is quicker than re-ranking: a batch of 5,000 on the
   * demo shop), where each held every request for 50 to 130 ms (on a million events, half a
   * second). A kind's lists are swapped in when its worker is done, with the anchors that batches
   * touched meanwhile marked again; until then lookups re-rank the marked anchors they read, so
   * answers follow every event at once. One rebuild of a kind at a time.
   */
  private flushSoon(): void {
    this.flushTimer = null;
    const live = this.live;
    if (live === null || this.closed) return;
    const now = performance.now();
    if (!this.rebuildOnLoop) {
      for (const kind of KINDS) {
        if (this.rebuildUnderWay[kind] !== null || now < this.restUntil[kind]) continue;
        const job = live.takeRebuild(kind);
        if (job !== null) this.rebuildOffLoop(live, job);
      }
    }
    // The rest holds the event loop (re-ranking what batches marked): at most a quarter of the
    // time, waiting three times as long as the last one took. Answers do not wait for it (a lookup
    // re-ranks its anchor); it keeps lookups cheap.
    const elsewhere = this.kindsLeftToWorkers(now);
    const wait = this.lastFlushEnd + FLUSH_PACE * this.lastFlushMs - now;
    if (wait > 0 && (elsewhere.length > 0 || !live.waitsForRebuild('nextBest'))) {
      this.scheduleFlush(wait);
      return;
    }
    this.flush(elsewhere, FLUSH_SLICE_MS);
    // Nothing left: where purchases came since next-best-product's last full build (taken in or
    // out by age, a view moving the window), the timer of its time bound, which nothing else
    // arms (a batch's flush timer is this one: without it the bound waited for the next batch).
    if (!live.pending) return this.scheduleFlush();
    // Anchors left by the slice: the next one paced as the flush is. A kind left marked for a
    // worker that rests: taken when the rest ends (one under way reschedules when done).
    const rests = KINDS.filter((kind) => this.rebuildUnderWay[kind] === null && now < this.restUntil[kind]).map((kind) => this.restUntil[kind] - now);
    this.scheduleFlush(Math.max(0, Math.min(FLUSH_PACE * this.lastFlushMs, ...rests)));
  }

  private rebuildOffLoop(live: LiveModel, job: RebuildJob): void {
    // The log's columns are shared memory (posted, not copied); the facts' copies are transferred.
    const { facts } = job;
    const buffers = [facts.candidate, facts.family, facts.category, facts.categoryRank].map((a) => a?.buffer).filter((b): b is ArrayBuffer => b instanceof ArrayBuffer);
    try {
      const worker = (this.rebuilders[job.kind] ??= this.startRebuilder(job.kind));
      this.rebuildUnderWay[job.kind] = { live, job: { kind: job.kind, build: job.build } };
      worker.postMessage(job, [...new Set(buffers)]);
    } catch (error) {
      this.rebuildFailed(job.kind, (error as Error).message);
    }
  }

  private startRebuilder(kind: Kind): Worker {
    const worker = startWorker('rebuildWorker', { nice: REBUILD_NICE });
    worker.unref();
    worker.on('message', (answer: RebuildAnswer) => this.rebuilt(kind, answer));
    worker.on('error', (error: Error) => this.rebuildFailed(kind, error.message));
    worker.on('exit', () => {
      if (!this.closed) this.rebuildFailed(kind, 'the worker exited');
    });
    return worker;
  }

  private rebuilt(kind: Kind, answer: RebuildAnswer): void {
    const underWay = this.rebuildUnderWay[kind];
    this.rebuildUnderWay[kind] = null;
    if (underWay === null || this.closed) return;
    if ('error' in answer) return this.rebuildFailed(kind, answer.error, underWay);
    this.restUntil[kind] = performance.now() + FLUSH_PACE * answer.ms;
    // not when a reload swapped the model, nor when a rebuild on the loop (applyItems, flush) came later
    if (this.live === underWay.live && underWay.live.adoptRebuild(underWay.job, answer.built)) {
      this.offLoop.adopted++;
      this.changed();
    } else {
      this.offLoop.discarded++;
    }
    this.scheduleFlush();
  }

  private rebuildFailed(kind: Kind, message: string, underWay = this.rebuildUnderWay[kind]): void {
    this.rebuildUnderWay[kind] = null;
    if (underWay !== null) underWay.live.requeueRebuild(underWay.job);
    if (this.rebuildOnLoop) return;
    this.rebuildOnLoop = true;
    for (const k of KINDS) {
      const worker = this.rebuilders[k];
      this.rebuilders[k] = null;
      void worker?.terminate();
      const other = this.rebuildUnderWay[k];
      this.rebuildUnderWay[k] = null;
      other?.live.requeueRebuild(other.job); // terminated: the next flush rebuilds it here
    }
    this.say(`recommender: a rebuild in a worker failed (${message}); rebuilds run on the event loop from now on`);
    this.scheduleFlush();
  }

  /** Applies item records already stored: they join the catalogue, replacing older records of the same ids. */
  applyItems(items: readonly ItemModel[]): void {
    const live = this.liveModel();
    this.lastApply = live.applyItems(items);
    this.recommender = new Recommender(live, this.current);
    this.changed();
  }

  /** What the last applyEvents or applyItems did (benchmarks, logs); null before any. */
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

  /** The live model being filed in slices between requests (prepareLive), and who waits for it. */
  private preparing: { model: LiveModel; done: Promise<void>; resolve: () => void } | null = null;

  /**
   * Makes the live model of the model in use in the background, in slices of LOAD_SLICE_MS
   * between requests, where a store is followed: filing the log takes about 1.2 s a million
   * events, which the first batch after start-up or a reload made every request wait for (2.6 s
   * on a store of 2M events). Batches from the store wait for it without holding the loop (liveReady).
   */
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

  /** The model being prepared is loaded: it is the live model now. */
  private prepared(): void {
    const preparing = this.preparing!;
    this.preparing = null;
    this.live = preparing.model;
    preparing.resolve();
  }

  /** Resolves once the live model of the model in use is made (at once where it is; else in slices). */
  private liveReady(): Promise<void> {
    if (this.live !== null || this.store === null) return Promise.resolve();
    this.prepareLive();
    return this.preparing?.done ?? Promise.resolve();
  }

  /** Swaps in a model built here, synchronously, from a new in-memory log (demo, benchmarks). */
  rebuild(log: EventLog = this.log): void {
    this.log = log;
    this.live = null;
    this.preparing = null;
    this.recommender = new Recommender(buildModel(log, this.options, this.current), this.current);
  }

  /**
   * Applies a batch this process has just committed (rows as stored), before its call is
   * answered. When nothing stored by others lies between what is applied and the batch, directly;
   * otherwise by catching up with the store, which reads the gap and the batch in id order. A
   * follower's read that also returns these rows skips them (rows at or below the applied id).
   */
  async applyOwnEvents(rows: readonly EventRow[]): Promise<void> {
    if (rows.length === 0) return;
    if (this.live === null) await this.liveReady();
    if (this.reloading === null && rows[0]![0] === this.head.lastEventId + 1) {
      this.applyEvents(rows.map(rowToRecEvent));
      this.head.lastEventId = rows[rows.length - 1]![0];
      return;
    }
    await this.catchUp({ lastEventId: rows[rows.length - 1]![0] });
  }

  /** Applies item records this process has just committed under `seq` (see applyOwnEvents). */
  async applyOwnItems(items: readonly ItemModel[], seq: number): Promise<void> {
    if (this.live === null && this.mode === 'store') await this.liveReady();
    if (this.mode === 'store' && this.reloading === null && seq === this.head.lastItemSeq + 1) {
      this.applyItems(items);
      this.head.lastItemSeq = seq;
      return;
    }
    // demo mode: the first records switch to the stored catalogue (a reload, see pollOnce)
    await this.catchUp({ lastItemSeq: seq });
  }

  /**
   * Follows the store until it has applied at least `target`. Never fails: what it catches up
   * with is committed already (its call must be answered as accepted, or a retry would store it
   * twice); when the store cannot be read now, the follower's next round applies it
   * (`followError` says why meanwhile).
   */
  async catchUp(target: Partial<Pick<StoreHead, 'lastEventId' | 'lastItemSeq'>>): Promise<void> {
    for (let i = 0; i < 100 && !this.closed; i++) {
      if ((target.lastEventId ?? 0) <= this.head.lastEventId && (target.lastItemSeq ?? 0) <= this.head.lastItemSeq) return;
      try {
        await this.poll();
      } catch {
        return;
      }
    }
  }

  /**
   * Reads what the store has beyond the applied point and applies it. Polls are serialised; a
   * call while one runs waits for it and then runs one more (shared by every caller meanwhile).
   */
  poll(): Promise<void> {
    if (this.store === null) return Promise.resolve();
    this.pollQueued ??= this.polling.then(() => {
      this.pollQueued = null;
      return this.pollOnce();
    });
    this.polling = this.pollQueued.catch(() => undefined);
    return this.pollQueued;
  }

  private async pollOnce(): Promise<void> {
    const store = this.store!;
    if (this.closed) return;
    if (this.reloading !== null) await this.reloading.catch(() => undefined);
    try {
      // A batch of this process's may be applied while the head is read (applyOwnEvents): a head
      // read before its commit is then below the applied id without the store having gone back.
      // Only a head below what was applied before asking means the store lost events.
      const appliedBefore = this.head.lastEventId;
      const head = await store.head();
      const wholeReload = head.generation !== this.head.generation
        || (this.mode === 'demo' && head.lastItemSeq > this.head.lastItemSeq)
        || head.lastEventId - this.head.lastEventId > this.fullReloadEvents
        || head.lastEventId < appliedBefore;
      if (wholeReload) {
        await this.reload();
        this.followError = null;
        return;
      }
      if (this.live === null && (head.lastItemSeq > this.head.lastItemSeq || head.lastEventId > this.head.lastEventId)) await this.liveReady();
      if (head.lastItemSeq > this.head.lastItemSeq) {
        const { seq, records } = await store.itemsAfter(this.head.lastItemSeq);
        if (seq > this.head.lastItemSeq && !this.closed) {
          this.applyItems(records.map(parseStoredRecord));
          this.head.lastItemSeq = seq;
        }
      }
      while (head.lastEventId > this.head.lastEventId && !this.closed) {
        const rows = await store.eventsAfter(this.head.lastEventId, FOLLOW_PAGE);
        // an own batch applied meanwhile is at or below the applied id now
        let from = 0;
        while (from < rows.length && rows[from]![0] <= this.head.lastEventId) from++;
        if (from < rows.length) {
          this.applyEvents(rows.slice(from).map(rowToRecEvent));
          this.head.lastEventId = rows[rows.length - 1]![0];
        }
        if (rows.length < FOLLOW_PAGE) break;
      }
      this.followError = null;
    } catch (error) {
      this.followError = (error as Error).message;
      throw error;
    }
  }

  /**
   * Reloads the store whole: a worker thread reads the catalogue and the events and builds the
   * model; the records come over in chunks parsed between requests, and the model's and the log's
   * arrays are transferred, so the event loop is never held for long. The new catalogue and model
   * replace the old ones together. Without a catalogue in the store, the demo shop with the stored
   * events. Concurrent calls share one reload.
   */
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

  /**
   * Whole reloads whose model was built in the worker, and on the event loop (only where the store
   * does not exist yet: its demo shop has no stored events); tests.
   */
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
    this.preparing = null;
    this.mode = mode;
    this.head = { ...head };
    this.changed();
    this.prepareLive();
  }

  /**
   * Follows the store every `intervalMs` (one cheap query when nothing changed). `say` gets one
   * line per whole reload and per failure.
   */
  follow(intervalMs: number, say: (line: string) => void = () => {}): void {
    if (this.store === null || this.timer !== null || intervalMs <= 0) return;
    this.say = say;
    let failing = false;
    const tick = (): void => {
      if (this.closed) return;
      this.poll().then(
        () => {
          if (failing && !this.closed) say(`recommender: following ${this.store!.where} again`);
          failing = false;
        },
        (error: unknown) => {
          // a stop ends the load worker under way: that is no failure to follow the store
          if (this.closed) return;
          if (!failing) say(`recommender: cannot follow ${this.store!.where}, the model in use stays: ${(error as Error).message}`);
          failing = true;
        },
      );
    };
    this.timer = setInterval(tick, intervalMs);
    this.timer.unref();
  }

  private say: (line: string) => void = () => {};

  /** What /readyz shows; the count of items without a record is recomputed at most once a second. */
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
      followError: this.followError,
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.flushTimer !== null) clearTimeout(this.flushTimer);
    this.flushTimer = null;
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    await this.worker?.terminate();
    for (const kind of KINDS) await this.rebuilders[kind]?.terminate();
    await this.reloading?.catch(() => undefined);
    await this.polling;
    await this.store?.close();
  }
}


/** Options of openEmbeddedRecs. */
export interface OpenEmbeddedRecsOptions {
  /**
   * DATA_DIR: DATA_DIR/recs.db (created when missing) holds the events and the catalogue, unless
   * `databaseUrl` is given. Null (tests, benchmarks): the deterministic demo shop in memory, no store.
   */
  dataDir: string | null;
  /** DATABASE_URL: events and catalogue in PostgreSQL, shared by every replica. */
  databaseUrl?: string | null;
  /** A PostgreSQL schema for the tables (tests); default the connection's search_path. */
  schema?: string;
  /** One line per step, for the server log; default silent. */
  log?: (line: string) => void;
  /** Model options; defaults as documented on ModelOptions. */
  model?: ModelOptions;
  /** How often to follow the store (see EmbeddedRecs.follow); 0 never. Default FOLLOW_INTERVAL_MS. */
  followIntervalMs?: number;
  /** Behind by more events than this, reload whole rather than apply them; default FULL_RELOAD_EVENTS. */
  fullReloadEvents?: number;
  /** SQLite: how long a write waits for another process's write lock (tests); default LOCK_RETRY_MS (store.ts). */
  storeLockRetryMs?: number;
}

/**
 * Default of OpenEmbeddedRecsOptions.followIntervalMs: a follow is one query on an index
 * (about 0.1 ms on SQLite, 0.3 ms on a local PostgreSQL), so four a second cost nothing and keep
 * replicas within about a quarter of a second of each other.
 */
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
    // The store opened but what it holds cannot be loaded (a record that is not JSON, say): a
    // start stops on one line naming the store, not on a bare message from deep in a worker.
    if (error instanceof StoreOpenError) throw error;
    const why = (error instanceof Error ? error.message : String(error)).split('\n')[0];
    throw new StoreOpenError(`cannot load the recommender from ${store.where}: ${why}`, { cause: error });
  }
  recs.follow(interval, say);
  return recs;
}
