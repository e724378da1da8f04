import { isInStock } from '../model/itemRecord.js';
import type { RecommendationFilterModel } from '../ports/backend.js';
import type { Catalog } from './catalog.js';
import type { ItemIndex } from './interners.js';
import { PAGE_BITS, VERDICT_PAGE } from './keptForConditions.js';

const MASK = VERDICT_PAGE - 1;

/** Each item's price and stock by model index, in pages made as items are first asked about: a filter never seen
 * walks these compact columns, and fetches the records of only the items whose price and stock pass it. */
export class ConditionColumns {
  /** The sale price; NaN without a record or a price, which no price condition passes. */
  private readonly prices: (Float64Array | undefined)[] = [];
  /** 1 where the item has a record and is in stock. */
  private readonly inStock: (Uint8Array | undefined)[] = [];
  /** Items each page holds: one the model interned since its page was made is checked on its record. */
  private readonly filled: number[] = [];

  constructor(private readonly items: ItemIndex, private readonly catalog: Catalog) {}

  /** Whether the item at a model index may pass the filter's conditions: false only where its price or stock fails. */
  mayPass(index: number, filter: RecommendationFilterModel): boolean {
    const { minPrice, maxPrice, inStockOnly } = filter;
    if (minPrice === null && maxPrice === null && !inStockOnly) return true;
    const p = index >>> PAGE_BITS;
    if (this.prices[p] === undefined) this.fill(p);
    if ((index & MASK) >= this.filled[p]!) return true;
    if (inStockOnly && this.inStock[p]![index & MASK] === 0) return false;
    if (minPrice === null && maxPrice === null) return true;
    const price = this.prices[p]![index & MASK]!;
    // NaN fails both comparisons: an item without a price fails any price condition
    return (minPrice === null || price >= minPrice) && (maxPrice === null || price <= maxPrice) && price === price;
  }

  private fill(page: number): void {
    const prices = new Float64Array(VERDICT_PAGE).fill(NaN);
    const inStock = new Uint8Array(VERDICT_PAGE);
    const from = page << PAGE_BITS;
    const to = Math.min(from + VERDICT_PAGE, this.items.size);
    for (let i = from; i < to; i++) {
      const item = this.catalog.get(this.items.idAt(i));
      if (item === undefined) continue;
      const price = item.salePrice;
      if (price !== null && price !== undefined) prices[i - from] = price;
      inStock[i - from] = isInStock(item) ? 1 : 0;
    }
    this.prices[page] = prices;
    this.inStock[page] = inStock;
    this.filled[page] = to - from;
  }
}
