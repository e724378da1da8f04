import { availableParallelism } from 'node:os';
import { buildGroups } from './buildGroups.js';
import { categoryAssociation, MAX_PARTNER_CATEGORIES, priorListsOf, statsOf } from './categoryPrior.js';
import type { EventLog } from './eventLog.js';
import type { GroupSet, ItemFacts, NeighbourOptions, Neighbours, PriorStats } from './neighbours.js';
import { ANCHOR_CHUNK, rankEveryAnchor } from './rankAnchors.js';
import type { AnchorPass, RankedAnchors } from './rankAnchors.js';
import { orderDecay } from './weights.js';

/** Neighbours of every item by co-occurrence in groups: each item's groups are walked through an item-to-group index
 * into a dense scratch, so memory stays O(items + events), never O(pairs). */
export function buildNeighbours(log: EventLog, sets: readonly GroupSet[], options: NeighbourOptions, facts: ItemFacts = {}, frozen?: PriorStats): Neighbours {
  const prepared = prepareNeighbours(log, sets, options, facts, frozen);
  return prepared.finish(rankEveryAnchor(prepared.pass, options.pairScore ?? null, prepared.twoThreads));
}

/** A build up to its anchor loop: the loop's pass, and what makes the loop's lists the build's neighbours. */
export interface PreparedNeighbours {
  pass: AnchorPass;
  /** Whether the loop takes a second thread (see NeighbourOptions.parallelFromPositions); its largest arrays are then shared memory. */
  twoThreads: boolean;
  finish(ranked: RankedAnchors): Neighbours;
}

/** buildNeighbours up to its anchor loop. */
export function prepareNeighbours(log: EventLog, sets: readonly GroupSet[], options: NeighbourOptions, facts: ItemFacts = {}, frozen?: PriorStats): PreparedNeighbours {
  const nItems = log.items.size;
  const topK = options.topK ?? 30;
  const factor = options.sameCategoryFactor ?? 1;
  const damping = options.damping ?? 0.3;
  const pairScore = options.pairScore ?? null;
  const prior = pairScore === null ? options.prior ?? 0 : 0;
  const order = options.order ?? null;
  const ordered = order !== null && order.window > 0;
  // A second thread reads the index of positions, the largest arrays, in shared memory rather than a copy.
  const upTo = sets.reduce((n, s) => n + s.sequences.events.length, 0);
  const twoThreads = pairScore === null && upTo >= (options.parallelFromPositions ?? PARALLEL_FROM_POSITIONS) && nItems >= 2 * ANCHOR_CHUNK && availableParallelism() >= 2;
  const int32 = twoThreads ? (n: number): Int32Array => new Int32Array(new SharedArrayBuffer(4 * n)) : (n: number): Int32Array => new Int32Array(n);
  const groups = buildGroups(log, sets, nItems, ordered, options.collapseRepeats === true, options.halfLifeDays ?? 0, int32);
  const nGroups = groups.weight.length;
  // Everything below works on items renumbered by descending number of positions (their rank),
  // so that the scratch entries the pair loop hits most, those of popular items, share a few
  // cache lines instead of being spread over megabytes. Outputs and tie-breaks use the real index.
  const { rank, orig } = renumberByDegree(groups.items, nItems);
  const { candidate, family, category, categoryRank } = permuteFacts(facts, orig);

  // n(b): weighted groups holding b (once however often it occurs there).
  const occurrences = new Float64Array(nItems);
  const byItemStart = new Int32Array(nItems + 1);
  const stamp = new Int32Array(nItems).fill(-1);
  let total = 0;
  for (let g = 0; g < nGroups; g++) {
    const w = groups.weight[g]!;
    total += w;
    for (let j = groups.start[g]!; j < groups.start[g + 1]!; j++) {
      const item = groups.items[j]!;
      byItemStart[item + 1]!++;
      if (stamp[item] === g) continue;
      stamp[item] = g;
      occurrences[item]! += w;
    }
  }
  for (let i = 0; i < nItems; i++) byItemStart[i + 1]! += byItemStart[i]!;
  // An item's groups (item sets) or positions (ordered: positionGroup maps them to their group).
  const byItem = int32(groups.items.length);
  const positionGroup = int32(ordered ? groups.items.length : 0);
  const fill = byItemStart.slice(0, nItems);
  for (let g = 0; g < nGroups; g++) {
    for (let j = groups.start[g]!; j < groups.start[g + 1]!; j++) {
      byItem[fill[groups.items[j]!]!++] = ordered ? j : g;
      if (ordered) positionGroup[j] = g;
    }
  }
  const decay = ordered ? orderDecay(order) : new Float64Array(0);
  const backward = order?.backward ?? 0;

  // Doubles keep sums of the exact terms exact (see ORDER_SCALE) in a 16-byte ordered slot; where every group weighs 1
  // and pairs are unordered, Int32 counts give the same numbers in a quarter of the space.
  const unit = !ordered && groups.weight.every((w) => w === 1);
  const ids = log.items.idsNow(); // a build interns nothing: no copy needed
  // The prior's statistics (see PriorStats): this build's, or those given.
  const givenStats = prior > 0 ? frozen : undefined;
  // (An empty log's statistics have no N: the current one serves.)
  const priorTotal = givenStats !== undefined && givenStats.total > 0 ? givenStats.total : total;
  const frozenCounts = givenStats === undefined ? occurrences : inRankOrder(givenStats.occurrences, orig);
  // n(b) on the neighbour's side: the given statistics' where they know b.
  let neighbourCounts = occurrences;
  if (givenStats !== undefined) {
    neighbourCounts = frozenCounts.slice();
    for (let b = 0; b < nItems; b++) if (!(neighbourCounts[b]! > 0)) neighbourCounts[b] = occurrences[b]!;
  }
  // n(b)^-d, computed once per build so that the pair loop does one multiplication instead of a
  // Math.pow; 0 for non-candidates, so that one read both filters and scores.
  const termOf = (counts: Float64Array): Float64Array => {
    const out = new Float64Array(nItems);
    for (let b = 0; b < nItems; b++) out[b] = counts[b]! > 0 && (candidate === undefined || candidate[b] === 1) ? Math.pow(counts[b]!, -damping) : 0;
    return out;
  };
  const term = termOf(neighbourCounts);

  // The prior π_a(b): by category association where the anchor's category has partners, else by
  // popularity (see Scoring).
  const nCategories = givenStats !== undefined ? givenStats.partnerStart.length - 1 : category === undefined ? 0 : category.reduce((m, c) => Math.max(m, c + 1), 0);
  const association = prior > 0 && nCategories > 0 && category !== undefined
    ? givenStats === undefined
      ? categoryAssociation(groups, category, nCategories, options.categoryLift ?? 0, MAX_PARTNER_CATEGORIES, categoryRank)
      : { start: givenStats.partnerStart, partner: givenStats.partner, weight: givenStats.partnerWeight, occurrences: givenStats.categoryOccurrences }
    : null;
  // b's share of its category's groups.
  const shareOf = (counts: Float64Array): Float64Array => {
    const out = new Float64Array(association === null ? 0 : nItems);
    if (association !== null) {
      for (let b = 0; b < nItems; b++) {
        const c = category![b]!;
        if (c >= 0 && c < nCategories && association.occurrences[c]! > 0) out[b] = counts[b]! / association.occurrences[c]!;
      }
    }
    return out;
  };
  const share = shareOf(neighbourCounts);
  const priorLists = prior > 0
    ? givenStats === undefined
      ? priorListsOf(prior, factor, topK, occurrences, total, term, category, association, share, orig, ids)
      : priorListsOf(prior, factor, topK, frozenCounts, priorTotal, termOf(frozenCounts), category, association, shareOf(frozenCounts), orig, ids)
    : null;
  const pass: AnchorPass = {
    nItems, topK, factor, damping, prior, priorTotal, ordered, unit, backward,
    rank, orig, ids, occurrences, neighbourCounts, term, share, decay,
    byItemStart, byItem, positionGroup, groupStart: groups.start, groupItems: groups.items, groupWeight: groups.weight,
    family: family ?? null, category: category ?? null,
    // every category the facts number (a category newer than given statistics has no partners)
    nCategories: category === undefined ? 0 : Math.max(nCategories, category.reduce((m, c) => Math.max(m, c + 1), 0)),
    association: association === null ? null : { start: association.start, partner: association.partner, weight: association.weight },
  };
  const finish = (ranked: RankedAnchors): Neighbours => ({
    start: ranked.start, item: ranked.item, score: ranked.score, evidence: ranked.evidence,
    priorStart: priorLists?.start ?? new Int32Array(1), priorItem: priorLists?.item ?? new Int32Array(0), priorScore: priorLists?.score ?? new Float64Array(0),
    anchorScale: ranked.anchorScale, sameCategoryFactor: factor,
    ...(prior > 0 ? { priorStats: givenStats ?? statsOf(total, occurrences, orig, association) } : {}),
  });
  return { pass, twoThreads, finish };
}

/** Default of NeighbourOptions.parallelFromPositions: below it a second thread's start and copies eat what it saves. */
export const PARALLEL_FROM_POSITIONS = 1_000_000;

/** Ranks of items by descending number of groups (a counting sort, stable), and the inverse; renumbers `items` in place. */
function renumberByDegree(items: Int32Array, nItems: number): { rank: Int32Array; orig: Int32Array } {
  const degree = new Int32Array(nItems);
  let maxDegree = 0;
  for (let k = 0; k < items.length; k++) {
    const d = ++degree[items[k]!]!;
    if (d > maxDegree) maxDegree = d;
  }
  const slot = new Int32Array(maxDegree + 2);
  for (let b = 0; b < nItems; b++) slot[maxDegree - degree[b]! + 1]!++;
  for (let d = 0; d <= maxDegree; d++) slot[d + 1]! += slot[d]!;
  const rank = new Int32Array(nItems);
  const orig = new Int32Array(nItems);
  for (let b = 0; b < nItems; b++) {
    const r = slot[maxDegree - degree[b]!]!++;
    rank[b] = r;
    orig[r] = b;
  }
  for (let k = 0; k < items.length; k++) items[k] = rank[items[k]!]!;
  return { rank, orig };
}

/** The facts indexed by rank. */
function permuteFacts(facts: ItemFacts, orig: Int32Array): ItemFacts {
  const permute = <T extends Uint8Array | Int32Array>(a: T | undefined): T | undefined => {
    if (a === undefined) return undefined;
    const out = a.slice() as T;
    for (let r = 0; r < orig.length; r++) out[r] = a[orig[r]!]!;
    return out;
  };
  const out: ItemFacts = {};
  const candidate = permute(facts.candidate);
  const family = permute(facts.family);
  const category = permute(facts.category);
  if (candidate !== undefined) out.candidate = candidate;
  if (family !== undefined) out.family = family;
  if (category !== undefined) out.category = category;
  // by category, not by item
  if (facts.categoryRank !== undefined) out.categoryRank = facts.categoryRank;
  return out;
}

/** A by-rank copy of an array by real index (0 for items beyond it). */
function inRankOrder(byIndex: Float64Array, orig: Int32Array): Float64Array {
  const out = new Float64Array(orig.length);
  for (let r = 0; r < orig.length; r++) if (orig[r]! < byIndex.length) out[r] = byIndex[orig[r]!]!;
  return out;
}
