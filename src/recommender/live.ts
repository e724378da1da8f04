import type { ItemModel } from '../ports/backend.js';
import type { Catalog } from './catalog.js';
import { categoryOf, familyOf } from './catalog.js';
import type { CompactionUnderWay, EventLog, EventLogColumns, ItemIndex, LogCompaction, RecEvent } from './eventLog.js';
import { KIND_PURCHASE, KIND_VIEW } from './eventLog.js';
import { DAY_MS, buildNeighbours, referenceStep } from './cooccurrence.js';
import type { ItemFacts, NeighbourOptions, Neighbours, PriorStats } from './cooccurrence.js';
import { DEFAULT_NEXT_BEST_REBUILD_SECONDS, DEFAULT_NEXT_BEST_REBUILD_SHARE, buildModel, cutoffOf, itemFacts, latestTime, nextBestScoring, nextBestSets, popularityOrder, postBrowseScoring, postBrowseSets } from './model.js';
import type { ModelOptions, RecModel } from './model.js';
import { LOAD_STEP, LiveNeighbours, growInt32, nextBestLiveSets, postBrowseLiveSets } from './liveNeighbours.js';

/*
 * The live model: a built model (see model.ts) that takes new events and item records without a
 * rebuild, and gives the lists a full build over the same events and catalogue gives, bit for bit
 * (test/recommender/live.test.ts).
 *
 * A kind whose scoring has no prior (post-browse by default) is updated incrementally. Its groups
 * (visits, orders, histories) are kept with an item-to-position index. A new event goes into its
 * group's key (session, order, user); the key's groups are then computed again by the rules of
 * the full build (sessions.ts, buildGroups), the old ones subtracted and the new ones added to
 * n(b) and N; their items are the anchors whose lists may change (and, where damping > 0, every
 * item near an item whose n(b) changed): marked. A marked anchor is re-ranked from its own
 * positions, with the build's scoring, when a lookup reads it (refresh) or at the latest by the
 * flush the caller runs shortly after (EmbeddedRecs: 100 ms); its list replaces the built one
 * (Neighbours.overrides), folded into the arrays when they grow many. Where the marked anchors
 * hold a large share of all positions (a batch of thousands), a build of the kind is the quicker
 * way to the same lists: the caller takes it to another thread (takeRebuild: the log's events so
 * far, in shared memory, and the anchors marked since noted), and lookups re-rank what they read
 * meanwhile; the flush builds it on the event loop only where no thread is at hand. Sums agree with the build's because every term is exact in a double (ORDER_SCALE,
 * recencyWeight), so the order in which groups come and go does not matter.
 *
 * A kind with a prior (next-best-product: the category prior depends on N and on every
 * category's counts, and damping on every neighbour's n(b), so that one new order moves every
 * anchor a little) is a full build plus an overlay: kept as above, but scored with the prior
 * statistics of its last full build (N, the categories' counts and partners, each known item's
 * n(b): see PriorStats), so that a batch marks only the anchors whose own groups changed (and
 * those near an item that build did not know). The overlay's lists are those of a build given
 * the same statistics, bit for bit. A full build makes them current again (in a worker: see
 * EmbeddedRecs and takeRebuild) when purchases since exceed nextBestRebuildShare of those it
 * counted, or nextBestRebuildSeconds passed with purchases since. With a half-life (which
 * would scale the statistics) or an evaluation weighting, the kind is rebuilt whole by the flush
 * after every batch that holds events of its kind instead. Item records that change an item's
 * family, category or candidacy flush at once (with a full build of a kind with a prior).
 *
 * RECS_EVENTS_MAX_AGE_DAYS: events older than the newest event seen by that many days are taken
 * out (a heap by time), their groups computed again like those of new events.
 *
 * What it holds is what the request path needs; nothing of evaluate's weightings (pairScore) is
 * here: a kind with one is never incremental.
 */

/** How one group set keys, splits and weighs its events (the live twin of sessions.ts). */

/** The two lists a model keeps. */
export type Kind = 'postBrowse' | 'nextBest';

/** A kind's rebuild, to run in another thread (LiveModel.takeRebuild; buildKind runs it). */
export interface RebuildJob {
  kind: Kind;
  /** Which build of the kind this is (LiveModel.adoptRebuild takes only the latest). */
  build: number;
  log: EventLogColumns;
  facts: ItemFacts;
  options: ModelOptions;
  cutoff: number;
}

/**
 * Builds one kind's lists from the events from `cutoff` on: what a full build gives that kind;
 * with `frozen`, scored with those prior statistics (see PriorStats), as the live model keeps it.
 */
export function buildKind(kind: Kind, log: EventLog, options: ModelOptions, cutoff: number, facts: ItemFacts, frozen?: PriorStats): Neighbours {
  return kind === 'postBrowse'
    ? buildNeighbours(log, postBrowseSets(log, options, cutoff), postBrowseScoring(options), facts, frozen)
    : buildNeighbours(log, nextBestSets(log, options, cutoff), nextBestScoring(options), facts, frozen);
}

/**
 * A flush rebuilds an incremental kind instead of re-ranking when the marked anchors hold more
 * than this share of all positions (bench/live.ts: a re-rank walks a position about three times
 * slower than the build, which renumbers items for locality).
 */
const REBUILD_SHARE = 0.3;
export const KINDS: readonly Kind[] = ['postBrowse', 'nextBest'];

/** What applying a batch (or a flush) did (for logs and benchmarks). */
export interface ApplyStats {
  events: number;
  /** Anchors marked for re-ranking (applyEvents), or re-ranked (flush, applyItems). */
  reranked: number;
  /** Kinds rebuilt whole (next-best-product after purchases, where it has a prior), and the time that took. */
  rebuilt: string[];
  rebuildMs: number;
  /** Events taken out by age. */
  expired: number;
  ms: number;
}

/**
 * What an event filed (or a key) costs a compaction's remap (LiveNeighbours.remapStep) against
 * an event of the log's steps: a map entry and a new array against a few typed-array writes
 * (bench/compaction.ts: steps of 65,536 log events took about 1 ms, of as many filed events 8 to 20).
 */
const REMAP_COST = 8;

/** A min-heap of event indexes by time, for expiry. */
class TimeHeap {
  private heap: Int32Array = new Int32Array(1024);
  size = 0;
  constructor(private readonly log: EventLog) {}
  push(e: number): void {
    if (this.size === this.heap.length) this.heap = growInt32(this.heap, 2 * this.size);
    const time = this.log.time;
    let i = this.size++;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (time[this.heap[parent]!]! <= time[e]!) break;
      this.heap[i] = this.heap[parent]!;
      i = parent;
    }
    this.heap[i] = e;
  }
  peekTime(): number {
    return this.size === 0 ? Infinity : this.log.time[this.heap[0]!]!;
  }
  /** Renumbers the events held (EventLog.compact keeps their order, and so the heap's). */
  remap(events: Int32Array): void {
    for (let i = 0; i < this.size; i++) this.heap[i] = events[this.heap[i]!]!;
  }
  pop(): number {
    const top = this.heap[0]!;
    const last = this.heap[--this.size]!;
    const time = this.log.time;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= this.size) break;
      const r = l + 1;
      const m = r < this.size && time[this.heap[r]!]! < time[this.heap[l]!]! ? r : l;
      if (time[this.heap[m]!]! >= time[last]!) break;
      this.heap[i] = this.heap[m]!;
      i = m;
    }
    this.heap[i] = last;
    return top;
  }
}

/**
 * A RecModel that follows new events and item records (see the top of this file): built in full
 * once (buildModel, or `built` when the caller has just built it from the same log, options and
 * catalogue), then kept by applyEvents and applyItems. It shares the log and the catalogue
 * with its caller and appends to both.
 */
export class LiveModel implements RecModel {
  readonly items: ItemIndex;
  postBrowse: Neighbours;
  nextBest: Neighbours;
  views: Float64Array;
  purchases: Float64Array;
  category: Int32Array | null;
  buildMs: number;
  private facts: ItemFacts;
  private viewed: Int32Array | null;
  private bought: Int32Array | null;
  private latest: number;
  private readonly live: { postBrowse: LiveNeighbours | null; nextBest: LiveNeighbours | null };
  private readonly expiry: TimeHeap | null;
  /** Kinds with a prior whose rebuild waits for flush. */
  private readonly stale = new Set<Kind>();
  private readonly halfLifeMs: Record<Kind, number>;
  /**
   * Next-best-product under its prior (see PriorStats): purchases taken in or out since its last
   * full build, the purchases that build counted, when it was made (performance.now()), and
   * whether a rebuild is owed whatever those say (a failed one, new categories).
   */
  private readonly sinceBuild = { purchases: 0, base: 0, at: 0, owed: false };
  /** Whether next-best-product is kept from its last full build's prior statistics (see PriorStats). */
  private readonly nextBestFrozen: boolean;

  constructor(
    private readonly log: EventLog,
    private readonly options: ModelOptions,
    private readonly catalog: Catalog | null,
    built: RecModel = buildModel(log, options, catalog),
    deferred = false,
  ) {
    this.items = built.items;
    this.postBrowse = built.postBrowse;
    this.nextBest = built.nextBest;
    this.views = built.views;
    this.purchases = built.purchases;
    this.viewed = built.popularViewed;
    this.bought = built.popularBought;
    this.buildMs = built.buildMs;
    this.facts = itemFacts(log.items, catalog);
    this.category = this.facts.category ?? null;
    this.latest = latestTime(log);
    const cutoff = cutoffOf(this.latest, options);
    // A prior is kept incrementally from its last full build's statistics (see PriorStats), which
    // recency would scale: with a half-life it is rebuilt whole instead.
    const incremental = (s: NeighbourOptions, n: Neighbours): boolean =>
      s.pairScore === undefined && ((s.prior ?? 0) === 0 || ((s.halfLifeDays ?? 0) === 0 && n.priorStats !== undefined));
    const pb = postBrowseScoring(options);
    const nb = nextBestScoring(options);
    this.halfLifeMs = { postBrowse: (pb.halfLifeDays ?? 0) * DAY_MS, nextBest: (nb.halfLifeDays ?? 0) * DAY_MS };
    this.live = {
      postBrowse: incremental(pb, this.postBrowse) ? new LiveNeighbours(log, postBrowseLiveSets(options), pb, this.postBrowse, options, this.latest) : null,
      nextBest: incremental(nb, this.nextBest) ? new LiveNeighbours(log, nextBestLiveSets(options), nb, this.nextBest, options, this.latest) : null,
    };
    this.nextBestFrozen = this.live.nextBest !== null && (nb.prior ?? 0) > 0;
    this.builtNow('nextBest');
    this.expiry = (options.maxAgeDays ?? 0) > 0 ? new TimeHeap(log) : null;
    this.loading = this.load(cutoff);
    if (!deferred) this.loadFor(Infinity);
  }

  /** The rest of what the constructor files (see loadFor); done when it returns done. */
  private loading: Generator<void, void, void>;

  private *load(cutoff: number): Generator<void, void, void> {
    if (this.live.postBrowse !== null) yield* this.live.postBrowse.load(cutoff, this.items.size);
    if (this.live.nextBest !== null) yield* this.live.nextBest.load(cutoff, this.items.size);
    const log = this.log;
    if (this.expiry !== null) {
      for (let e = 0; e < log.length; e++) {
        if (log.time[e]! >= cutoff) this.expiry.push(e);
        if (e % LOAD_STEP === LOAD_STEP - 1) yield;
      }
    }
  }

  /** Whether the events of the log it was made from are filed (a model made deferred: see loadFor). */
  get loaded(): boolean {
    return this.loadingDone;
  }

  private loadingDone = false;

  /**
   * Files the log's events into the live index for at most `ms` (Infinity: to the end); whether
   * it is done. A model made with `deferred` must be loaded before anything else is asked of it:
   * EmbeddedRecs loads it in slices between requests, since filing a log takes about 1.2 s a
   * million events, which a batch arriving after start-up used to wait for with every request.
   */
  loadFor(ms: number): boolean {
    if (this.loadingDone) return true;
    const end = performance.now() + ms;
    do {
      if (this.loading.next().done === true) {
        this.loadingDone = true;
        return true;
      }
    } while (performance.now() < end);
    return false;
  }

  get popularViewed(): Int32Array {
    this.viewed ??= popularityOrder(this.views, this.purchases, this.facts.candidate ?? null, this.items);
    return this.viewed;
  }
  set popularViewed(list: Int32Array) {
    this.viewed = list;
  }
  get popularBought(): Int32Array {
    this.bought ??= popularityOrder(this.purchases, this.views, this.facts.candidate ?? null, this.items);
    return this.bought;
  }
  set popularBought(list: Int32Array) {
    this.bought = list;
  }

  /** Events already stored, in store order: applied to the model; answers change when this returns. */
  applyEvents(events: readonly RecEvent[]): ApplyStats {
    const t0 = performance.now();
    const log = this.log;
    const first = log.length;
    for (const event of events) log.add(event);
    this.growItems(this.items.size);
    let latest = this.latest;
    for (let e = first; e < log.length; e++) if (log.time[e]! > latest) latest = log.time[e]!;
    const stepMoved = (h: number): boolean => h > 0 && referenceStep(latest, h) !== referenceStep(this.latest, h);
    const postBrowseMoved = stepMoved(this.halfLifeMs.postBrowse);
    const nextBestMoved = stepMoved(this.halfLifeMs.nextBest);
    this.latest = latest;
    this.live.postBrowse?.settle(latest);
    this.live.nextBest?.settle(latest);
    const cutoff = cutoffOf(latest, this.options);
    const changed = [false, false];
    for (let e = first; e < log.length; e++) {
      if (log.time[e]! < cutoff) continue;
      if (log.kind[e] === KIND_PURCHASE) this.sinceBuild.purchases++;
      this.count(e, 1);
      changed[log.kind[e]!] = true;
      this.expiry?.push(e);
      this.live.postBrowse?.add(e);
      this.live.nextBest?.add(e);
    }
    let expired = 0;
    while (this.expiry !== null && this.expiry.peekTime() < cutoff) {
      const e = this.expiry.pop();
      if (log.kind[e] === KIND_PURCHASE) this.sinceBuild.purchases++;
      this.count(e, -1);
      changed[log.kind[e]!] = true;
      this.live.postBrowse?.expire(e);
      this.live.nextBest?.expire(e);
      expired++;
    }
    if (changed[0] === true || changed[1] === true) {
      this.viewed = null;
      this.bought = null;
    }
    const stats: ApplyStats = { events: events.length, reranked: 0, rebuilt: [], rebuildMs: 0, expired, ms: 0 };
    this.update('postBrowse', changed[KIND_VIEW] === true, postBrowseMoved, cutoff, stats);
    this.update('nextBest', changed[KIND_PURCHASE] === true, nextBestMoved, cutoff, stats);
    stats.ms = performance.now() - t0;
    return stats;
  }

  /**
   * Events the log holds that have aged out of the window (RECS_EVENTS_MAX_AGE_DAYS): what
   * compact would drop. Every event within it is in the expiry heap, so the rest are those.
   */
  get agedEvents(): number {
    return this.expiry === null || !this.loadingDone ? 0 : this.log.length - this.expiry.size;
  }

  /**
   * Drops from the log (shared with the caller, who sees it shrink) the events that aged out of
   * the window and the keys only they had, so that a running gateway's memory follows its window,
   * not its uptime. Nothing served changes: those events count for nothing any more. Null where
   * there is no window, or the model is still being filed.
   */
  compact(): LogCompaction | null {
    const underWay = this.beginCompaction();
    if (underWay === null) return null;
    this.compactStep(underWay, Infinity);
    return this.finishCompaction(underWay);
  }

  /**
   * compact in steps, between other work (batches included): compactStep until it returns
   * true, then finishCompaction. Null where compact would do nothing.
   */
  beginCompaction(): CompactionUnderWay | null {
    if (this.expiry === null || !this.loadingDone) return null;
    this.live.postBrowse?.beginRemap();
    this.live.nextBest?.beginRemap();
    // Every event dropped (dated before this cutoff) has left the expiry heap and the live
    // indexes already; those that leave them meanwhile are kept until the next compaction.
    return this.log.beginCompact(cutoffOf(this.latest, this.options));
  }

  /**
   * A step of a compaction begun by beginCompaction: the log's (EventLog.compactStep), then the
   * live indexes' (LiveNeighbours.remapStep), about `maxEvents` log events' worth of work (see
   * REMAP_COST); true when they are all done. The log's last and the indexes' first may share a call.
   */
  compactStep(underWay: CompactionUnderWay, maxEvents: number): boolean {
    if (!this.log.compactStep(underWay, maxEvents)) return false;
    const settled = this.log.settled(underWay)!;
    const budget = maxEvents / REMAP_COST;
    return (this.live.postBrowse?.remapStep(settled, budget) ?? true) && (this.live.nextBest?.remapStep(settled, budget) ?? true);
  }

  /** Ends a compaction begun by beginCompaction whose steps are done; null when it is no longer under way. */
  finishCompaction(underWay: CompactionUnderWay): LogCompaction | null {
    if (!(this.live.postBrowse?.remapDone ?? true) || !(this.live.nextBest?.remapDone ?? true)) return null;
    const moved = this.log.finishCompact(underWay);
    if (moved === null) return null;
    this.expiry!.remap(moved.events);
    this.live.postBrowse?.finishRemap(moved);
    this.live.nextBest?.finishRemap(moved);
    return moved;
  }

  /** Whether `kind` is kept incrementally (else rebuilt whole by the flush after batches that change it). */
  incremental(kind: Kind): boolean {
    return this.live[kind] !== null;
  }

  /** Whether `kind` waits for a rebuild (a kind rebuilt whole that events changed, or one kept from its statistics that is due). */
  waitsForRebuild(kind: Kind): boolean {
    return this.stale.has(kind) || this.rebuildDue(kind);
  }

  /** Whether flush has work: anchors marked, or a kind to rebuild. */
  get pending(): boolean {
    return this.stale.size > 0 || (this.live.postBrowse?.dirtyCount ?? 0) > 0 || (this.live.nextBest?.dirtyCount ?? 0) > 0 || this.rebuildDue('nextBest');
  }

  /**
   * Whether a kind kept from its last full build's prior statistics is due for a full build:
   * purchases since it exceed ModelOptions.nextBestRebuildShare of those it counted, or it is
   * older than nextBestRebuildSeconds with purchases since.
   */
  private rebuildDue(kind: Kind): boolean {
    if (kind !== 'nextBest' || !this.nextBestFrozen) return false;
    const since = this.sinceBuild;
    return since.owed || (since.purchases > 0 && (since.purchases > this.rebuildShare * since.base || this.rebuildDueInMs() <= 0));
  }

  /**
   * How long until next-best-product's time bound makes it due (see rebuildDue); Infinity where
   * no purchase came since its last full build (nothing to catch up with).
   */
  rebuildDueInMs(): number {
    if (!this.nextBestFrozen || this.sinceBuild.purchases === 0) return Infinity;
    return this.sinceBuild.at + 1000 * (this.options.nextBestRebuildSeconds ?? DEFAULT_NEXT_BEST_REBUILD_SECONDS) - performance.now();
  }

  private get rebuildShare(): number {
    return this.options.nextBestRebuildShare ?? DEFAULT_NEXT_BEST_REBUILD_SHARE;
  }

  /** A full build of `kind` over the log as it is now was made (or taken to another thread). */
  private builtNow(kind: Kind): void {
    if (kind !== 'nextBest') return;
    let base = 0;
    for (let i = 0; i < this.purchases.length; i++) base += this.purchases[i]!;
    this.sinceBuild.purchases = 0;
    this.sinceBuild.base = base;
    this.sinceBuild.at = performance.now();
    this.sinceBuild.owed = false;
  }

  /**
   * Re-ranks every marked anchor and rebuilds the kinds due for it: after it, every list is what
   * a full build gives (next-best-product's: with the prior statistics kept, see PriorStats).
   * Lookups do not wait for it (see refresh). `except`: kinds another thread rebuilds. `ms`: at
   * most about that long re-ranking (a slice: what is left stays marked, and `pending`).
   */
  flush(except: readonly Kind[] = [], ms = Infinity): ApplyStats {
    const t0 = performance.now();
    const stats: ApplyStats = { events: 0, reranked: 0, rebuilt: [], rebuildMs: 0, expired: 0, ms: 0 };
    const cutoff = cutoffOf(this.latest, this.options);
    for (const kind of KINDS) {
      const live = this.live[kind];
      const elsewhere = except.includes(kind);
      if (live === null) {
        if (elsewhere) continue; // another thread rebuilds it (takeRebuild); it stays stale meanwhile
        if (this.stale.has(kind)) this.rebuildKind(kind, cutoff, stats);
      } else if (elsewhere && live.cheaperToRebuild(REBUILD_SHARE)) {
        // The rebuild under way in another thread is the quicker way there; lookups re-rank what they read meanwhile.
        continue;
      } else if ((!elsewhere && this.rebuildDue(kind)) || live.cheaperToRebuild(REBUILD_SHARE)) {
        // The same lists either way (the build is their definition); this is only quicker.
        this.rebuildKind(kind, cutoff, stats);
        live.adopt(this[kind]);
      } else {
        stats.reranked += live.rerank(this.facts, this.step(kind), this.items.size, t0 + ms);
      }
    }
    for (const kind of KINDS) if (!except.includes(kind)) this.stale.delete(kind);
    stats.ms = performance.now() - t0;
    return stats;
  }

  /**
   * Called by a lookup before it reads the anchor's list: an incremental kind re-ranks the anchor
   * if a batch marked it, so that answers follow every event at once; a kind rebuilt whole
   * serves its last build until flush.
   */
  refresh(kind: Kind, anchor: number): void {
    // The request path: one array read where nothing is marked.
    const live = this.live[kind];
    if (live !== null && live.marked(anchor)) live.refresh(anchor, this.facts, this.step(kind));
  }

  /**
   * Item records already stored: the catalogue (shared with the caller, who has added them)
   * changed; a record that brings or changes an item's family, category or candidacy re-ranks
   * the item and the anchors it stands near, as a full build with that catalogue would rank them.
   */
  applyItems(items: readonly ItemModel[]): ApplyStats {
    const t0 = performance.now();
    const catalog = this.catalog;
    if (catalog === null) throw new Error('applyItems needs a model built with a catalogue');
    const moved: number[] = [];
    for (const item of items) {
      const old = catalog.get(item.itemId);
      catalog.add(item);
      const index = this.items.intern(item.itemId);
      if (old === undefined || familyOf(old) !== familyOf(item) || categoryOf(old) !== categoryOf(item)) moved.push(index);
    }
    const nItems = this.items.size;
    this.growItems(nItems);
    const stats: ApplyStats = { events: 0, reranked: 0, rebuilt: [], rebuildMs: 0, expired: 0, ms: 0 };
    if (moved.length > 0) {
      // Numbered as a full build numbers them (itemFacts), so the prior lists and model.category agree.
      this.facts = itemFacts(this.items, this.catalog);
      this.category = this.facts.category ?? null;
      this.viewed = null;
      this.bought = null;
      for (const kind of KINDS) {
        const live = this.live[kind];
        if (live === null) this.stale.add(kind);
        else for (const b of moved) live.markNear(b);
      }
      // The prior's statistics are by category number, which the records may have changed.
      if (this.nextBestFrozen) this.sinceBuild.owed = true;
      // At once, records being rare: the categories are numbered anew, and the rebuilt kinds' prior lists with them.
      const flushed = this.flush();
      stats.reranked = flushed.reranked;
      stats.rebuilt = flushed.rebuilt;
      stats.rebuildMs = flushed.rebuildMs;
    }
    stats.ms = performance.now() - t0;
    return stats;
  }

  /** Takes a batch into a kind: its groups and counts now, its lists at lookup or flush. */
  private update(kind: Kind, changed: boolean, stepMoved: boolean, cutoff: number, stats: ApplyStats): void {
    const live = this.live[kind];
    if (live === null) {
      if (changed || stepMoved) this.stale.add(kind);
      return;
    }
    live.commit(cutoff);
    if (stepMoved && live.referenceSensitive) live.markAll(this.items.size);
    stats.reranked += live.dirtyCount;
  }

  /** The recency reference step a build over the events so far takes for the kind. */
  private step(kind: Kind): number {
    const h = this.halfLifeMs[kind];
    return h > 0 ? referenceStep(this.latest, h) : 0;
  }

  private rebuildKind(kind: Kind, cutoff: number, stats: ApplyStats): void {
    const t0 = performance.now();
    this[kind] = buildKind(kind, this.log, this.options, cutoff, this.facts);
    this.builds[kind]++; // a rebuild off the loop taken before this one is older: it must not replace it
    this.builtNow(kind);
    stats.rebuilt.push(kind);
    stats.rebuildMs += performance.now() - t0;
  }

  /** Builds of each kind so far (a rebuild job carries the number it will be). */
  private readonly builds: Record<Kind, number> = { postBrowse: 0, nextBest: 0 };

  /**
   * The rebuild that flush would do of `kind` on the event loop, as a job for another thread
   * (EmbeddedRecs: next-best-product's full build when it is due, either kind's where a batch
   * marked so much that the flush would build it anew): the log's columns as views of its shared
   * memory (the events so far never change) and copies of the item facts, taken now; null when
   * the kind has nothing to rebuild. From here the kind counts as rebuilt: events that follow
   * count towards the next.
   * Give the result to adoptRebuild (or, if the job failed, hand it back with requeueRebuild).
   */
  takeRebuild(kind: Kind): RebuildJob | null {
    const live = this.live[kind];
    if (live !== null) {
      // One at a time; due (next-best-product's statistics), or what the flush would rebuild on the loop (a batch marked much).
      if (live.taken || (!this.rebuildDue(kind) && !live.cheaperToRebuild(REBUILD_SHARE))) return null;
      this.builtNow(kind);
      live.beginTake();
    } else {
      if (!this.stale.has(kind)) return null;
      this.stale.delete(kind);
    }
    const f = this.facts;
    const copy = <T extends Uint8Array | Int32Array>(a: T | undefined): T | undefined => (a === undefined ? undefined : (a.slice() as T));
    const facts: ItemFacts = {};
    if (f.candidate !== undefined) facts.candidate = copy(f.candidate)!;
    if (f.family !== undefined) facts.family = copy(f.family)!;
    if (f.category !== undefined) facts.category = copy(f.category)!;
    if (f.categoryRank !== undefined) facts.categoryRank = copy(f.categoryRank)!;
    return { kind, build: ++this.builds[kind], log: this.log.sharedColumns(), facts, options: this.options, cutoff: cutoffOf(this.latest, this.options) };
  }

  /** Serves a job's rebuilt lists, unless a build taken later replaced the kind meanwhile; whether it did. */
  adoptRebuild(job: Pick<RebuildJob, 'kind' | 'build'>, built: Neighbours): boolean {
    if (job.build !== this.builds[job.kind]) return false;
    this[job.kind] = built;
    // kept from its statistics: what changed since the job was taken is re-ranked under the new ones
    this.live[job.kind]?.adoptTaken(built, this.items.size);
    return true;
  }

  /** A job that did not finish: its kind is stale (or due) again (the next flush rebuilds it). */
  requeueRebuild(job: Pick<RebuildJob, 'kind' | 'build'>): void {
    if (job.build !== this.builds[job.kind]) return;
    const live = this.live[job.kind];
    if (live === null) this.stale.add(job.kind);
    else {
      live.dropTake();
      if (job.kind === 'nextBest') this.sinceBuild.owed = true;
    }
  }

  /**
   * Grows the per-item arrays to exactly `nItems`, as a build sizes them (new items from events:
   * no record, so not candidates, with no family or category, as itemFacts has them).
   */
  private growItems(nItems: number): void {
    this.live.postBrowse?.ensureItems(nItems);
    this.live.nextBest?.ensureItems(nItems);
    if (this.views.length >= nItems) return;
    const exact = <T extends Float64Array | Int32Array | Uint8Array>(a: T, make: (n: number) => T, fill: number): T => {
      const b = make(nItems);
      if (fill !== 0) b.fill(fill);
      b.set(a);
      return b;
    };
    this.views = exact(this.views, (n) => new Float64Array(n), 0);
    this.purchases = exact(this.purchases, (n) => new Float64Array(n), 0);
    const f = this.facts;
    if (f.candidate !== undefined) {
      f.candidate = exact(f.candidate, (n) => new Uint8Array(n), 0);
      f.family = exact(f.family!, (n) => new Int32Array(n), -1);
      f.category = exact(f.category!, (n) => new Int32Array(n), -1);
      this.category = f.category;
    }
    this.viewed = null;
    this.bought = null;
  }

  private count(e: number, by: number): void {
    if (this.log.kind[e] === KIND_PURCHASE) this.purchases[this.log.item[e]!]! += by;
    else this.views[this.log.item[e]!]! += by;
  }
}
