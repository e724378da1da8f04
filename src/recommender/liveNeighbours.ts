import type { EventLog, LogCompaction } from './eventLog.js';
import { KIND_PURCHASE, KIND_VIEW } from './eventLog.js';
import { DAY_MS, ORDER_SCALE, TopK, anchorFactor, orderDecay, recencyWeight, referenceStep } from './cooccurrence.js';
import type { AnchorList, ItemFacts, NeighbourOptions, Neighbours, PriorStats } from './cooccurrence.js';
import type { ModelOptions } from './model.js';
import { DEFAULT_SESSION_GAP_MS } from './sessions.js';
import { GroupCells } from './groupCells.js';

/*
 * One kind's live index (LiveNeighbours): its groups with an item-to-position index, n(b) and N
 * kept as groups come and go, and the anchors re-ranked from their own positions by the build's
 * scoring. LiveModel (live.ts) holds one per incremental kind; the rules it follows are told there.
 */

/**
 * Events (or a sixteenth as many keys) a live index files between the points where its loading
 * may pause: a few milliseconds on a loaded machine (16,384 made slices of 100 to 139 ms there).
 */
export const LOAD_STEP = 2_048;

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

export function postBrowseLiveSets(options: ModelOptions): LiveSet[] {
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

export function nextBestLiveSets(options: ModelOptions): LiveSet[] {
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

export function growInt32(a: Int32Array, n: number, fill = 0): Int32Array {
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
 * positions are (itemGroup[b][j], itemPos[b][j]), and groupSlot[g][p] (in GroupCells) is where
 * position p of group g sits in its item's list, so that a group leaves in O(its size).
 */
export class LiveNeighbours {
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
  /** Every group's items and their slots (GroupCells): groupSlot of the comment above is the n cells after its items. */
  private readonly groups = new GroupCells();
  private groupWeight: number[] = [];
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
      this.touchedKeys[s]!.add(key);
      const list = this.keys[s]!.get(key);
      if (list === undefined) {
        this.keys[s]!.set(key, [e]);
        continue;
      }
      // After every event at or before its time: the build's order (time, then log order).
      const t = log.time[e]!;
      let lo = 0;
      let hi = list.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (log.time[list[mid]!]! <= t) lo = mid + 1;
        else hi = mid;
      }
      if (list.length < EXACT_LIST) this.keys[s]!.set(key, lo === list.length ? list.concat(e) : withAt(list, lo, e));
      else if (lo === list.length) list.push(e);
      else list.splice(lo, 0, e);
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
    const weight = this.halfLifeMs > 0 ? set.weight * recencyWeight(log.time[list[to - 1]!]!, this.halfLifeMs, this.ownStep) : set.weight;
    const g = this.freeGroups.pop() ?? this.groups.capacity;
    const slots = this.groups.add(g, items) + items.length;
    const cells = this.groups.cells;
    const mark = ++this.stampCounter;
    for (let p = 0; p < items.length; p++) {
      const b = items[p]!;
      cells[slots + p] = this.itemGroup[b]!.length;
      this.itemGroup[b]!.push(g);
      this.itemPos[b]!.push(p);
      if (this.itemStamp[b] !== mark) {
        this.itemStamp[b] = mark;
        this.occurrences[b]! += weight;
        this.changed(b, marking);
      }
    }
    this.groupWeight[g] = weight;
    this.positions += items.length;
    this.total += weight;
    this.keepSums(g, 1);
    return g;
  }

  private removeGroup(g: number, marking: boolean): void {
    this.keepSums(g, -1);
    const cells = this.groups.cells;
    const start = this.groups.start(g);
    const n = this.groups.length(g);
    const weight = this.groupWeight[g]!;
    const mark = ++this.stampCounter;
    for (let p = 0; p < n; p++) {
      const b = cells[start + p]!;
      const groups = this.itemGroup[b]!;
      const positions = this.itemPos[b]!;
      const at = cells[start + n + p]!;
      const last = groups.length - 1;
      if (at !== last) {
        const mg = groups[last]!;
        const mp = positions[last]!;
        groups[at] = mg;
        positions[at] = mp;
        cells[this.groups.start(mg) + this.groups.length(mg) + mp] = at;
      }
      groups.pop();
      positions.pop();
      if (this.itemStamp[b] !== mark) {
        this.itemStamp[b] = mark;
        this.occurrences[b]! -= weight;
        this.changed(b, marking);
      }
    }
    this.positions -= n;
    this.total -= weight;
    this.groups.remove(g);
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
    const cells = this.groups.cells;
    for (let j = 0; j < groups.length; j++) {
      const start = this.groups.start(groups[j]!);
      const k = positions[j]!;
      const lo = Math.max(0, k - this.window);
      const hi = Math.min(this.groups.length(groups[j]!), k + this.window + 1);
      for (let p = lo; p < hi; p++) this.markDirty(cells[start + p]!);
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
    const n = this.groups.capacity;
    if (this.groupMark.length < n) this.groupMark = new Int32Array(Math.max(n, 2 * this.groupMark.length));
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
    const cells = this.groups.cells;
    let nTouched = 0;
    for (let j = 0; j < groups.length; j++) {
      const g = groups[j]!;
      const k = positions[j]!;
      const start = this.groups.start(g);
      const n = this.groups.length(g);
      const w = this.groupWeight[g]! * scale;
      if (this.ordered) {
        const wb = w * this.backward;
        const hi = Math.min(n, k + this.window + 1);
        for (let p = this.backward === 0 ? k + 1 : Math.max(0, k - this.window); p < hi; p++) {
          const b = cells[start + p]!;
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
        for (let p = 0; p < n; p++) {
          const b = cells[start + p]!;
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
    const cells = this.groups.cells;
    const start = this.groups.start(g);
    const n = this.groups.length(g);
    const w = this.groupWeight[g]!;
    if (this.neighbourStamp.length < this.occurrences.length) this.neighbourStamp = new Int32Array(this.occurrences.length);
    const seen = this.neighbourStamp;
    const mark = ++this.stampCounter;
    kept.changes++;
    for (let k = 0; k < n; k++) {
      if (cells[start + k] !== a) continue;
      if (this.ordered) {
        const wb = w * this.backward;
        const hi = Math.min(n, k + this.window + 1);
        for (let p = this.backward === 0 ? k + 1 : Math.max(0, k - this.window); p < hi; p++) {
          const b = cells[start + p]!;
          if (b === a) continue;
          const first = seen[b] !== mark;
          seen[b] = mark;
          kept.add(b, sign * (p > k ? w * this.decay[p - k]! : wb * this.decay[k - p]!), first ? sign : 0);
        }
      } else {
        for (let p = 0; p < n; p++) {
          const b = cells[start + p]!;
          if (b !== a) kept.add(b, sign * w, sign);
        }
      }
    }
  }

  /** Group g came (sign 1) or goes (-1): the sums kept for the anchors it holds follow. */
  private keepSums(g: number, sign: number): void {
    if (this.sums.size === 0) return;
    const cells = this.groups.cells;
    const start = this.groups.start(g);
    const n = this.groups.length(g);
    for (let p = 0; p < n; p++) {
      const a = cells[start + p]!;
      const kept = this.sums.get(a);
      // an anchor twice in the group: summed once, over both its positions
      if (kept !== undefined && cells.indexOf(a, start) === start + p) this.sumGroup(kept, a, g, sign);
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
        if (list.length < EXACT_LIST) this.keys[s]!.set(key, list.slice());
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
export function buildCostOf(events: number, items: number): number {
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
/**
 * Below this many events, a key's list is made anew, exactly sized, for each event it takes: an
 * array grown by push keeps room for 16 more, three times what a visit of five views needs, and
 * there is one list for every visit and order (BENCHMARKS.md, the twenty-fourth pass).
 */
const EXACT_LIST = 16;

/** A copy of `list` with `e` at `at`, exactly sized. */
function withAt(list: readonly number[], at: number, e: number): number[] {
  const copy = new Array<number>(list.length + 1);
  for (let i = 0; i < at; i++) copy[i] = list[i]!;
  copy[at] = e;
  for (let i = at; i < list.length; i++) copy[i + 1] = list[i]!;
  return copy;
}

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
