import type { ItemModel } from '../ports/backend.js';
import { categoryOf, familyOf } from './catalog.js';
import type { Catalog } from './catalog.js';
import { KIND_PURCHASE, KIND_VIEW } from './eventLog.js';
import type { EventLog, RecEvent } from './eventLog.js';
import type { ItemIndex } from './interners.js';
import { LiveNeighbours, LOAD_STEP } from './liveNeighbours.js';
import { nextBestLiveSets, postBrowseLiveSets } from './liveSets.js';
import type { CompactionUnderWay, LogCompaction } from './logCompaction.js';
import { buildModel, cutoffOf, itemFacts, latestTime, nextBestScoring, popularityOrder, postBrowseScoring } from './model.js';
import type { ModelOptions, RecModel } from './model.js';
import type { ItemFacts, NeighbourOptions, Neighbours } from './neighbours.js';
import { NextBestSchedule } from './nextBestSchedule.js';
import { buildKind, KINDS } from './rebuildJob.js';
import type { Kind, RebuildJob } from './rebuildJob.js';
import { TimeHeap } from './timeHeap.js';
import { DAY_MS, referenceStep } from './weights.js';

// The live model: a built model that takes new events and item records without a rebuild and serves the lists a full
// build over the same events gives, bit for bit (docs/recommender.md, "How the live model keeps a build's lists").

/** A flush rebuilds an incremental kind instead of re-ranking when the marked anchors hold more than this share of all
 * positions: a re-rank walks a position slower than the build does. */
const REBUILD_SHARE = 0.3;

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

/** What an event filed (or a key) costs a compaction's remap against an event of the log's steps: a map entry and an array against a few writes. */
const REMAP_COST = 8;

/** A RecModel that follows new events and item records from a full build (buildModel, or `built` from the same log,
 * options and catalogue), appending to the log and catalogue it shares with its caller. */
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
  private readonly stale = new Set<Kind>();
  private readonly halfLifeMs: Record<Kind, number>;
  private readonly schedule: NextBestSchedule;

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
    this.schedule = new NextBestSchedule(this.live.nextBest !== null && (nb.prior ?? 0) > 0, options);
    this.builtNow('nextBest');
    this.expiry = (options.maxAgeDays ?? 0) > 0 ? new TimeHeap(log) : null;
    this.loading = this.load(cutoff);
    if (!deferred) this.loadFor(Infinity);
  }

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

  /** Files the log's events for at most `ms`; whether it is done. A `deferred` model must be loaded before anything else
   * is asked of it: filing a large log takes seconds, which EmbeddedRecs spreads between requests. */
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
      if (log.kind[e] === KIND_PURCHASE) this.schedule.purchase();
      this.count(e, 1);
      changed[log.kind[e]!] = true;
      this.expiry?.push(e);
      this.live.postBrowse?.add(e);
      this.live.nextBest?.add(e);
    }
    let expired = 0;
    while (this.expiry !== null && this.expiry.peekTime() < cutoff) {
      const e = this.expiry.pop();
      if (log.kind[e] === KIND_PURCHASE) this.schedule.purchase();
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

  /** Events the log holds that have aged out of the window (RECS_EVENTS_MAX_AGE_DAYS): what compact would drop. Every
   * event within it is in the expiry heap, so the rest are those. */
  get agedEvents(): number {
    return this.expiry === null || !this.loadingDone ? 0 : this.log.length - this.expiry.size;
  }

  /** Drops the events that aged out of the window, and the keys only they had, from the log shared with the caller, so
   * that memory follows the window, not the uptime. Nothing served changes. */
  compact(): LogCompaction | null {
    const underWay = this.beginCompaction();
    if (underWay === null) return null;
    this.compactStep(underWay, Infinity);
    return this.finishCompaction(underWay);
  }

  /** compact in steps, between other work (batches included): compactStep until it returns true, then finishCompaction.
   * Null where compact would do nothing. */
  beginCompaction(): CompactionUnderWay | null {
    if (this.expiry === null || !this.loadingDone) return null;
    this.live.postBrowse?.beginRemap();
    this.live.nextBest?.beginRemap();
    // Every event dropped (dated before this cutoff) has left the expiry heap and the live
    // indexes already; those that leave them meanwhile are kept until the next compaction.
    return this.log.beginCompact(cutoffOf(this.latest, this.options));
  }

  /** A step of a compaction: the log's (EventLog.compactStep), then the live indexes' (LiveNeighbours.remapStep), about
   * `maxEvents` log events' worth (see REMAP_COST); true when all are done. */
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

  private rebuildDue(kind: Kind): boolean {
    return kind === 'nextBest' && this.schedule.due;
  }

  /** How long until next-best-product's time bound makes it due; Infinity where no purchase came since its last full build. */
  rebuildDueInMs(): number {
    return this.schedule.dueInMs();
  }

  private builtNow(kind: Kind): void {
    if (kind === 'nextBest') this.schedule.built(this.purchases);
  }

  /** Re-ranks every marked anchor and rebuilds the kinds due: after it every list is a full build's. `except`: kinds
   * another thread rebuilds; `ms`: about how long to re-rank (the rest stays marked). */
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

  /** Called by a lookup before it reads the anchor's list: an incremental kind re-ranks the anchor if a batch marked
   * it, so that answers follow every event at once; a kind rebuilt whole serves its last build until flush. */
  refresh(kind: Kind, anchor: number): void {
    // The request path: one array read where nothing is marked.
    const live = this.live[kind];
    if (live !== null && live.marked(anchor)) live.refresh(anchor, this.facts, this.step(kind));
  }

  /** Item records already stored in the shared catalogue: a record that changes an item's family, category or candidacy
   * re-ranks the item and the anchors near it, as a full build with that catalogue would. */
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
      this.schedule.owe();
      // At once, records being rare: the categories are numbered anew, and the rebuilt kinds' prior lists with them.
      const flushed = this.flush();
      stats.reranked = flushed.reranked;
      stats.rebuilt = flushed.rebuilt;
      stats.rebuildMs = flushed.rebuildMs;
    }
    stats.ms = performance.now() - t0;
    return stats;
  }

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

  private readonly builds: Record<Kind, number> = { postBrowse: 0, nextBest: 0 };

  /** The rebuild flush would do of `kind`, as a job for another thread (null when there is none): give the result to
   * adoptRebuild, or a failed job to requeueRebuild. */
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
      if (job.kind === 'nextBest') this.schedule.owe();
    }
  }

  /** Grows the per-item arrays to exactly `nItems`, as a build sizes them (new items from events: no record, so not
   * candidates, with no family or category, as itemFacts has them). */
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
