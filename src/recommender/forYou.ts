import type { ForYouEntryModel, RecommendationEntryModel, RecommendationFilterModel, RecommendationKind, RecommendationSource } from '../ports/backend.js';
import { familyOf } from './catalog.js';
import { KIND_PURCHASE } from './eventLog.js';
import type { RecModel } from './model.js';
import { neighboursOf } from './neighbours.js';
import type { Picks, Recommender } from './recommend.js';

/** One event of a shopper's history: what forYou reads. */
export interface ShopperEvent {
  itemId: number;
  /** KIND_VIEW or KIND_PURCHASE. */
  kind: number;
  time: number;
}

/** How a shopper's items are weighed; every field has a default. */
export interface ForYouOptions {
  /** Distinct latest items taken as anchors; default 10. */
  anchors?: number;
  /** The p-th latest anchor (0 the newest) weighs 1 / (1 + p)^decay; default 1. */
  decay?: number;
  /** Each anchor's list scaled to its best score (else raw scores, which favour anchors with much evidence); default true. */
  normalise?: boolean;
}

export const DEFAULT_FOR_YOU: Required<ForYouOptions> = { anchors: 10, decay: 1, normalise: true };

/** A scored candidate: the item id, its summed score, and the anchor (item id) that gave it most. */
export interface ForYouCandidate {
  item: number;
  score: number;
  because: number;
  source: RecommendationSource;
}

/** The shopper's anchors, newest first, one per item: a viewed item anchors its post-browse list, a bought one its
 * next-best-product list (a purchase outranks a view of the same item). */
export function anchorsOf(history: readonly ShopperEvent[], max: number): ShopperEvent[] {
  const out: ShopperEvent[] = [];
  const at = new Map<number, number>();
  for (let h = history.length - 1; h >= 0; h--) {
    const event = history[h]!;
    const known = at.get(event.itemId);
    if (known !== undefined) {
      if (event.kind === KIND_PURCHASE && out[known]!.kind !== KIND_PURCHASE) out[known] = { ...out[known]!, kind: KIND_PURCHASE };
      continue;
    }
    if (out.length >= max) continue;
    at.set(event.itemId, out.length);
    out.push(event);
  }
  return out;
}

/** An item's anchored list of a kind, best first: neighbour item ids and their scores (a live model's, or as published). */
export interface AnchoredList {
  items: ArrayLike<number>;
  scores: ArrayLike<number>;
}

/** A list being filled by item id (Picks on a model, RecordPick on records): true from `offer` once it is full. */
export interface ForYouPicks {
  offer(itemId: number, score: number, source: RecommendationSource): boolean;
  readonly enough: boolean;
  entries(): RecommendationEntryModel[];
}

/** What forYou reads, from a live model or from published lists: one algorithm whatever holds the lists. */
export interface ForYouInputs<P extends ForYouPicks> {
  /** The item's list of `kind` (POST_BROWSE for a view, NEXT_BEST_PRODUCT for a purchase); null where it has none. */
  anchored(kind: RecommendationKind, itemId: number): AnchoredList | null;
  /** The item's family (its id where its record is unknown). */
  familyOf(itemId: number): number;
  /** A list of `limit` under `filter`, leaving out what `skip` names. */
  picks(limit: number, filter: RecommendationFilterModel | null, skip: (itemId: number, family: number) => boolean): P;
  /** The popular items of `kind` offered to `picks` until it has enough: the list anchored on no item. */
  fill(kind: RecommendationKind, filter: RecommendationFilterModel | null, picks: P): void;
}

/** The anchored lists forYouScores reads, newest anchor first: what a caller holding no model fetches beforehand. */
export function listsOf(history: readonly ShopperEvent[], options: ForYouOptions = {}): { kind: RecommendationKind; itemId: number }[] {
  const max = options.anchors ?? DEFAULT_FOR_YOU.anchors;
  return anchorsOf(history, max).map((a) => ({ kind: a.kind === KIND_PURCHASE ? 'NEXT_BEST_PRODUCT' : 'POST_BROWSE', itemId: a.itemId }));
}

/** Candidates by descending score (then ascending item id): each anchor's list, scaled to its best score so that one
 * busy anchor does not drown the others, times its recency weight, summed. Pure: the lists are read only. */
export function forYouScores(anchored: ForYouInputs<ForYouPicks>['anchored'], history: readonly ShopperEvent[], options: ForYouOptions = {}): ForYouCandidate[] {
  const { decay, normalise } = { ...DEFAULT_FOR_YOU, ...options };
  const scores = new Map<number, ForYouCandidate & { best: number }>();
  listsOf(history, options).forEach(({ kind, itemId }, p) => {
    const bought = kind === 'NEXT_BEST_PRODUCT';
    const list = anchored(kind, itemId);
    if (list === null || list.items.length === 0 || !(list.scores[0]! > 0)) return;
    const weight = 1 / Math.pow(1 + p, decay) / (normalise ? list.scores[0]! : 1);
    const source: RecommendationSource = bought ? 'CO_PURCHASE' : 'CO_VIEW';
    for (let i = 0; i < list.items.length; i++) {
      const part = list.scores[i]! * weight;
      const b = list.items[i]!;
      const known = scores.get(b);
      if (known === undefined) scores.set(b, { item: b, score: part, because: itemId, source, best: part });
      else {
        known.score += part;
        if (part > known.best) Object.assign(known, { because: itemId, source, best: part });
      }
    }
  });
  return [...scores.values()].sort((x, y) => y.score - x.score || x.item - y.item).map(({ item, score, because, source }) => ({ item, score, because, source }));
}

/** Up to `limit` entries for a shopper: forYouScores's candidates, then the popular items (most viewed where the
 * shopper only viewed, most bought otherwise), every one passing `filter`; never an item of the history, nor its family. */
export function forYouFrom<P extends ForYouPicks>(inputs: ForYouInputs<P>, history: readonly ShopperEvent[], limit: number, filter: RecommendationFilterModel | null, options: ForYouOptions = {}): ForYouEntryModel[] {
  const seen = new Set<number>();
  for (const event of history) seen.add(event.itemId);
  const seenFamilies = new Set<number>();
  for (const id of seen) seenFamilies.add(inputs.familyOf(id));
  const picks = inputs.picks(limit, filter, (itemId, family) => seen.has(itemId) || seenFamilies.has(family));
  const because = new Map<number, number>();
  for (const c of forYouScores((kind, itemId) => inputs.anchored(kind, itemId), history, options)) {
    because.set(c.item, c.because);
    if (picks.offer(c.item, c.score, c.source)) break;
  }
  if (!picks.enough) inputs.fill(history.some((e) => e.kind === KIND_PURCHASE) ? 'NEXT_BEST_PRODUCT' : 'POST_BROWSE', filter, picks);
  return picks.entries().map((e) => ({ ...e, because: e.source === 'POPULAR' ? null : because.get(e.itemId) ?? null }));
}

/** An item's neighbour list of `kind` in a model, as item ids: what a learner publishes for serve replicas' forYou. */
export function anchoredIn(model: RecModel, kind: RecommendationKind, itemId: number): AnchoredList | null {
  const items = model.items;
  const index = items.indexOf(itemId);
  if (index < 0) return null;
  const name = kind === 'NEXT_BEST_PRODUCT' ? 'nextBest' : 'postBrowse';
  model.refresh?.(name, index);
  const { item, score, from, to } = neighboursOf(model[name], index);
  const ids = new Array<number>(to - from);
  for (let i = from; i < to; i++) ids[i - from] = items.idAt(item[i]!);
  return { items: ids, scores: score.subarray(from, to) };
}

/** forYouFrom on a model: its neighbour lists, its Picks and its popular fill. */
export function forYou(recommender: Recommender, history: readonly ShopperEvent[], limit: number, filter: RecommendationFilterModel | null, options: ForYouOptions = {}): ForYouEntryModel[] {
  const { model, catalog } = recommender;
  const items = model.items;
  const inputs: ForYouInputs<ForYouPicks & { inner: Picks }> = {
    anchored: (kind, itemId) => anchoredIn(model, kind, itemId),
    familyOf: (id) => {
      const item = catalog?.get(id);
      return item === undefined ? id : familyOf(item);
    },
    picks: (limit, filter, skip) => {
      const inner = recommender.picks(limit, filter, (itemId, _, family) => skip(itemId, family));
      return { inner, offer: (id, score, source) => inner.offer(items.indexOf(id), score, 0, source), get enough() { return inner.enough; }, entries: () => inner.entries() };
    },
    fill: (kind, filter, picks) => recommender.offerPopular(kind, filter, picks.inner),
  };
  return forYouFrom(inputs, history, limit, filter, options);
}
