import { FILTERED_SCAN_LIMIT } from '../config/limits.js';
import { notFound } from '../errors.js';
import { isInStock } from '../model/itemRecord.js';
import { underCategory } from '../model/itemLists.js';
import { isExcluded } from '../model/recommendationFilter.js';
import type { ItemModel, RecommendationEntryModel, RecommendationFilterModel, RecommendationKind, RecommendationSource } from '../ports/backend.js';
import { categoryOf, departmentOf, familyOf } from './catalog.js';
import type { Catalog } from './catalog.js';
import { ConditionColumns } from './conditionColumns.js';
import { KeptForConditions, VERDICT_PAGE } from './keptForConditions.js';
import type { Passing } from './keptForConditions.js';
import { byPopularity } from './model.js';
import type { RecModel } from './model.js';
import { neighboursOf } from './neighbours.js';
import type { Neighbours } from './neighbours.js';
import type { ItemIndex } from './interners.js';

/** At most this many entries a list (recommendations.md). */
export const MAX_RECOMMENDATIONS = 10;

/** Items looked at per fallback tier for in-stock ones, to keep a lookup in microseconds. The last tier goes on until
 * the list is full, in stock or not. */
export const SCAN_LIMIT = 1000;
export { FILTERED_SCAN_LIMIT };
/** Ranked lists of filters' categories and brands, of their passing items, and filters' verdicts, kept at most, and
 * their entries in all: past either, all are dropped (clients choose the filters). */
const MAX_KEPT_LISTS = 10_000;
const MAX_KEPT_ENTRIES = 4_000_000;
/** Items passing a filter's conditions kept at most, per list: the rest is walked again when a lookup needs it. */
const MAX_PASSING = 500;

/** Whether a candidate is left out of a list whatever the filter: the anchor and its family, a shopper's items. */
type Skip = (itemId: number, item: ItemModel | undefined, family: number) => boolean;

type Offer = (i: number, s: number | null, e: number, src: RecommendationSource) => boolean;

/** A list being filled as every list is: items with a record passing the filter, one per family, none that `skip`
 * names (the anchor, its family and variants; a shopper's items), in-stock items first. */
export class Picks {
  private readonly families = new Set<number>();
  private readonly inStock: RecommendationEntryModel[] = [];
  private readonly outOfStock: RecommendationEntryModel[] = [];
  private readonly excludes: boolean;

  constructor(
    private readonly catalog: Catalog | null,
    private readonly items: ItemIndex,
    readonly limit: number,
    private readonly filter: RecommendationFilterModel | null,
    /** The filter's conditions' verdicts; null without conditions or without a catalogue. */
    readonly kept: KeptForConditions | null,
    private readonly skip: Skip,
  ) {
    this.excludes = filter !== null && filter.excludeItemIds.length > 0;
  }

  /** Takes a candidate (a model index); true when the list is full. */
  offer(index: number, score: number | null, evidence: number, source: RecommendationSource): boolean {
    const itemId = this.items.idAt(index);
    const { catalog, filter, kept } = this;
    // a filter's items known to fail are left before their records are fetched: most candidates, when few pass
    if ((this.excludes && isExcluded(filter!, itemId)) || kept?.fails(index) === true) return false;
    let available = true;
    let family = itemId;
    let item: ItemModel | undefined;
    if (catalog !== null) {
      item = catalog.get(itemId);
      if (item === undefined || (kept !== null && !kept.passes(index, filter!, item))) return false;
      family = familyOf(item);
      available = isInStock(item);
    } else if (filter?.hasConditions === true) return false;
    if (this.skip(itemId, item, family) || this.families.has(family)) return false;
    this.families.add(family);
    const entry: RecommendationEntryModel = { rank: 0, itemId, score, evidence, source };
    if (available) this.inStock.push(entry);
    else if (this.outOfStock.length < this.limit) this.outOfStock.push(entry);
    return this.inStock.length >= this.limit;
  }

  get enough(): boolean {
    return this.inStock.length + this.outOfStock.length >= this.limit;
  }

  /** The list, ranked from 1. */
  entries(): RecommendationEntryModel[] {
    const entries = this.inStock.concat(this.outOfStock).slice(0, this.limit);
    entries.forEach((e, i) => (e.rank = i + 1));
    return entries;
  }
}

/** Lookups on a built model: the neighbours, then category, department and global popularity to fill up to 10. Never
 * the anchor or its family; one item per family; in-stock items first. */
export class Recommender {
  private readonly categoryLists = new Map<string, Int32Array>();
  private readonly scopes = new Map<string, Int32Array>();
  private readonly kept = new Map<string, KeptForConditions>();
  private keptLists = 0;
  private keptEntries = 0;
  private columns: ConditionColumns | null = null;

  constructor(readonly model: RecModel, readonly catalog: Catalog | null) {}

  /** Up to `limit` entries for an anchor, each passing `filter` if given. With a catalogue, NOT_FOUND for an anchor it
   * does not know; without one (evaluation on ids), an unknown anchor gets popular items. */
  recommend(kind: RecommendationKind, anchorId: number, limit = MAX_RECOMMENDATIONS, filter: RecommendationFilterModel | null = null): RecommendationEntryModel[] {
    const catalog = this.catalog;
    const anchor = catalog?.get(anchorId);
    if (catalog !== null && anchor === undefined) throw notFound(`No item with itemId ${anchorId}`);
    const items = this.model.items;
    const anchorIndex = items.indexOf(anchorId);
    const anchorFamily = anchor === undefined ? anchorId : familyOf(anchor);
    const anchorVariants = anchor?.variants ?? null;
    const skip = (itemId: number, item: ItemModel | undefined, family: number): boolean =>
      itemId === anchorId || (item !== undefined && (family === anchorFamily || anchorVariants?.includes(itemId) === true || item.variants?.includes(anchorId) === true || item.variants?.includes(anchorFamily) === true));
    const picks = this.picks(limit, filter, skip);
    const offer: Offer = (index, score, evidence, source) => picks.offer(index, score, evidence, source);
    const enough = (): boolean => picks.enough;
    if (!this.fromNeighbours(kind, anchorIndex, offer)) {
      if (filter === null) this.fromFallbacks(kind, anchor, offer, enough);
      else this.fromFilteredFallbacks(kind, anchor, filter, picks.kept, offer, enough);
    }
    return picks.entries();
  }

  /** A list to fill under `filter`, leaving out what `skip` names; its conditions' verdicts are the ones this keeps. */
  picks(limit: number, filter: RecommendationFilterModel | null, skip: Skip): Picks {
    // the conditions are checked on records: without a catalogue, no item passes them
    const kept = filter === null || !filter.hasConditions || this.catalog === null ? null : this.keptFor(filter);
    return new Picks(this.catalog, this.model.items, limit, filter, kept, skip);
  }

  /** Offers the popular items of `kind`, filtered as a list's last fill is, until `picks` has enough: the fill of a
   * list anchored on no item. */
  offerPopular(kind: RecommendationKind, filter: RecommendationFilterModel | null, picks: Picks): void {
    const offer: Offer = (index, score, evidence, source) => picks.offer(index, score, evidence, source);
    const enough = (): boolean => picks.enough;
    if (filter === null) this.fromFallbacks(kind, undefined, offer, enough);
    else this.fromFilteredFallbacks(kind, undefined, filter, picks.kept, offer, enough);
  }

  /** The anchor's neighbours merged by score with its prior list (see Neighbours.priorStart): items that compete by the
   * prior alone, from partner categories, its own category, or global popularity. */
  private fromNeighbours(kind: RecommendationKind, anchorIndex: number, offer: Offer): boolean {
    if (anchorIndex < 0) return false;
    this.model.refresh?.(kind === 'POST_BROWSE' ? 'postBrowse' : 'nextBest', anchorIndex);
    const n: Neighbours = kind === 'POST_BROWSE' ? this.model.postBrowse : this.model.nextBest;
    const source: RecommendationSource = kind === 'POST_BROWSE' ? 'CO_VIEW' : 'CO_PURCHASE';
    const categories = this.model.category;
    const category = categories === null ? -1 : categories[anchorIndex]!;
    const { item, score, evidence, from, to: end } = neighboursOf(n, anchorIndex);
    let i = from;
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
    if (categoryPath === null) list = this.popularList(kind);
    else if (this.catalog === null) return [];
    else list = this.underPath(kind, categoryPath);
    const out: { itemId: number; score: number }[] = [];
    for (let j = 0; j < list.length && out.length < first; j++) {
      const i = list[j]!;
      if (!(counts[i]! > 0)) break;
      const itemId = items.idAt(i);
      if (this.catalog === null || this.catalog.has(itemId)) out.push({ itemId, score: counts[i]! });
    }
    return out;
  }

  /** The first `first` items under `categoryPath`, most popular for the kind first, those without events
   * included (by the other count, then id): the order a filtered lookup's fill walks. '' is every item. */
  rankedUnder(kind: RecommendationKind, categoryPath: string, first: number): number[] {
    if (this.catalog === null) return [];
    const list = categoryPath === '' ? this.popularList(kind) : this.underPath(kind, categoryPath);
    const out: number[] = [];
    for (let j = 0; j < list.length && out.length < first; j++) out.push(this.model.items.idAt(list[j]!));
    return out;
  }

  private fromFallbacks(kind: RecommendationKind, anchor: ItemModel | undefined, offer: Offer, enough: () => boolean): boolean {
    if (anchor !== undefined) {
      const category = categoryOf(anchor);
      if (category !== null && this.scan(this.ranked(kind, category, (c) => c.category(category)), 'CATEGORY', offer)) return true;
      const department = departmentOf(anchor);
      if (department !== null && this.scan(this.ranked(kind, department, (c) => c.department(department)), 'DEPARTMENT', offer)) return true;
    }
    return this.scan(kind === 'POST_BROWSE' ? this.model.popularViewed : this.model.popularBought, 'POPULAR', offer, enough);
  }

  private scan(list: Int32Array, source: RecommendationSource, offer: Offer, enough?: () => boolean, max = Infinity): boolean {
    const end = Math.min(list.length, SCAN_LIMIT);
    let j = 0;
    for (; j < end; j++) if (offer(list[j]!, null, 0, source)) return true;
    if (enough === undefined) return false;
    const last = Math.min(list.length, max);
    for (; j < last && !enough(); j++) if (offer(list[j]!, null, 0, source)) return true;
    return false;
  }

  /** The fills of a filtered lookup, as fromFallbacks but from each tier's items passing the filter (kept per filter
   * and tier); a tier whose items all fail the filter's category is skipped, and the last tier is the items of the
   * filter's category or brands where it names them. */
  private fromFilteredFallbacks(kind: RecommendationKind, anchor: ItemModel | undefined, filter: RecommendationFilterModel, kept: KeptForConditions | null, offer: Offer, enough: () => boolean): boolean {
    const path = filter.categoryPath;
    const tier = (key: string, ids: (catalog: Catalog) => readonly number[], source: RecommendationSource): boolean => {
      if (kept === null) return this.scan(this.ranked(kind, key, ids), source, offer);
      return this.offerPassing(this.passingIn(kept, `${kind}:${key}`, filter, () => this.ranked(kind, key, ids), SCAN_LIMIT), source, offer);
    };
    if (anchor !== undefined) {
      const category = categoryOf(anchor);
      // a leaf category's items share the anchor's categoryPath: all pass the filter's category or none does
      const leafPasses = path === null || (category !== null && category.startsWith('p:') && underCategory(anchor.categoryPath, path));
      if (category !== null && leafPasses && tier(category, (c) => c.category(category), 'CATEGORY')) return true;
      const department = departmentOf(anchor);
      if (department !== null && department.startsWith('p:')) {
        const name = department.slice(2);
        if (path === null || path === name) {
          if (tier(department, (c) => c.department(department), 'DEPARTMENT')) return true;
        } else if (underCategory(path, name)) {
          // the filter's category lies in the anchor's department: its passing items are the department's
          return this.offerPassing(this.passing(kind, filter, kept!), 'DEPARTMENT', offer, enough);
        }
      } else if (department !== null && path === null && tier(department, (c) => c.department(department), 'DEPARTMENT')) return true;
    }
    if (kept === null) return this.scan(this.popularList(kind), 'POPULAR', offer, enough, FILTERED_SCAN_LIMIT);
    return this.offerPassing(this.passing(kind, filter, kept), 'POPULAR', offer, enough);
  }

  private popularList(kind: RecommendationKind): Int32Array {
    return kind === 'POST_BROWSE' ? this.model.popularViewed : this.model.popularBought;
  }

  /** Offers a list's passing items, then walks on past those kept where one family filled them. */
  private offerPassing({ list, from, resumeAt, end }: Passing, source: RecommendationSource, offer: Offer, enough?: () => boolean): boolean {
    if (this.scan(list, source, offer, enough)) return true;
    for (let j = resumeAt; j < end && enough?.() !== true; j++) if (offer(from[j]!, null, 0, source)) return true;
    return false;
  }

  /** The items passing the filter's conditions, most popular first, from its scope (else all). */
  private passing(kind: RecommendationKind, filter: RecommendationFilterModel, kept: KeptForConditions): Passing {
    return this.passingIn(kept, kind, filter, () => this.scope(kind, filter) ?? this.popularList(kind), FILTERED_SCAN_LIMIT);
  }

  /** The items of a list passing the filter's conditions, among its first `walk`, kept by `key` up to MAX_PASSING. */
  private passingIn(kept: KeptForConditions, key: string, filter: RecommendationFilterModel, listed: () => Int32Array, walk: number): Passing {
    let found = kept.passing.get(key);
    if (found === undefined) {
      const { items } = this.model;
      const catalog = this.catalog!;
      const columns = (this.columns ??= new ConditionColumns(items, catalog));
      const from = listed();
      const end = Math.min(from.length, walk);
      const list: number[] = [];
      let j = 0;
      for (; j < end && list.length < MAX_PASSING; j++) {
        const index = from[j]!;
        if (kept.fails(index) || !columns.mayPass(index, filter)) continue;
        const item = catalog.get(items.idAt(index));
        if (item !== undefined && kept.passes(index, filter, item)) list.push(index);
      }
      found = { list: Int32Array.from(list), from, resumeAt: j, end };
      this.keep(list.length);
      kept.passing.set(key, found);
    }
    return found;
  }

  /** What the Recommender keeps for the filter's conditions. */
  private keptFor(filter: RecommendationFilterModel): KeptForConditions {
    let kept = this.kept.get(filter.conditionsKey);
    if (kept === undefined) {
      this.keep(0);
      // a page of byte verdicts counts as a quarter of its items: the bound is in Int32Array entries
      kept = new KeptForConditions(this.model.items.size, () => this.keep(VERDICT_PAGE / 4, 0));
      this.kept.set(filter.conditionsKey, kept);
    }
    return kept;
  }

  /** The items passing the filter's category or brands (the fewer of the two), most popular first; null with neither. */
  private scope(kind: RecommendationKind, filter: RecommendationFilterModel): Int32Array | null {
    const { categoryPath, brandNames } = filter;
    if (categoryPath === null && brandNames.length === 0 || this.catalog === null) return null;
    // a category alone is the list popularItems ranks too: one copy, kept where category lists are
    if (brandNames.length === 0) return this.underPath(kind, categoryPath!);
    const key = `${kind}:${JSON.stringify([categoryPath, brandNames])}`;
    let list = this.scopes.get(key);
    if (list === undefined) {
      const catalog = this.catalog;
      const inCategory = categoryPath === null ? null : catalog.under(categoryPath);
      let ofBrands: number[] | null = null;
      if (brandNames.length > 0) {
        ofBrands = [];
        for (const brand of brandNames) for (const id of catalog.brand(brand)) ofBrands.push(id);
      }
      const ids = inCategory === null || (ofBrands !== null && ofBrands.length < inCategory.length) ? ofBrands! : inCategory;
      list = this.rank(kind, ids);
      this.keep(list.length);
      this.scopes.set(key, list);
    }
    return list;
  }

  /** Counts what a filter's list adds to the kept ones, dropping them all first where it would pass a bound. */
  private keep(entries: number, lists = 1): void {
    if (this.keptLists + lists > MAX_KEPT_LISTS || this.keptEntries + entries > MAX_KEPT_ENTRIES) {
      this.scopes.clear();
      this.kept.clear();
      this.keptLists = 0;
      this.keptEntries = 0;
    }
    this.keptLists += lists;
    this.keptEntries += entries;
  }

  /** The items whose categoryPath is `path` or lies under it, most popular first. */
  private underPath(kind: RecommendationKind, path: string): Int32Array {
    return this.ranked(kind, `under:${path}`, (c) => c.under(path));
  }

  private ranked(kind: RecommendationKind, key: string, ids: (catalog: Catalog) => readonly number[]): Int32Array {
    const cacheKey = `${kind}:${key}`;
    let list = this.categoryLists.get(cacheKey);
    if (list === undefined) {
      list = this.rank(kind, ids(this.catalog!));
      // none kept: the lists kept stay bounded by the catalogue's categories, whatever paths are asked for
      if (list.length > 0) this.categoryLists.set(cacheKey, list);
    }
    return list;
  }

  /** Item ids as model indexes, most popular for the kind first; ids the model lacks are left out. */
  private rank(kind: RecommendationKind, ids: readonly number[]): Int32Array {
    const { items, views, purchases } = this.model;
    const indexes = ids.map((id) => items.indexOf(id)).filter((i) => i >= 0);
    indexes.sort(kind === 'POST_BROWSE' ? byPopularity(views, purchases, items) : byPopularity(purchases, views, items));
    return Int32Array.from(indexes);
  }
}
