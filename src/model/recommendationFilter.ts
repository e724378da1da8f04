import { badUserInput } from '../errors.js';
import { parseCategoryPath, underCategory } from './itemLists.js';
import type { ItemModel, RecommendationFilterModel } from '../ports/backend.js';
import { isInStock } from './itemRecord.js';

/** At most this many excludeItemIds a filter (issue 45's contract). */
export const MAX_EXCLUDED_ITEMS = 100;
/** At most this many brandNames a filter, and this many characters a name or a categoryPath. */
export const MAX_BRAND_NAMES = 100;
export const MAX_FILTER_TEXT = 1000;
/** Brand names of items a filter remembers its answer for, at most. */
const MAX_BRAND_NAMES_SEEN = 10_000;

/** A filter as a client gives it (GraphQL's RecommendationFilter, or the REST parameters once parsed). */
export interface RecommendationFilterInput {
  excludeItemIds?: readonly number[] | null;
  inStockOnly?: boolean | null;
  minPrice?: number | null;
  maxPrice?: number | null;
  categoryPath?: string | null;
  brandNames?: readonly string[] | null;
}

function price(value: number | null | undefined, field: string): number | null {
  if (value === null || value === undefined) return null;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) throw badUserInput(`${field} must be a number of at least 0`, field);
  return value;
}

/** The brand as filters compare it: case does not matter, as shops spell brands inconsistently. */
export const brandKey = (name: string): string => name.trim().toLowerCase();

/** The values ascending (strings as sort() orders them), without repeats: an insertion sort, as a filter has few. */
function sortedDistinct<T extends number | string>(values: readonly T[]): T[] {
  const out = new Array<T>(values.length);
  let n = 0;
  for (const id of values) {
    let j = n;
    while (j > 0 && out[j - 1]! > id) j--;
    if (j > 0 && out[j - 1] === id) continue;
    for (let k = n; k > j; k--) out[k] = out[k - 1]!;
    out[j] = id;
    n++;
  }
  out.length = n;
  return out;
}

/** Checks and normalises a filter; null when it sets no condition (an empty list sets none). BAD_USER_INPUT otherwise. */
export function toRecommendationFilter(input: RecommendationFilterInput | null | undefined): RecommendationFilterModel | null {
  if (input === null || input === undefined) return null;
  const excludes = input.excludeItemIds ?? [];
  if (excludes.length > MAX_EXCLUDED_ITEMS) throw badUserInput(`At most ${MAX_EXCLUDED_ITEMS} excludeItemIds, got ${excludes.length}`, 'excludeItemIds');
  const minPrice = price(input.minPrice, 'minPrice');
  const maxPrice = price(input.maxPrice, 'maxPrice');
  if (minPrice !== null && maxPrice !== null && minPrice > maxPrice) throw badUserInput(`minPrice (${minPrice}) must not exceed maxPrice (${maxPrice})`, 'minPrice');
  const categoryPath = parseCategoryPath(input.categoryPath);
  const brands = input.brandNames ?? [];
  if (brands.length > MAX_BRAND_NAMES) throw badUserInput(`At most ${MAX_BRAND_NAMES} brandNames, got ${brands.length}`, 'brandNames');
  const brandNames = sortedDistinct(brands.map((name) => {
    const key = name.length > MAX_FILTER_TEXT ? '' : brandKey(name);
    if (key === '') throw badUserInput(`Each of brandNames must be 1 to ${MAX_FILTER_TEXT} characters, not blank`, 'brandNames');
    return key;
  }));
  const excludeItemIds = sortedDistinct(excludes);
  const inStockOnly = input.inStockOnly === true;
  if (excludeItemIds.length === 0 && !inStockOnly && minPrice === null && maxPrice === null && categoryPath === null && brandNames.length === 0) return null;
  // JSON of [inStockOnly as 0 or 1, minPrice, maxPrice, categoryPath, brandNames], a number's JSON being its String
  const conditionsKey = `[${inStockOnly ? 1 : 0},${String(minPrice)},${String(maxPrice)},${JSON.stringify(categoryPath)},${JSON.stringify(brandNames)}]`;
  const hasConditions = inStockOnly || minPrice !== null || maxPrice !== null || categoryPath !== null || brandNames.length > 0;
  return {
    key: `${excludeItemIds.join(',')}${conditionsKey}`, conditionsKey, hasConditions,
    excludeItemIds, inStockOnly, minPrice, maxPrice, categoryPath, brandNames, brandsSeen: new Map(),
  };
}

/** Whether the filter excludes the item: a binary search of its few sorted ids, no Set made per request. */
export function isExcluded(filter: RecommendationFilterModel, itemId: number): boolean {
  const ids = filter.excludeItemIds;
  let lo = 0;
  let hi = ids.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const id = ids[mid]!;
    if (id === itemId) return true;
    if (id < itemId) lo = mid + 1;
    else hi = mid - 1;
  }
  return false;
}

/** Whether the item passes every condition; `item` undefined (no record) passes only an exclusion. */
export function passesFilter(filter: RecommendationFilterModel, itemId: number, item: ItemModel | undefined): boolean {
  if (isExcluded(filter, itemId)) return false;
  if (!filter.hasConditions) return true;
  return item !== undefined && passesConditions(filter, item);
}

/** Whether the item passes every condition but the exclusions: what a list of passing items can be kept for. */
export function passesConditions(filter: RecommendationFilterModel, item: ItemModel): boolean {
  if (filter.inStockOnly && !isInStock(item)) return false;
  if (filter.minPrice !== null || filter.maxPrice !== null) {
    const p = item.salePrice;
    if (p === null || p === undefined || (filter.minPrice !== null && p < filter.minPrice) || (filter.maxPrice !== null && p > filter.maxPrice)) return false;
  }
  if (filter.categoryPath !== null && !underCategory(item.categoryPath, filter.categoryPath)) return false;
  if (filter.brandNames.length === 0) return true;
  const name = item.brandName;
  if (name === null || name === undefined) return false;
  let passes = filter.brandsSeen.get(name);
  if (passes === undefined) {
    passes = filter.brandNames.includes(brandKey(name));
    // a shop has few brand names: one lower-casing each, not one a candidate
    if (filter.brandsSeen.size < MAX_BRAND_NAMES_SEEN) filter.brandsSeen.set(name, passes);
  }
  return passes;
}

/** A price as the REST twins take it: digits and a fraction, never an exponent (String(1e-7) is "1e-7"). */
const decimal = (price: number): string => price.toLocaleString('en-US', { useGrouping: false, maximumFractionDigits: 20 });

/** The filter as the REST twins' query parameters (exclude, inStock, minPrice, maxPrice, category, brand). */
export function filterParameters(filter: RecommendationFilterModel): [string, string][] {
  const out: [string, string][] = [];
  if (filter.excludeItemIds.length > 0) out.push(['exclude', filter.excludeItemIds.join(',')]);
  if (filter.inStockOnly) out.push(['inStock', 'true']);
  if (filter.minPrice !== null) out.push(['minPrice', decimal(filter.minPrice)]);
  if (filter.maxPrice !== null) out.push(['maxPrice', decimal(filter.maxPrice)]);
  if (filter.categoryPath !== null) out.push(['category', filter.categoryPath]);
  for (const brand of filter.brandNames) out.push(['brand', brand]);
  return out;
}
