import { underCategory } from '../../model/itemLists.js';
import { isInStock } from '../../model/itemRecord.js';
import { passesFilter } from '../../model/recommendationFilter.js';
import type { ItemModel, RecommendationEntryModel, RecommendationFilterModel, RecommendationKind, RecommendationListModel, RecommendationSource } from '../../ports/backend.js';
import { familyOf, MAX_RECOMMENDATIONS, SCAN_LIMIT } from '../../recommender/index.js';

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

/** A list picked from records as the model's Picks picks: candidates passing the filter, one per family, none that
 * `skip` names, in stock first; `done` says when a tier may stop. */
export class RecordPick {
  private readonly families = new Set<number>();
  private readonly inStock: [RecommendationEntryModel, ItemModel][] = [];
  private readonly outOfStock: [RecommendationEntryModel, ItemModel][] = [];

  constructor(readonly limit: number, private readonly filter: RecommendationFilterModel | null, private readonly skip: (item: ItemModel, family: number) => boolean) {}

  /** Full of items in stock; the last tier, past its first SCAN_LIMIT (`at`: the position in it), as soon as it has `limit` in all. */
  done(last = false, at = 0): boolean {
    return this.inStock.length >= this.limit || (last && at >= SCAN_LIMIT && this.enough);
  }

  get enough(): boolean {
    return this.inStock.length + this.outOfStock.length >= this.limit;
  }

  /** Takes a candidate; true when the list is full of items in stock. */
  offer(entry: RecommendationEntryModel, item: ItemModel | null | undefined): boolean {
    if (item === null || item === undefined || (this.filter !== null && !passesFilter(this.filter, item.itemId, item))) return false;
    const family = familyOf(item);
    if (this.families.has(family) || this.skip(item, family)) return false;
    this.families.add(family);
    if (isInStock(item)) this.inStock.push([entry, item]);
    else if (this.outOfStock.length < this.limit) this.outOfStock.push([entry, item]);
    return this.inStock.length >= this.limit;
  }

  /** The list, ranked from 1, with its records. */
  picked(): { entries: RecommendationEntryModel[]; items: ItemModel[] } {
    const kept = this.inStock.concat(this.outOfStock).slice(0, this.limit);
    return { entries: kept.map(([e], i) => ({ ...e, rank: i + 1 })), items: kept.map(([, item]) => item) };
  }
}

/** An anchor's filtered list: never the anchor, its family or its variants. */
export class FilteredPick extends RecordPick {
  constructor(private readonly anchor: ItemModel, private readonly anchorFilter: RecommendationFilterModel) {
    const anchorFamily = familyOf(anchor);
    super(MAX_RECOMMENDATIONS, anchorFilter, (item, family) =>
      item.itemId === anchor.itemId || family === anchorFamily || anchor.variants?.includes(item.itemId) === true || item.variants?.includes(anchor.itemId) === true);
  }

  result(kind: RecommendationKind): RecommendationListModel {
    return { anchorId: this.anchor.itemId, kind, ...this.picked(), filter: this.anchorFilter };
  }
}

export const fillEntry = (itemId: number, source: RecommendationSource): RecommendationEntryModel => ({ rank: 0, itemId, score: null, evidence: 0, source });
