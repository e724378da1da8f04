import { underCategory } from '../../model/itemLists.js';
import { isInStock } from '../../model/itemRecord.js';
import { passesFilter } from '../../model/recommendationFilter.js';
import type { ItemModel, RecommendationEntryModel, RecommendationFilterModel, RecommendationKind, RecommendationListModel, RecommendationSource } from '../../ports/backend.js';
import { familyOf } from '../../recommender/index.js';
import { MAX_RECOMMENDATIONS, SCAN_LIMIT } from '../../recommender/index.js';

/** The tiers a filtered list too short is filled from, as the model's: the items of the anchor's category,
 * then of its department, where the filter's category holds them; then of the filter's category (else of
 * all items, ''), each by popularity, with the source the model gives each. */
export function fillPaths(anchor: ItemModel, filter: RecommendationFilterModel): [string, RecommendationSource][] {
  const path = filter.categoryPath;
  const leaf = anchor.categoryPath ?? null;
  const department = leaf?.split('/')[0] ?? null;
  const paths: [string, RecommendationSource][] = [];
  if (leaf !== null && (path === null || underCategory(leaf, path))) paths.push([leaf, 'CATEGORY']);
  if (department !== null && department !== leaf && (path === null || path === department)) paths.push([department, 'DEPARTMENT']);
  if (path === null) paths.push(['', 'POPULAR']);
  else if (path !== leaf && path !== department) paths.push([path, department !== null && underCategory(path, department) ? 'DEPARTMENT' : 'POPULAR']);
  return paths;
}

/** A filtered list picked as the model picks it: candidates passing the filter, one per family, never
 * the anchor's, in stock first; `done` says when a tier may stop. */
export class FilteredPick {
  private readonly families: Set<number>;
  private readonly inStock: [RecommendationEntryModel, ItemModel][] = [];
  private readonly outOfStock: [RecommendationEntryModel, ItemModel][] = [];

  constructor(private readonly anchor: ItemModel, private readonly filter: RecommendationFilterModel) {
    this.families = new Set([familyOf(anchor)]);
  }

  /** Full of items in stock; the last tier, past its first SCAN_LIMIT (`at`: the position in it), as soon as it has ten in all. */
  done(last = false, at = 0): boolean {
    return this.inStock.length >= MAX_RECOMMENDATIONS || (last && at >= SCAN_LIMIT && this.inStock.length + this.outOfStock.length >= MAX_RECOMMENDATIONS);
  }

  offer(entry: RecommendationEntryModel, item: ItemModel | null | undefined): void {
    const { anchor } = this;
    if (item === null || item === undefined || item.itemId === anchor.itemId || !passesFilter(this.filter, item.itemId, item)) return;
    const family = familyOf(item);
    if (this.families.has(family) || anchor.variants?.includes(item.itemId) === true || item.variants?.includes(anchor.itemId) === true) return;
    this.families.add(family);
    if (isInStock(item)) this.inStock.push([entry, item]);
    else if (this.outOfStock.length < MAX_RECOMMENDATIONS) this.outOfStock.push([entry, item]);
  }

  result(kind: RecommendationKind): RecommendationListModel {
    const kept = this.inStock.concat(this.outOfStock).slice(0, MAX_RECOMMENDATIONS);
    return { anchorId: this.anchor.itemId, kind, entries: kept.map(([e], i) => ({ ...e, rank: i + 1 })), items: kept.map(([, item]) => item), filter: this.filter };
  }
}

export const fillEntry = (itemId: number, source: RecommendationSource): RecommendationEntryModel => ({ rank: 0, itemId, score: null, evidence: 0, source });
