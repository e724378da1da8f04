import type { ItemModel } from '../ports/backend.js';
import type { Catalog } from './catalog.js';
import { categoryOf, familyOf } from './catalog.js';
import type { CompactionUnderWay, EventLog, EventLogColumns, ItemIndex, LogCompaction, RecEvent } from './eventLog.js';
import { KIND_PURCHASE, KIND_VIEW } from './eventLog.js';
import { DAY_MS, ORDER_SCALE, TopK, anchorFactor, buildNeighbours, orderDecay, recencyWeight, referenceStep } from './cooccurrence.js';
import type { AnchorList, ItemFacts, NeighbourOptions, Neighbours, PriorStats } from './cooccurrence.js';
import { DEFAULT_NEXT_BEST_REBUILD_SECONDS, DEFAULT_NEXT_BEST_REBUILD_SHARE, buildModel, cutoffOf, itemFacts, latestTime, nextBestScoring, nextBestSets, popularityOrder, postBrowseScoring, postBrowseSets } from './model.js';
import type { ModelOptions, RecModel } from './model.js';
import { DEFAULT_SESSION_GAP_MS } from './sessions.js';

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
interface LiveSet {
  kind: number;
  /** The event's key in this set, or -1: no group (sessions.ts drops such events too). */
  keyOf(log: EventLog, e: number): number;
  /** Whether a key's events split where idle for more than the gap (a user's views without session). */
  splits(key: number): boolean;
  /** The key a key becomes when the log is compacted (its ids renumbered: EventLog.compact). */
  rekey(key: number, moved: LogCompaction): number;
  weight: number;
  maxItems: number;
  keepLast: boolean;
}

function postBrowseLiveSets(options: ModelOptions): LiveSet[] {
  return [{
    kind: KIND_VIEW,
    keyOf: (log, e) => (log.session[e]! >= 0 ? 2 * log.session[e]! : log.user[e]! >= 0 ? 2 * log.user[e]! + 1 : -1),
    splits: (key) => (key & 1) === 1,
    rekey: (key, moved) => ((key & 1) === 0 ? 2 * moved.sessions[key >> 1]! : 2 * moved.users[key >> 1]! + 1),
    weight: 1,
    maxItems: options.maxItemsPerGroup ?? 30,
    keepLast: false,
  }];
}

function nextBestLiveSets(options: ModelOptions): LiveSet[] {
  return [
    {
      kind: KIND_PURCHASE,
      keyOf: (log, e) => (log.order[e]! >= 0 ? 2 * log.order[e]! : log.session[e]! >= 0 ? 2 * log.session[e]! + 1 : -1),
      splits: () => false,
      rekey: (key, moved) => ((key & 1) === 0 ? 2 * moved.orders[key >> 1]! : 2 * moved.sessions[key >> 1]! + 1),
      weight: 1,
      maxItems: options.maxItemsPerGroup ?? 30,
      keepLast: false,
    },
    {
      kind: KIND_PURCHASE,
      keyOf: (log, e) => log.user[e]!,
      splits: () => false,
      rekey: (key, moved) => moved.users[key]!,
      weight: Math.fround(options.userHistoryWeight ?? 0.25),
      maxItems: options.maxItemsPerHistory ?? 50,
      keepLast: true,
    },
  ];
}

const NONE: number[] = [];

function growInt32(a: Int32Array, n: number, fill = 0): Int32Array {
  if (a.length >= n) return a;
  const b = new Int32Array(Math.max(n, 2 * a.length)).fill(fill);
  b.set(a);
  return b;
}

function growFloat64(a: Float64Array, n: number): Float64Array {
  if (a.length >= n) return a;
  const b = new Float64Array(Math.max(n, 2 * a.length));
  b.set(a);
  return b;
}

/**
 * One kind's neighbours, kept current. Groups live in slots (freed ones reused); item b's
 * positions are (itemGroup[b][j], itemPos[b][j]), and groupSlot[g][p] is where position p of
 * group g sits in its item's list, so that a group leaves in O(its size).
 */
class LiveNeighbours {
  private readonly keys: Map<number, number[]>[];
  /** Per set: key -> its group's slot, or its groups' slots where it has several (a user's visits). */
  private readonly keyGroups: Map<number, number | number[]>[];
  private readonly touchedKeys: Set<number>[];
  /**
   * A remap under way (beginRemap), per set: the keys changed since it began, and the new maps
   * so far; where its steps are (`s`: set and map, lists first; `from`: the entries left).
   */
  private remapping: {
    changed: Set<number>[];
    keys: Map<number, number[]>[];
    groups: Map<number, number | number[]>[];
    s: number;
    from: MapIterator<[number, number | number[]]> | null;
  } | null = null;
  // Plain arrays of small integers: for groups of a few items they cost a fraction of a typed
  // array's fixed overhead (an ArrayBuffer and its backing store each), in memory and in GC.
  private groupItems: number[][] = [];
  private groupWeight: number[] = [];
  private groupSlot: number[][] = [];
  private readonly freeGroups: number[] = [];
  /** Positions of all groups (what a build walks). */
  private positions = 0;
  /** N: the weights of all groups (exact sums, see ORDER_SCALE). */
  private total = 0;
  private itemGroup: number[][] = [];
  private itemPos: number[][] = [];
  private occurrences: Float64Array = new Float64Array(0);
  private dirty = new Uint8Array(0);
  private readonly dirtyList: number[] = [];
  private readonly occurrenceChanged: number[] = [];
  private occurrenceMark = new Uint8Array(0);
  private itemStamp: Int32Array = new Int32Array(0);
  private stampCounter = 0;
  // Re-ranking scratch: weight (double) at 2b, count at 4b + 2, stamp at 4b + 3 (as gatherOrdered).
  private slots = new ArrayBuffer(0);
  private slotWeight = new Float64Array(0);
  private slotCount = new Int32Array(0);
  private touched = new Int32Array(0);
  private readonly heap: TopK;
  private readonly ordered: boolean;
  private readonly decay: Float64Array;
  private readonly backward: number;
  private readonly window: number;
  private readonly damping: number;
  private readonly factor: number;
  /** k; where > 0 the prior's statistics are those of the last full build (see PriorStats). */
  private readonly prior: number;
  /** The anchor's partner categories' weights, spread for a re-rank (as the build's partnerWeight). */
  private partnerWeight = new Float64Array(0);
  /** Items whose groups changed since a rebuild in another thread was taken (see beginTake); null when none is. */
  private sinceTake: Set<number> | null = null;
  /** Whether every anchor was marked since the take (markAll: a moved recency reference, a prior's N). */
  private allSinceTake = false;
  private readonly halfLifeMs: number;
  private readonly gapMs: number;
  /** The reference step the weights here are relative to (fixed once known: see recencyWeight). */
  private ownStep: number;
  private readonly collapseRepeats: boolean;
  /** ModelOptions.hotPositions: from how many positions an anchor keeps its neighbours' sums. */
  private readonly hot: number;

  constructor(
    private readonly log: EventLog,
    private readonly sets: LiveSet[],
    scoring: NeighbourOptions,
    private neighbours: Neighbours,
    options: ModelOptions,
    latest: number,
  ) {
    this.keys = sets.map(() => new Map<number, number[]>());
    this.keyGroups = sets.map(() => new Map<number, number | number[]>());
    this.touchedKeys = sets.map(() => new Set());
    this.heap = new TopK(scoring.topK ?? 30, log.items.idsNow());
    this.ordered = scoring.order !== undefined && scoring.order.window > 0;
    this.decay = this.ordered ? orderDecay(scoring.order!) : new Float64Array(0);
    this.backward = scoring.order?.backward ?? 0;
    this.window = this.ordered ? scoring.order!.window : Infinity;
    this.damping = scoring.damping ?? 0.3;
    this.factor = scoring.sameCategoryFactor ?? 1;
    this.prior = scoring.prior ?? 0;
    this.halfLifeMs = (scoring.halfLifeDays ?? 0) * DAY_MS;
    this.gapMs = options.sessionGapMs ?? DEFAULT_SESSION_GAP_MS;
    this.ownStep = this.halfLifeMs > 0 && latest > -Infinity ? referenceStep(latest, this.halfLifeMs) : Number.NaN;
    this.collapseRepeats = scoring.collapseRepeats === true;
    this.hot = Math.max(1, options.hotPositions ?? HOT_POSITIONS);
    neighbours.overrides ??= new Map();
  }

  /** Fixes the reference of the weights kept here at the first events' (an empty log has none). */
  settle(latest: number): void {
    if (Number.isNaN(this.ownStep) && latest > -Infinity) this.ownStep = this.halfLifeMs > 0 ? referenceStep(latest, this.halfLifeMs) : 0;
  }

  /** Room for `n` items. */
  ensureItems(n: number): void {
    this.growAnchorScale(n);
    if (this.itemGroup.length >= n) return;
    while (this.itemGroup.length < n) {
      this.itemGroup.push([]);
      this.itemPos.push([]);
    }
    const cap = Math.max(n, 2 * this.occurrences.length, 1024);
    if (this.occurrences.length < n) {
      this.occurrences = growFloat64(this.occurrences, cap);
      const d = new Uint8Array(this.occurrences.length); d.set(this.dirty); this.dirty = d;
      const o = new Uint8Array(this.occurrences.length); o.set(this.occurrenceMark); this.occurrenceMark = o;
      this.itemStamp = growInt32(this.itemStamp, this.occurrences.length, -1);
      this.slots = new ArrayBuffer(16 * this.occurrences.length);
      this.slotWeight = new Float64Array(this.slots);
      this.slotCount = new Int32Array(this.slots);
      this.touched = new Int32Array(this.occurrences.length);
    }
  }

  /**
   * Room for `n` anchors' n(a)^(d-1) in the lists served (kind with a prior): 1, a build's value
   * for an item in no group, until a re-rank sets it (every item whose n(a) changes is marked).
   */
  private growAnchorScale(n: number): void {
    const scale = this.neighbours.anchorScale;
    if (this.prior === 0 || scale.length >= n) return;
    const grown = new Float64Array(Math.max(n, 2 * scale.length)).fill(1);
    grown.set(scale);
    this.neighbours.anchorScale = grown;
  }

  /** Files event e (of any kind) under its keys; the groups change at commit. */
  add(e: number): void {
    const log = this.log;
    for (let s = 0; s < this.sets.length; s++) {
      const set = this.sets[s]!;
      if (log.kind[e] !== set.kind) continue;
      const key = set.keyOf(log, e);
      if (key < 0) continue;
      let list = this.keys[s]!.get(key);
      if (list === undefined) this.keys[s]!.set(key, (list = []));
      // After every event at or before its time: the build's order (time, then log order).
      const t = log.time[e]!;
      let lo = 0;
      let hi = list.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (log.time[list[mid]!]! <= t) lo = mid + 1;
        else hi = mid;
      }
      if (lo === list.length) list.push(e);
      else list.splice(lo, 0, e);
      this.touchedKeys[s]!.add(key);
    }
  }

  /**
   * Follows the log's compaction (EventLog.beginCompact), in steps beside the maps in use: from
   * here on the keys whose events change are noted, and remapStep copies the others' events and
   * groups, renumbered as the compaction settled them, to new maps; finishRemap copies those that
   * changed meanwhile and moves to the new maps. Every event filed is one the compaction keeps
   * (filed events are taken out by age at commit, and it drops only events past its cutoff), so
   * no list loses one. A remap begun replaces one under way.
   */
  beginRemap(): void {
    this.remapping = {
      changed: this.sets.map(() => new Set<number>()),
      keys: this.sets.map(() => new Map<number, number[]>()),
      groups: this.sets.map(() => new Map<number, number | number[]>()),
      s: 0,
      from: null,
    };
  }

  /**
   * Copies up to about `budget` events' and keys' worth of what beginRemap began, renumbered by
   * `settled` (EventLog.settled); true when all is copied (finishRemap's turn).
   */
  remapStep(settled: LogCompaction, budget: number): boolean {
    const r = this.remapping!;
    const events = settled.events;
    for (; r.s < 2 * this.sets.length; r.s++, r.from = null) {
      const s = r.s >> 1;
      const set = this.sets[s]!;
      const changed = r.changed[s]!;
      const touched = this.touchedKeys[s]!;
      // each key's list, then each key's groups; a key that changed since the remap began is the finish's
      const groups = (r.s & 1) === 1;
      r.from ??= groups ? this.keyGroups[s]!.entries() : this.keys[s]!.entries();
      for (;;) {
        if (budget <= 0) return false;
        const next = r.from.next();
        if (next.done === true) break;
        const [key, value] = next.value;
        budget--;
        if (changed.has(key) || touched.has(key)) continue;
        const to = set.rekey(key, settled);
        if (!(to >= 0)) {
          changed.add(key); // a key the compaction had not numbered (never when filed before it): the finish's
          continue;
        }
        if (groups) r.groups[s]!.set(to, value);
        else {
          const list = value as number[];
          const moved = new Array<number>(list.length);
          for (let j = 0; j < list.length; j++) moved[j] = events[list[j]!]!;
          r.keys[s]!.set(to, moved);
          budget -= list.length;
        }
      }
    }
    return true;
  }

  /** Whether a remap is under way and its steps are done. */
  get remapDone(): boolean {
    return this.remapping !== null && this.remapping.s === 2 * this.sets.length;
  }

  /** Ends a remap whose steps are done (remapStep returned true): the keys that changed meanwhile, renumbered by `moved`, then the new maps in use. */
  finishRemap(moved: LogCompaction): void {
    const r = this.remapping!;
    this.remapping = null;
    const events = moved.events;
    for (let s = 0; s < this.sets.length; s++) {
      const set = this.sets[s]!;
      const keys = r.keys[s]!;
      const groups = r.groups[s]!;
      for (const changed of [r.changed[s]!, this.touchedKeys[s]!]) {
        for (const key of changed) {
          const to = set.rekey(key, moved);
          const list = this.keys[s]!.get(key);
          if (list === undefined) keys.delete(to);
          else keys.set(to, list.map((e) => events[e]!));
          const slots = this.keyGroups[s]!.get(key);
          if (slots === undefined) groups.delete(to);
          else groups.set(to, slots);
        }
      }
      this.keys[s] = keys;
      this.keyGroups[s] = groups;
      const touched = new Set<number>();
      for (const key of this.touchedKeys[s]!) touched.add(set.rekey(key, moved));
      this.touchedKeys[s] = touched;
    }
  }

  /** Marks the keys of event e (taken out by age) for commit. */
  expire(e: number): void {
    for (let s = 0; s < this.sets.length; s++) {
      const set = this.sets[s]!;
      if (this.log.kind[e] !== set.kind) continue;
      const key = set.keyOf(this.log, e);
      if (key >= 0) this.touchedKeys[s]!.add(key);
    }
  }

  /** Computes the touched keys' groups again (events before `cutoff` dropped) and marks what changed. */
  commit(cutoff: number, marking = true): void {
    const total = this.total;
    for (let s = 0; s < this.sets.length; s++) {
      const changed = this.remapping?.changed[s];
      for (const key of this.touchedKeys[s]!) {
        this.recompute(s, key, cutoff, marking);
        changed?.add(key);
      }
      this.touchedKeys[s]!.clear();
    }
    // Statistics of an empty log have no N: the current one serves (see priorOf), and moves every anchor's prior.
    if (marking && this.prior > 0 && this.total !== total && this.neighbours.priorStats?.total === 0) this.markAll(this.itemGroup.length);
    for (const b of this.occurrenceChanged) {
      this.occurrenceMark[b] = 0;
      if (marking) this.markNear(b);
    }
    this.occurrenceChanged.length = 0;
  }

  private recompute(s: number, key: number, cutoff: number, marking: boolean): void {
    const set = this.sets[s]!;
    const log = this.log;
    const list = this.keys[s]!.get(key);
    const old = this.keyGroups[s]!.get(key);
    if (typeof old === 'number') this.removeGroup(old, marking);
    else if (old !== undefined) for (const g of old) this.removeGroup(g, marking);
    if (list === undefined) return;
    let drop = 0;
    while (drop < list.length && log.time[list[drop]!]! < cutoff) drop++;
    if (drop > 0) list.splice(0, drop);
    if (list.length === 0) {
      this.keys[s]!.delete(key);
      this.keyGroups[s]!.delete(key);
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
    this.keyGroups[s]!.set(key, groups.length === 1 ? groups[0]! : groups);
  }

  /** The group of events list[from..to) by the build's rules (buildGroups); returns its slot. */
  private addGroup(set: LiveSet, list: number[], from: number, to: number, marking: boolean): number {
    const log = this.log;
    const stamp = ++this.stampCounter;
    const items: number[] = [];
    let distinct = 0;
    for (let j = 0; j < to - from; j++) {
      const item = log.item[list[set.keepLast ? to - 1 - j : from + j]!]!;
      if (this.itemStamp[item] !== stamp) {
        if (distinct === set.maxItems) break;
        this.itemStamp[item] = stamp;
        distinct++;
      } else if (!this.ordered || (this.collapseRepeats && items[items.length - 1] === item)) {
        continue;
      }
      items.push(item);
    }
    if (set.keepLast) items.reverse();
    // Exactly sized: an array grown by push keeps room for 16 more, several times a small group's size.
    const groupItems = items.slice();
    const weight = this.halfLifeMs > 0 ? set.weight * recencyWeight(log.time[list[to - 1]!]!, this.halfLifeMs, this.ownStep) : set.weight;
    const g = this.freeGroups.pop() ?? this.groupItems.length;
    const slot = new Array<number>(items.length).fill(0);
    const mark = ++this.stampCounter;
    for (let p = 0; p < items.length; p++) {
      const b = items[p]!;
      slot[p] = this.itemGroup[b]!.length;
      this.itemGroup[b]!.push(g);
      this.itemPos[b]!.push(p);
      if (this.itemStamp[b] !== mark) {
        this.itemStamp[b] = mark;
        this.occurrences[b]! += weight;
        this.changed(b, marking);
      }
    }
    this.groupItems[g] = groupItems;
    this.groupSlot[g] = slot;
    this.groupWeight[g] = weight;
    this.positions += items.length;
    this.total += weight;
    this.keepSums(g, 1);
    return g;
  }

  private removeGroup(g: number, marking: boolean): void {
    this.keepSums(g, -1);
    const items = this.groupItems[g]!;
    const slot = this.groupSlot[g]!;
    const weight = this.groupWeight[g]!;
    const mark = ++this.stampCounter;
    for (let p = 0; p < items.length; p++) {
      const b = items[p]!;
      const groups = this.itemGroup[b]!;
      const positions = this.itemPos[b]!;
      const at = slot[p]!;
      const last = groups.length - 1;
      if (at !== last) {
        const mg = groups[last]!;
        const mp = positions[last]!;
        groups[at] = mg;
        positions[at] = mp;
        this.groupSlot[mg]![mp] = at;
      }
      groups.pop();
      positions.pop();
      if (this.itemStamp[b] !== mark) {
        this.itemStamp[b] = mark;
        this.occurrences[b]! -= weight;
        this.changed(b, marking);
      }
    }
    this.positions -= items.length;
    this.total -= weight;
    this.groupItems[g] = NONE;
    this.groupSlot[g] = NONE;
    this.groupWeight[g] = 0;
    this.freeGroups.push(g);
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

  /**
   * Whether b's n(b) enters other anchors' scores as it changes, so that they are marked with it:
   * where damping > 0 (its discount), except under a prior, whose statistics hold n(b) as of the
   * last full build for every item that build knew (see PriorStats).
   */
  private followsNeighbourCount(b: number): boolean {
    if (this.prior === 0) return this.damping !== 0;
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
    const groups = this.itemGroup[b];
    if (groups === undefined) return;
    const positions = this.itemPos[b]!;
    for (let j = 0; j < groups.length; j++) {
      const items = this.groupItems[groups[j]!]!;
      const k = positions[j]!;
      const lo = Math.max(0, k - this.window);
      const hi = Math.min(items.length, k + this.window + 1);
      for (let p = lo; p < hi; p++) this.markDirty(items[p]!);
    }
  }

  /** Marks every anchor (a change of reference that moves scores where damping > 0). */
  markAll(nItems: number): void {
    if (this.sinceTake !== null) this.allSinceTake = true;
    for (let a = 0; a < nItems; a++) this.markDirty(a);
  }

  /** Whether moving the recency reference changes this kind's lists (not where d = 0: see recencyWeight). */
  get referenceSensitive(): boolean {
    return this.halfLifeMs > 0 && this.damping !== 0;
  }

  /** Anchors marked and not re-ranked yet (an upper bound: some may have been refreshed by a lookup). */
  get dirtyCount(): number {
    return this.dirtyList.length;
  }

  /**
   * Whether re-ranking the marked anchors would cost more than building the kind anew: their
   * positions against `share` of what the build walks: every position once, in a tighter loop
   * than a re-rank's, and every event of the log and every item, however few positions they hold
   * (see buildCostOf).
   */
  cheaperToRebuild(share: number): boolean {
    // Asked by every slice of a flush: walked again only after new marks (re-ranking and lookups
    // only take marks away, which can turn a yes into a no, never the other way).
    if (this.cheaper !== null && this.cheaper.share === share) return this.cheaper.answer;
    let work = 0;
    for (const a of this.dirtyList) if (this.dirty[a] === 1) work += this.itemGroup[a]!.length;
    const answer = work > share * (this.positions + buildCostOf(this.log.length, this.itemGroup.length));
    this.cheaper = { share, answer };
    return answer;
  }

  /** cheaperToRebuild's last answer, until a new mark (markDirty) or a build (adopt). */
  private cheaper: { share: number; answer: boolean } | null = null;

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

  /**
   * Takes the lists of the rebuild begun by beginTake, which knew the events up to then: the
   * anchors whose groups changed since are marked again, to be re-ranked under its statistics,
   * and, where n(b) enters its neighbours' scores (damping without a prior: post-browse), the
   * anchors near them, as commit marks them. (Under a prior, an item its statistics do not know
   * has all its groups from after the take: whatever stands near it is marked already.)
   */
  adoptTaken(built: Neighbours, nItems: number): void {
    const since = this.sinceTake ?? new Set<number>();
    const all = this.allSinceTake;
    // What was marked before the job was taken is in its lists.
    this.adopt(built);
    this.growAnchorScale(nItems);
    if (all) return this.markAll(nItems);
    const near = this.prior === 0 && this.damping !== 0;
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
      overrides.set(a, this.rank(a, facts, scale));
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
    this.neighbours.overrides!.set(a, this.rank(a, facts, this.scaleFor(step), true));
  }

  /**
   * Whether a group comes twice in `groups` (an item viewed twice in one visit, kept where order
   * counts): only then must a re-rank take them group by group (byGroup) to count each group's
   * evidence once. Most anchors have none; sorting every re-rank's positions was about a fifth of
   * re-ranking's samples in the bench mix's profile.
   */
  private repeatsGroup(groups: number[]): boolean {
    const marks = this.groupMarks();
    const mark = ++this.stampCounter;
    for (let j = 0; j < groups.length; j++) {
      if (marks[groups[j]!] === mark) return true;
      marks[groups[j]!] = mark;
    }
    return false;
  }

  private groupMark = new Int32Array(0);

  /** A mark per group slot (stamped with stampCounter), grown with the slots. */
  private groupMarks(): Int32Array {
    if (this.groupMark.length < this.groupItems.length) this.groupMark = new Int32Array(Math.max(this.groupItems.length, 2 * this.groupMark.length));
    return this.groupMark;
  }

  /** Per anchor with at least HOT_POSITIONS positions, once re-ranked: its neighbours' sums, kept as groups come and go. */
  private readonly sums = new Map<number, NeighbourSums>();
  /** Marks a neighbour seen in the group being summed (evidence counts a group once). */
  private neighbourStamp = new Int32Array(0);

  /**
   * Anchor a's list as buildNeighbours computes it (the same terms, the same scoring and ties):
   * its neighbours' weights and evidence gathered from its positions, or, for an anchor with many
   * (a popular item: every batch touches it, and each re-rank walked all its positions times the
   * window), from the sums kept for it as its groups come and go (NeighbourSums), then scored.
   */
  private rank(a: number, facts: ItemFacts, scale: number, lookup = false): AnchorList {
    const positionsOfA = this.itemGroup[a]?.length ?? 0;
    let kept = this.sums.get(a);
    let wanted = lookup;
    if (kept !== undefined && (positionsOfA < this.hot >> 1 || kept.changes > positionsOfA + HOT_POSITIONS)) {
      // Few positions left, or more changes taken in than it holds: summed afresh if lookups
      // read it since it was summed, else dropped (its upkeep then costs nothing).
      wanted ||= kept.read;
      this.sums.delete(a);
      kept = undefined;
    }
    // Kept for anchors that lookups read (a popular anchor under a stream of small batches): an
    // anchor only the flush re-ranks changes far more often than it is read (bench/ingest.ts:
    // 200 items in every batch, their upkeep a third more CPU an event than their re-ranking).
    if (kept === undefined && wanted && positionsOfA >= this.hot) {
      kept = this.sumsOf(a);
      this.sums.set(a, kept);
    }
    if (kept !== undefined && lookup) kept.read = true;
    const nTouched = kept !== undefined ? this.gatherKept(kept, scale) : this.gather(a, scale);
    return this.score(a, facts, scale, nTouched);
  }

  /** Anchor a's neighbours from its positions into the scratch (weight at 2b, evidence at 4b + 2); how many. */
  private gather(a: number, scale: number): number {
    let groups = this.itemGroup[a] ?? [];
    let positions = this.itemPos[a] ?? [];
    if (this.ordered && groups.length > 1 && this.repeatsGroup(groups)) ({ groups, positions } = byGroup(groups, positions));
    const weight = this.slotWeight;
    const counts = this.slotCount;
    const touched = this.touched;
    let nTouched = 0;
    for (let j = 0; j < groups.length; j++) {
      const g = groups[j]!;
      const k = positions[j]!;
      const items = this.groupItems[g]!;
      const w = this.groupWeight[g]! * scale;
      if (this.ordered) {
        const wb = w * this.backward;
        const hi = Math.min(items.length, k + this.window + 1);
        for (let p = this.backward === 0 ? k + 1 : Math.max(0, k - this.window); p < hi; p++) {
          const b = items[p]!;
          if (b === a) continue;
          const i = b << 2;
          const stamp = counts[i + 3]!;
          if (stamp !== g + 1) {
            if (stamp === 0) touched[nTouched++] = b;
            counts[i + 3] = g + 1;
            counts[i + 2]!++;
          }
          weight[b << 1]! += p > k ? w * this.decay[p - k]! : wb * this.decay[k - p]!;
        }
      } else {
        for (let p = 0; p < items.length; p++) {
          const b = items[p]!;
          if (b === a) continue;
          const i = b << 2;
          if (counts[i + 2] === 0) touched[nTouched++] = b;
          weight[b << 1]! += w;
          counts[i + 2]!++;
        }
      }
    }
    return nTouched;
  }

  /** The kept sums into the scratch, scaled as gather's (an exact power of two: see scaleFor); how many. */
  private gatherKept(kept: NeighbourSums, scale: number): number {
    const weight = this.slotWeight;
    const counts = this.slotCount;
    const touched = this.touched;
    for (let j = 0; j < kept.item.length; j++) {
      const b = kept.item[j]!;
      touched[j] = b;
      weight[b << 1] = kept.weight[j]! * scale;
      counts[(b << 2) + 2] = kept.evidence[j]!;
    }
    return kept.item.length;
  }

  /** Scores the gathered neighbours of a and takes the top k (the scratch is left cleared). */
  private score(a: number, facts: ItemFacts, scale: number, nTouched: number): AnchorList {
    const weight = this.slotWeight;
    const counts = this.slotCount;
    const touched = this.touched;
    const { candidate, family, category } = facts;
    const damping = this.damping;
    const anchor = anchorFactor(this.occurrences[a]! * scale, damping);
    const famA = family === undefined || a >= family.length ? -1 : family[a]!;
    const catA = category === undefined || a >= category.length ? -1 : category[a]!;
    const sameCategory = catA >= 0 && this.factor !== 1;
    const heap = this.heap;
    heap.ids = this.log.items.idsNow(); // the array grows with new items: the one of now
    // Under a prior (see PriorStats): the build's π_a(b) from the last full build's statistics,
    // and the anchor's own scale for its prior list.
    const stats = this.prior > 0 ? this.neighbours.priorStats : undefined;
    let partners = 0;
    if (stats !== undefined) {
      this.growAnchorScale(a + 1);
      this.neighbours.anchorScale[a] = anchor;
      if (catA >= 0 && catA < stats.partnerStart.length - 1) {
        if (this.partnerWeight.length < stats.partnerStart.length - 1) this.partnerWeight = new Float64Array(stats.partnerStart.length - 1);
        for (let j = stats.partnerStart[catA]!; j < stats.partnerStart[catA + 1]!; j++) this.partnerWeight[stats.partner[j]!] = stats.partnerWeight[j]!;
        partners = stats.partnerStart[catA + 1]! - stats.partnerStart[catA]!;
      }
    }
    for (let t = 0; t < nTouched; t++) {
      const b = touched[t]!;
      const i = b << 2;
      const raw = weight[b << 1]!;
      const ev = counts[i + 2]!;
      weight[b << 1] = 0;
      counts[i + 2] = 0;
      counts[i + 3] = 0;
      const c = this.ordered ? raw / ORDER_SCALE : raw;
      const nb = stats === undefined ? this.occurrences[b]! * scale : neighbourCount(stats, b, this.occurrences[b]!);
      const term = nb > 0 && (candidate === undefined || candidate[b] === 1) ? Math.pow(nb, -damping) : 0;
      if (term === 0) continue;
      if (famA >= 0 && family![b] === famA) continue;
      let s: number;
      // The build's (c + prior·π) · n(b)^-d · n(a)^(d-1); with prior 0, c + 0 is c.
      if (stats === undefined) s = c * term * anchor;
      else s = (c + this.prior * priorOf(stats, this.total, partners, this.partnerWeight, category, b, nb)) * term * anchor;
      if (sameCategory && category![b] === catA) s = s >= 0 ? s * this.factor : s / this.factor;
      heap.offer(s, ev, b);
    }
    if (partners > 0) for (let j = stats!.partnerStart[catA]!; j < stats!.partnerStart[catA + 1]!; j++) this.partnerWeight[stats!.partner[j]!] = 0;
    const n = heap.size;
    // Views on buffers of more than 64 bytes: V8 keeps smaller typed arrays on its heap, and a
    // lookup that meets both kinds runs measurably slower (bench/live.ts: +25% a lookup).
    const list: AnchorList = { item: new Int32Array(Math.max(n, 32)).subarray(0, n), score: new Float64Array(Math.max(n, 16)).subarray(0, n), evidence: new Int32Array(Math.max(n, 32)).subarray(0, n) };
    heap.drain(list.score, list.evidence, list.item, 0);
    return list;
  }

  /** Anchor a's neighbour sums from its groups now (each group once, as rank counts evidence). */
  private sumsOf(a: number): NeighbourSums {
    const kept = new NeighbourSums();
    const groups = this.itemGroup[a]!;
    const marks = this.groupMarks();
    const mark = ++this.stampCounter;
    for (const g of groups) {
      if (marks[g] === mark) continue;
      marks[g] = mark;
      this.sumGroup(kept, a, g, 1);
    }
    kept.changes = 0;
    return kept;
  }

  /**
   * Adds (sign 1) or takes out (-1) group g's terms for anchor a: the same terms gather adds,
   * unscaled, and one of evidence per neighbour the group holds near a. Every term is exact in a
   * double, so sums kept over time equal sums gathered at once, bit for bit.
   */
  private sumGroup(kept: NeighbourSums, a: number, g: number, sign: number): void {
    const items = this.groupItems[g]!;
    const w = this.groupWeight[g]!;
    if (this.neighbourStamp.length < this.occurrences.length) this.neighbourStamp = new Int32Array(this.occurrences.length);
    const seen = this.neighbourStamp;
    const mark = ++this.stampCounter;
    kept.changes++;
    for (let k = 0; k < items.length; k++) {
      if (items[k] !== a) continue;
      if (this.ordered) {
        const wb = w * this.backward;
        const hi = Math.min(items.length, k + this.window + 1);
        for (let p = this.backward === 0 ? k + 1 : Math.max(0, k - this.window); p < hi; p++) {
          const b = items[p]!;
          if (b === a) continue;
          const first = seen[b] !== mark;
          seen[b] = mark;
          kept.add(b, sign * (p > k ? w * this.decay[p - k]! : wb * this.decay[k - p]!), first ? sign : 0);
        }
      } else {
        for (let p = 0; p < items.length; p++) {
          const b = items[p]!;
          if (b !== a) kept.add(b, sign * w, sign);
        }
      }
    }
  }

  /** Group g came (sign 1) or goes (-1): the sums kept for the anchors it holds follow. */
  private keepSums(g: number, sign: number): void {
    if (this.sums.size === 0) return;
    const items = this.groupItems[g]!;
    for (let p = 0; p < items.length; p++) {
      const kept = this.sums.get(items[p]!);
      // an anchor twice in the group: summed once, over both its positions
      if (kept !== undefined && items.indexOf(items[p]!) === p) this.sumGroup(kept, items[p]!, g, sign);
    }
  }

  /**
   * Files every event of the log from `cutoff` and builds the groups, marking nothing (the built
   * lists are current); yields every LOAD_STEP events or keys, so that a caller can spread it
   * over turns of the event loop (LiveModel.loadFor).
   */
  *load(cutoff: number, nItems: number): Generator<void, void, void> {
    this.ensureItems(nItems);
    const log = this.log;
    for (let e = 0; e < log.length; e++) {
      if (e % LOAD_STEP === LOAD_STEP - 1) yield;
      if (log.time[e]! < cutoff) continue;
      for (let s = 0; s < this.sets.length; s++) {
        const set = this.sets[s]!;
        if (log.kind[e] !== set.kind) continue;
        const key = set.keyOf(log, e);
        if (key < 0) continue;
        let list = this.keys[s]!.get(key);
        if (list === undefined) this.keys[s]!.set(key, (list = []));
        list.push(e);
      }
    }
    for (let s = 0; s < this.sets.length; s++) {
      let n = 0;
      for (const [key, list] of this.keys[s]!) {
        // Stable: equal times keep the log's order, as in the build.
        list.sort((x, y) => log.time[x]! - log.time[y]!);
        this.recompute(s, key, cutoff, false);
        if (++n % (LOAD_STEP >> 4) === 0) yield;
      }
    }
  }
}

/**
 * Default of ModelOptions.hotPositions: an anchor with at least this many positions keeps its
 * neighbours' sums (NeighbourSums) once a lookup re-ranked it, instead of gathering them from
 * every position at each re-rank; dropped below half, or when no lookup read it for as many
 * changes as it holds positions.
 * Keeping costs a window's worth of updates each time one of its groups comes or goes; a re-rank
 * then costs its distinct neighbours rather than its positions times the window.
 */
const HOT_POSITIONS = 128;

/**
 * One anchor's neighbours: per item b near it in some group, the summed weight of the pairs
 * (unscaled: see scaleFor) and the number of groups holding b near it; b leaves with its last
 * group. `changes`: groups taken in or out since it was summed from scratch (rank sums it afresh
 * past its positions' count, which bounds how far back its terms reach).
 */
class NeighbourSums {
  private readonly at = new Map<number, number>();
  readonly item: number[] = [];
  readonly weight: number[] = [];
  readonly evidence: number[] = [];
  changes = 0;
  /** Whether a lookup re-ranked the anchor since it was summed (else it is dropped when due to be summed afresh). */
  read = false;

  add(b: number, weight: number, evidence: number): void {
    let j = this.at.get(b);
    if (j === undefined) {
      j = this.item.length;
      this.at.set(b, j);
      this.item.push(b);
      this.weight.push(0);
      this.evidence.push(0);
    }
    this.weight[j]! += weight;
    this.evidence[j]! += evidence;
    if (this.evidence[j] === 0) {
      // its last group went (its weight is back to exactly 0): swap the last entry in
      const last = this.item.length - 1;
      if (j !== last) {
        this.item[j] = this.item[last]!;
        this.weight[j] = this.weight[last]!;
        this.evidence[j] = this.evidence[last]!;
        this.at.set(this.item[j]!, j);
      }
      this.item.pop();
      this.weight.pop();
      this.evidence.pop();
      this.at.delete(b);
    }
  }
}

/**
 * A build's cost beyond its positions, in positions: it walks the whole log to group it, expired
 * events included, and every item. Without it a log whose events had mostly expired (a shop's
 * first live event 90 days after its history, RECS_EVENTS_MAX_AGE_DAYS) held few positions, so a
 * batch that marked its popular anchors made the flush rebuild after nearly every batch, each
 * build walking the whole log (bench/run.ts --only mixed: a rebuild every 25 ms, a fifth of the
 * gateway's CPU). Measured on the demo shop (200k events, 10.8k items): post-browse's build
 * with every event expired 2.5 ms, with none 131 ms for 180k positions: an event walked costs
 * about a sixtieth of a position. Counted here at a sixteenth, and an item at one: on the side
 * of re-ranking, whose cost the marked positions bound.
 */
function buildCostOf(events: number, items: number): number {
  return events / 16 + items;
}

/** b's n(b) on the neighbour's side: the statistics', or its current `own` where they do not know it (as the build, see PriorStats). */
function neighbourCount(stats: PriorStats, b: number, own: number): number {
  const frozen = b < stats.occurrences.length ? stats.occurrences[b]! : 0;
  return frozen > 0 ? frozen : own;
}

/**
 * π_a(b) as the build computes it: b's category's partner weight for the anchor's category times
 * b's share of its category, where the anchor's category has partners; else n(b) / N (the
 * current N, `total`, where the statistics are an empty log's).
 */
function priorOf(stats: PriorStats, total: number, partners: number, partnerWeight: Float64Array, category: Int32Array | undefined, b: number, nb: number): number {
  if (partners === 0) return nb / (stats.total > 0 ? stats.total : total);
  const cb = category === undefined || b >= category.length ? -1 : category[b]!;
  if (cb < 0) return 0;
  const nCategories = stats.partnerStart.length - 1;
  const share = cb < nCategories && stats.categoryOccurrences[cb]! > 0 ? nb / stats.categoryOccurrences[cb]! : 0;
  return (cb < partnerWeight.length ? partnerWeight[cb]! : 0) * share;
}

/**
 * An item's positions with those of one group together, as the build walks them: the shared-group
 * count stamps each neighbour with the group last seen, which a group seen again after another
 * would count twice (the swap-removal of groups that left mixes the lists).
 */
function byGroup(groups: number[], positions: number[]): { groups: number[]; positions: number[] } {
  const keys = new Float64Array(groups.length);
  for (let j = 0; j < groups.length; j++) keys[j] = groups[j]! * 2_097_152 + positions[j]!;
  keys.sort();
  return { groups: Array.from(keys, (x) => Math.floor(x / 2_097_152)), positions: Array.from(keys, (x) => x % 2_097_152) };
}

/** Folds the overrides into the CSR arrays, so that lookups and memory stay those of a built model. */
export function foldOverrides(n: Neighbours, nItems: number): void {
  const overrides = n.overrides;
  if (overrides === undefined || overrides.size === 0) return;
  const built = n.start.length - 1;
  let total = 0;
  for (let a = 0; a < nItems; a++) {
    const o = overrides.get(a);
    total += o !== undefined ? o.item.length : a < built ? n.start[a + 1]! - n.start[a]! : 0;
  }
  const start = new Int32Array(nItems + 1);
  const item = new Int32Array(total);
  const score = new Float64Array(total);
  const evidence = new Int32Array(total);
  let at = 0;
  for (let a = 0; a < nItems; a++) {
    start[a] = at;
    const o = overrides.get(a);
    if (o !== undefined) {
      item.set(o.item, at); score.set(o.score, at); evidence.set(o.evidence, at);
      at += o.item.length;
    } else if (a < built) {
      const from = n.start[a]!;
      const to = n.start[a + 1]!;
      item.set(n.item.subarray(from, to), at); score.set(n.score.subarray(from, to), at); evidence.set(n.evidence.subarray(from, to), at);
      at += to - from;
    }
  }
  start[nItems] = at;
  // One assignment after another while lookups run in between is impossible (single thread).
  n.start = start;
  n.item = item;
  n.score = score;
  n.evidence = evidence;
  overrides.clear();
}

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
/**
 * Events (or a sixteenth as many keys) a live index files between the points where its loading
 * may pause: a few milliseconds on a loaded machine (16,384 made slices of 100 to 139 ms there).
 */
const LOAD_STEP = 2_048;

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
