import { notFound } from '../errors.js';
import { isInStock } from '../model/itemRecord.js';
import type { ItemModel, RecommendationEntryModel, RecommendationKind, RecommendationSource } from '../ports/backend.js';
import { categoryOf, departmentOf, familyOf } from './catalog.js';
import type { Catalog } from './catalog.js';
import { byPopularity } from './model.js';
import type { RecModel } from './model.js';
import type { Neighbours } from './neighbours.js';

/** At most this many entries a list (recommendations.md). */
export const MAX_RECOMMENDATIONS = 10;

/** Items looked at per fallback tier for in-stock ones, to keep a lookup in microseconds. The last tier goes on until
 * the list is full, in stock or not. */
const SCAN_LIMIT = 1000;

/** Lookups on a built model: the neighbours, then category, department and global popularity to fill up to 10. Never
 * the anchor or its family; one item per family; in-stock items first. */
export class Recommender {
  private readonly categoryLists = new Map<string, Int32Array>();

  constructor(readonly model: RecModel, readonly catalog: Catalog | null) {}

  /** Up to `limit` entries for an anchor. With a catalogue, NOT_FOUND for an anchor it does not know; without one
   * (evaluation on ids), an unknown anchor gets popular items. */
  recommend(kind: RecommendationKind, anchorId: number, limit = MAX_RECOMMENDATIONS): RecommendationEntryModel[] {
    const catalog = this.catalog;
    const anchor = catalog?.get(anchorId);
    if (catalog !== null && anchor === undefined) throw notFound(`No item with itemId ${anchorId}`);
    const items = this.model.items;
    const anchorIndex = items.indexOf(anchorId);
    const anchorFamily = anchor === undefined ? anchorId : familyOf(anchor);
    const anchorVariants = anchor?.variants ?? null;
    const families = new Set<number>();
    const inStock: RecommendationEntryModel[] = [];
    const outOfStock: RecommendationEntryModel[] = [];

    /** Takes a candidate; true when the list is full. */
    const offer = (index: number, score: number | null, evidence: number, source: RecommendationSource): boolean => {
      const itemId = items.idAt(index);
      if (itemId === anchorId) return false;
      let available = true;
      let family = itemId;
      if (catalog !== null) {
        const item = catalog.get(itemId);
        if (item === undefined) return false;
        family = familyOf(item);
        if (family === anchorFamily || anchorVariants?.includes(itemId) === true || item.variants?.includes(anchorId) === true || item.variants?.includes(anchorFamily) === true) return false;
        available = isInStock(item);
      }
      if (families.has(family)) return false;
      families.add(family);
      const entry: RecommendationEntryModel = { rank: 0, itemId, score, evidence, source };
      if (available) inStock.push(entry);
      else if (outOfStock.length < limit) outOfStock.push(entry);
      return inStock.length >= limit;
    };

    const filled = (): number => inStock.length + outOfStock.length;
    if (!this.fromNeighbours(kind, anchorIndex, offer)) this.fromFallbacks(kind, anchor, offer, () => filled() >= limit);
    const entries = inStock.concat(outOfStock).slice(0, limit);
    entries.forEach((e, i) => (e.rank = i + 1));
    return entries;
  }

  /** The anchor's neighbours merged by score with its prior list (see Neighbours.priorStart): items that compete by the
   * prior alone, from partner categories, its own category, or global popularity. */
  private fromNeighbours(kind: RecommendationKind, anchorIndex: number, offer: (i: number, s: number | null, e: number, src: RecommendationSource) => boolean): boolean {
    if (anchorIndex < 0) return false;
    this.model.refresh?.(kind === 'POST_BROWSE' ? 'postBrowse' : 'nextBest', anchorIndex);
    const n: Neighbours = kind === 'POST_BROWSE' ? this.model.postBrowse : this.model.nextBest;
    const source: RecommendationSource = kind === 'POST_BROWSE' ? 'CO_VIEW' : 'CO_PURCHASE';
    const categories = this.model.category;
    const category = categories === null ? -1 : categories[anchorIndex]!;
    // A live model's re-ranked anchors (live.ts), else the built arrays (which an item that came
    // after the build is beyond).
    let item = n.item;
    let score = n.score;
    let evidence = n.evidence;
    let i = 0;
    let end = 0;
    const override = n.overrides?.get(anchorIndex);
    if (override !== undefined) {
      ({ item, score, evidence } = override);
      end = item.length;
    } else if (anchorIndex + 1 < n.start.length) {
      i = n.start[anchorIndex]!;
      end = n.start[anchorIndex + 1]!;
    }
    // The prior list of the anchor's category, else the global one (the last).
    const global = n.priorStart.length - 2;
    const list = category >= 0 && category < global && n.priorStart[category + 1]! > n.priorStart[category]! ? category : global;
    let j = list >= 0 ? n.priorStart[list]! : 0;
    const priorEnd = list >= 0 ? n.priorStart[list + 1]! : 0;
    // An anchor newer than a live model's last rebuild of the kind has no scale yet: no prior.
    const scale = anchorIndex < n.anchorScale.length ? n.anchorScale[anchorIndex]! : 0;
    const priorScore = (k: number): number => {
      const s = n.priorScore[k]! * scale;
      return list === global && category >= 0 && categories![n.priorItem[k]!] === category ? s * n.sameCategoryFactor : s;
    };
    let pending = j < priorEnd ? priorScore(j) : -Infinity;
    while (i < end || j < priorEnd) {
      // Ties to the neighbour: it has evidence.
      if (i < end && score[i]! >= pending) {
        if (offer(item[i]!, score[i]!, evidence[i]!, source)) return true;
        i++;
        continue;
      }
      const b = n.priorItem[j]!;
      const own = categories !== null && category >= 0 && categories[b] === category;
      if (offer(b, pending, 0, list === global ? 'POPULAR' : own ? 'CATEGORY' : source)) return true;
      j++;
      pending = j < priorEnd ? priorScore(j) : -Infinity;
    }
    return false;
  }

  /** Up to `first` items, with their counts, most bought (most viewed for POST_BROWSE) in the model's window, then by the other count,
   * then by id; only items with at least one such event, with a record, under `categoryPath` (null: any). */
  popular(kind: RecommendationKind, categoryPath: string | null, first: number): { itemId: number; score: number }[] {
    const { items, views, purchases } = this.model;
    const counts = kind === 'POST_BROWSE' ? views : purchases;
    let list: Int32Array;
    if (categoryPath === null) list = kind === 'POST_BROWSE' ? this.model.popularViewed : this.model.popularBought;
    else if (this.catalog === null) return [];
    else list = this.ranked(kind, `under:${categoryPath}`, (c) => c.under(categoryPath));
    const out: { itemId: number; score: number }[] = [];
    for (let j = 0; j < list.length && out.length < first; j++) {
      const i = list[j]!;
      if (!(counts[i]! > 0)) break;
      const itemId = items.idAt(i);
      if (this.catalog === null || this.catalog.has(itemId)) out.push({ itemId, score: counts[i]! });
    }
    return out;
  }

  private fromFallbacks(kind: RecommendationKind, anchor: ItemModel | undefined, offer: (i: number, s: number | null, e: number, src: RecommendationSource) => boolean, enough: () => boolean): boolean {
    if (anchor !== undefined) {
      const category = categoryOf(anchor);
      if (category !== null && this.scan(this.ranked(kind, category, (c) => c.category(category)), 'CATEGORY', offer)) return true;
      const department = departmentOf(anchor);
      if (department !== null && this.scan(this.ranked(kind, department, (c) => c.department(department)), 'DEPARTMENT', offer)) return true;
    }
    return this.scan(kind === 'POST_BROWSE' ? this.model.popularViewed : this.model.popularBought, 'POPULAR', offer, enough);
  }

  private scan(list: Int32Array, source: RecommendationSource, offer: (i: number, s: number | null, e: number, src: RecommendationSource) => boolean, enough?: () => boolean): boolean {
    const end = Math.min(list.length, SCAN_LIMIT);
    let j = 0;
    for (; j < end; j++) if (offer(list[j]!, null, 0, source)) return true;
    if (enough === undefined) return false;
    for (; j < list.length && !enough(); j++) if (offer(list[j]!, null, 0, source)) return true;
    return false;
  }

  private ranked(kind: RecommendationKind, key: string, ids: (catalog: Catalog) => readonly number[]): Int32Array {
    const cacheKey = `${kind}:${key}`;
    let list = this.categoryLists.get(cacheKey);
    if (list === undefined) {
      const { items, views, purchases } = this.model;
      const indexes = ids(this.catalog!).map((id) => items.indexOf(id)).filter((i) => i >= 0);
      indexes.sort(kind === 'POST_BROWSE' ? byPopularity(views, purchases, items) : byPopularity(purchases, views, items));
      list = Int32Array.from(indexes);
      // none kept: the lists kept stay bounded by the catalogue's categories, whatever paths are asked for
      if (list.length > 0) this.categoryLists.set(cacheKey, list);
    }
    return list;
  }
}
