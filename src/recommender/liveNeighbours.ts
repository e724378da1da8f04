import type { EventLog } from './eventLog.js';
import { foldOverrides } from './foldOverrides.js';
import { LiveGroups } from './liveGroups.js';
import { LiveKeys } from './liveKeys.js';
import { growAnchorScale, LiveRanker } from './liveRanker.js';
import type { LiveSet } from './liveSets.js';
import type { LogCompaction } from './logCompaction.js';
import type { ModelOptions } from './model.js';
import type { ItemFacts, NeighbourOptions, Neighbours } from './neighbours.js';
import { DEFAULT_SESSION_GAP_MS } from './sessions.js';
import { DAY_MS, recencyWeight, referenceStep } from './weights.js';

/** Events (or a sixteenth as many keys) a live index files between the points where its loading may pause: a few milliseconds on a loaded machine. */
export const LOAD_STEP = 2_048;

/** One kind's neighbours kept current: its events by key (LiveKeys), their groups (LiveGroups), the anchors they change
 * marked, and those re-ranked (LiveRanker) at lookup or flush into Neighbours.overrides. */
export class LiveNeighbours {
  private readonly keys: LiveKeys;
  private readonly groups: LiveGroups;
  private readonly ranker: LiveRanker;
  private dirty = new Uint8Array(0);
  private readonly dirtyList: number[] = [];
  private readonly occurrenceChanged: number[] = [];
  private occurrenceMark = new Uint8Array(0);
  private sinceTake: Set<number> | null = null;
  private allSinceTake = false;
  /** cheaperToRebuild's last answer, until a new mark (markDirty) or a build (adopt). */
  private cheaper: { share: number; answer: boolean } | null = null;
  private readonly halfLifeMs: number;
  private readonly gapMs: number;
  private ownStep: number;

  constructor(
    private readonly log: EventLog,
    private readonly sets: LiveSet[],
    scoring: NeighbourOptions,
    private neighbours: Neighbours,
    options: ModelOptions,
    latest: number,
  ) {
    this.keys = new LiveKeys(log, sets);
    this.groups = new LiveGroups(scoring.order !== undefined && scoring.order.window > 0, scoring.collapseRepeats === true);
    this.ranker = new LiveRanker(log, this.groups, scoring, options);
    this.halfLifeMs = (scoring.halfLifeDays ?? 0) * DAY_MS;
    this.gapMs = options.sessionGapMs ?? DEFAULT_SESSION_GAP_MS;
    this.ownStep = this.halfLifeMs > 0 && latest > -Infinity ? referenceStep(latest, this.halfLifeMs) : Number.NaN;
    neighbours.overrides ??= new Map();
  }

  /** Fixes the reference of the weights kept here at the first events' (an empty log has none). */
  settle(latest: number): void {
    if (Number.isNaN(this.ownStep) && latest > -Infinity) this.ownStep = this.halfLifeMs > 0 ? referenceStep(latest, this.halfLifeMs) : 0;
  }

  /** Room for `n` items. */
  ensureItems(n: number): void {
    growAnchorScale(this.neighbours, this.ranker.prior, n);
    if (this.groups.items >= n) return;
    this.groups.ensureItems(n);
    const size = this.groups.occurrences.length;
    if (this.dirty.length < size) {
      const d = new Uint8Array(size); d.set(this.dirty); this.dirty = d;
      const o = new Uint8Array(size); o.set(this.occurrenceMark); this.occurrenceMark = o;
    }
    this.ranker.fit();
  }

  /** Files event e (of any kind) under its keys; the groups change at commit. */
  add(e: number): void {
    this.keys.add(e);
  }

  /** Marks the keys of event e (taken out by age) for commit. */
  expire(e: number): void {
    this.keys.expire(e);
  }

  /** Follows the log's compaction in steps (remapStep, then finishRemap). Every event filed is one the compaction keeps
   * (filed events leave by age at commit; it drops only events past its cutoff), so no list loses one. */
  beginRemap(): void {
    this.keys.beginRemap();
  }

  remapStep(settled: LogCompaction, budget: number): boolean {
    return this.keys.remapStep(settled, budget);
  }

  get remapDone(): boolean {
    return this.keys.remapDone;
  }

  finishRemap(moved: LogCompaction): void {
    this.keys.finishRemap(moved);
  }

  /** Computes the touched keys' groups again (events before `cutoff` dropped) and marks what changed. */
  commit(cutoff: number, marking = true): void {
    const total = this.groups.total;
    this.keys.commit((s, key) => this.recompute(s, key, cutoff, marking));
    // Statistics of an empty log have no N: the current one serves (see priorOf), and moves every anchor's prior.
    if (marking && this.ranker.prior > 0 && this.groups.total !== total && this.neighbours.priorStats?.total === 0) this.markAll(this.groups.items);
    for (const b of this.occurrenceChanged) {
      this.occurrenceMark[b] = 0;
      if (marking) this.markNear(b);
    }
    this.occurrenceChanged.length = 0;
  }

  private recompute(s: number, key: number, cutoff: number, marking: boolean): void {
    const set = this.sets[s]!;
    const log = this.log;
    const list = this.keys.list(s, key);
    const old = this.keys.groupsOf(s, key);
    if (typeof old === 'number') this.removeGroup(old, marking);
    else if (old !== undefined) for (const g of old) this.removeGroup(g, marking);
    if (list === undefined) return;
    let drop = 0;
    while (drop < list.length && log.time[list[drop]!]! < cutoff) drop++;
    if (drop > 0) list.splice(0, drop);
    if (list.length === 0) {
      this.keys.drop(s, key);
      return;
    }
    const groups: number[] = [];
    let from = 0;
    if (set.splits(key)) {
      for (let j = 1; j < list.length; j++) {
        if (log.time[list[j]!]! - log.time[list[j - 1]!]! > this.gapMs) {
          groups.push(this.addGroup(set, list, from, j, marking));
          from = j;
        }
      }
    }
    groups.push(this.addGroup(set, list, from, list.length, marking));
    this.keys.setGroups(s, key, groups.length === 1 ? groups[0]! : groups);
  }

  private addGroup(set: LiveSet, list: number[], from: number, to: number, marking: boolean): number {
    const items = this.groups.itemsOf(this.log, list, from, to, set.maxItems, set.keepLast);
    const weight = this.halfLifeMs > 0 ? set.weight * recencyWeight(this.log.time[list[to - 1]!]!, this.halfLifeMs, this.ownStep) : set.weight;
    const g = this.groups.add(items, weight, (b) => this.changed(b, marking));
    this.ranker.keepSums(g, 1);
    return g;
  }

  private removeGroup(g: number, marking: boolean): void {
    this.ranker.keepSums(g, -1);
    this.groups.remove(g, (b) => this.changed(b, marking));
  }

  private changed(b: number, marking: boolean): void {
    if (!marking) return;
    this.markDirty(b);
    this.sinceTake?.add(b);
    if (this.followsNeighbourCount(b) && this.occurrenceMark[b] === 0) {
      this.occurrenceMark[b] = 1;
      this.occurrenceChanged.push(b);
    }
  }

  /** Whether b's n(b) enters other anchors' scores, so they are marked with it: where damping > 0, except under a prior,
   * whose statistics hold n(b) as of the last full build (see PriorStats). */
  private followsNeighbourCount(b: number): boolean {
    if (this.ranker.prior === 0) return this.ranker.damping !== 0;
    const stats = this.neighbours.priorStats;
    return stats === undefined || !(b < stats.occurrences.length && stats.occurrences[b]! > 0);
  }

  markDirty(a: number): void {
    if (this.dirty[a] === 1) return;
    this.cheaper = null;
    this.dirty[a] = 1;
    this.dirtyList.push(a);
  }

  /** Marks b and every item that has b within its window in some group: whose lists b's facts or n(b) enter. */
  markNear(b: number): void {
    this.markDirty(b);
    const groups = this.groups.itemGroup[b];
    if (groups === undefined) return;
    const positions = this.groups.itemPos[b]!;
    const cells = this.groups.cells;
    const window = this.ranker.window;
    for (let j = 0; j < groups.length; j++) {
      const start = cells.start(groups[j]!);
      const k = positions[j]!;
      const lo = Math.max(0, k - window);
      const hi = Math.min(cells.length(groups[j]!), k + window + 1);
      for (let p = lo; p < hi; p++) this.markDirty(cells.cells[start + p]!);
    }
  }

  /** Marks every anchor (a change of reference that moves scores where damping > 0). */
  markAll(nItems: number): void {
    if (this.sinceTake !== null) this.allSinceTake = true;
    for (let a = 0; a < nItems; a++) this.markDirty(a);
  }

  /** Whether moving the recency reference changes this kind's lists (not where d = 0: see recencyWeight). */
  get referenceSensitive(): boolean {
    return this.halfLifeMs > 0 && this.ranker.damping !== 0;
  }

  /** Anchors marked and not re-ranked yet (an upper bound: some may have been refreshed by a lookup). */
  get dirtyCount(): number {
    return this.dirtyList.length;
  }

  /** Whether re-ranking the marked anchors would cost more than building the kind anew: their positions against `share`
   * of what the build walks (see buildCostOf). */
  cheaperToRebuild(share: number): boolean {
    // Asked by every slice of a flush: walked again only after new marks (re-ranking and lookups
    // only take marks away, which can turn a yes into a no, never the other way).
    if (this.cheaper !== null && this.cheaper.share === share) return this.cheaper.answer;
    let work = 0;
    for (const a of this.dirtyList) if (this.dirty[a] === 1) work += this.groups.itemGroup[a]!.length;
    const answer = work > share * (this.groups.positions + buildCostOf(this.log.length, this.groups.items));
    this.cheaper = { share, answer };
    return answer;
  }

  /** Takes a fresh build of the kind as the lists served: nothing is marked any more. */
  adopt(built: Neighbours): void {
    this.neighbours = built;
    built.overrides = new Map();
    for (const a of this.dirtyList) this.dirty[a] = 0;
    this.dirtyList.length = 0;
    this.cheaper = null;
    this.sinceTake = null;
    this.allSinceTake = false;
  }

  /** Whether a rebuild taken to another thread is under way (beginTake, not adopted or dropped yet). */
  get taken(): boolean {
    return this.sinceTake !== null;
  }

  /** The rebuild taken did not finish: nothing is noted for it any more (what it would have covered stays marked). */
  dropTake(): void {
    this.sinceTake = null;
    this.allSinceTake = false;
  }

  /** A rebuild of the log as it is now was taken to another thread: what changes from here is noted for adoptTaken. */
  beginTake(): void {
    this.sinceTake = new Set();
    this.allSinceTake = false;
  }

  /** Takes the rebuild begun by beginTake: anchors whose groups changed since are marked again, and, where n(b) enters
   * scores (damping without a prior), the anchors near them. */
  adoptTaken(built: Neighbours, nItems: number): void {
    const since = this.sinceTake ?? new Set<number>();
    const all = this.allSinceTake;
    // What was marked before the job was taken is in its lists.
    this.adopt(built);
    growAnchorScale(this.neighbours, this.ranker.prior, nItems);
    if (all) return this.markAll(nItems);
    const near = this.ranker.prior === 0 && this.ranker.damping !== 0;
    for (const b of since) {
      if (near) this.markNear(b);
      else this.markDirty(b);
    }
  }

  /** Weights here are relative to ownStep; the build's to `step`: an exact power of two apart. */
  private scaleFor(step: number): number {
    return this.halfLifeMs > 0 ? Math.pow(2, this.ownStep - step) : 1;
  }

  /** Re-ranks every marked anchor into Neighbours.overrides (recency reference step `step`); returns how many. */
  rerank(facts: ItemFacts, step: number, nItems: number, until = Infinity): number {
    const scale = this.scaleFor(step);
    const overrides = this.neighbours.overrides!;
    let n = 0;
    let done = 0;
    const list = this.dirtyList;
    while (done < list.length) {
      // the deadline looked at every 16 re-ranked: the rest stays marked for the next slice
      if ((n & 15) === 15 && performance.now() > until) break;
      const a = list[done++]!;
      if (this.dirty[a] === 0) continue;
      this.dirty[a] = 0;
      overrides.set(a, this.ranker.rank(a, facts, scale, this.neighbours));
      n++;
    }
    if (done === list.length) list.length = 0;
    else list.splice(0, done);
    if (overrides.size > Math.max(1024, nItems >> 2)) foldOverrides(this.neighbours, nItems);
    return n;
  }

  /** Whether anchor a is marked and not re-ranked yet. */
  marked(a: number): boolean {
    return a < this.dirty.length && this.dirty[a] === 1;
  }

  /** Re-ranks anchor a now if it is marked (a lookup of it: its list is then current). */
  refresh(a: number, facts: ItemFacts, step: number): void {
    if (!this.marked(a)) return;
    this.dirty[a] = 0;
    this.neighbours.overrides!.set(a, this.ranker.rank(a, facts, this.scaleFor(step), this.neighbours, true));
  }

  /** Files every event of the log from `cutoff` and builds the groups, marking nothing (the built lists are current);
   * yields every LOAD_STEP events or keys (LiveModel.loadFor). */
  *load(cutoff: number, nItems: number): Generator<void, void, void> {
    this.ensureItems(nItems);
    yield* this.keys.load(cutoff, LOAD_STEP, (s, key) => this.recompute(s, key, cutoff, false));
  }
}

/** A build's cost beyond its positions: it walks the whole log, expired events included, and every item. Without it a
 * mostly expired log looked dear to build, and the flush rebuilt after every batch. */
export function buildCostOf(events: number, items: number): number {
  return events / 16 + items;
}
