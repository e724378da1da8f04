import type { ForYouEntryModel, RecommendationFilterModel, RecommendationSource } from '../ports/backend.js';
import { familyOf } from './catalog.js';
import type { Catalog } from './catalog.js';
import { KIND_PURCHASE } from './eventLog.js';
import type { RecModel } from './model.js';
import { neighboursOf } from './neighbours.js';
import type { Recommender } from './recommend.js';

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

/** A scored candidate: the model index, its summed score, and the anchor (item id) that gave it most. */
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

/** Candidates by descending score (then ascending item id): each anchor's neighbour list, scaled to its best score
 * so that one busy anchor does not drown the others, times its recency weight, summed. Pure: the model is read only. */
export function forYouScores(model: RecModel, history: readonly ShopperEvent[], options: ForYouOptions = {}): ForYouCandidate[] {
  const { anchors: max, decay, normalise } = { ...DEFAULT_FOR_YOU, ...options };
  const items = model.items;
  const scores = new Map<number, ForYouCandidate & { best: number }>();
  anchorsOf(history, max).forEach((anchor, p) => {
    const index = items.indexOf(anchor.itemId);
    if (index < 0) return;
    const kind = anchor.kind === KIND_PURCHASE ? 'nextBest' : 'postBrowse';
    model.refresh?.(kind, index);
    const { item, score, from, to } = neighboursOf(model[kind], index);
    if (to <= from || !(score[from]! > 0)) return;
    const weight = 1 / Math.pow(1 + p, decay) / (normalise ? score[from]! : 1);
    const source: RecommendationSource = kind === 'nextBest' ? 'CO_PURCHASE' : 'CO_VIEW';
    for (let i = from; i < to; i++) {
      const part = score[i]! * weight;
      const b = item[i]!;
      const known = scores.get(b);
      if (known === undefined) scores.set(b, { item: b, score: part, because: anchor.itemId, source, best: part });
      else {
        known.score += part;
        if (part > known.best) Object.assign(known, { because: anchor.itemId, source, best: part });
      }
    }
  });
  const ids = items.idsNow();
  return [...scores.values()].sort((x, y) => y.score - x.score || ids[x.item]! - ids[y.item]!).map(({ item, score, because, source }) => ({ item, score, because, source }));
}

/** Up to `limit` entries for a shopper: forYouScores's candidates, then the popular items (most viewed where the
 * shopper only viewed, most bought otherwise), every one passing `filter`; never an item of the history, nor its family. */
export function forYou(recommender: Recommender, history: readonly ShopperEvent[], limit: number, filter: RecommendationFilterModel | null, options: ForYouOptions = {}): ForYouEntryModel[] {
  const { model, catalog } = recommender;
  const seen = new Set<number>();
  for (const event of history) seen.add(event.itemId);
  const seenFamilies = new Set<number>();
  if (catalog !== null) for (const id of seen) seenFamilies.add(familyOfId(catalog, id));
  const picks = recommender.picks(limit, filter, (itemId, _, family) => seen.has(itemId) || seenFamilies.has(family));
  const because = new Map<number, number>();
  for (const c of forYouScores(model, history, options)) {
    because.set(model.items.idAt(c.item), c.because);
    if (picks.offer(c.item, c.score, 0, c.source)) break;
  }
  if (!picks.enough) recommender.offerPopular(history.some((e) => e.kind === KIND_PURCHASE) ? 'NEXT_BEST_PRODUCT' : 'POST_BROWSE', filter, picks);
  return picks.entries().map((e) => ({ ...e, because: e.source === 'POPULAR' ? null : because.get(e.itemId) ?? null }));
}

function familyOfId(catalog: Catalog, id: number): number {
  const item = catalog.get(id);
  return item === undefined ? id : familyOf(item);
}
