import { passesConditions } from '../model/recommendationFilter.js';
import type { ItemModel, RecommendationFilterModel } from '../ports/backend.js';

/** The items of `from` passing a filter's conditions (its exclusions aside), in order, found up to `resumeAt`. */
export interface Passing {
  list: Int32Array;
  from: Int32Array;
  resumeAt: number;
  /** How far in `from` a lookup may look. */
  end: number;
}

/** Items a page of verdicts covers: pages are made as items are checked, so a filter asked on a few anchors of a
 * large catalogue costs a few pages, not one byte an item. */
export const PAGE_BITS = 10;
export const VERDICT_PAGE = 1 << PAGE_BITS;
const MASK = VERDICT_PAGE - 1;
const PASSES = 1;
const FAILS = 2;

/** What a Recommender keeps for one filter's conditions (its conditionsKey), whatever its exclusions: each item's
 * verdict by model index, so that an item is checked once a model however many lookups offer it, and the passing
 * items of the lists that fills walk, by kind and tier. */
export class KeptForConditions {
  readonly passing = new Map<string, Passing>();
  private readonly pages: (Uint8Array | undefined)[];

  /** `items`: the model's items now (it may grow); `onPage` is told of each page made, for the Recommender's bound. */
  constructor(items: number, private readonly onPage: () => void) {
    this.pages = new Array<Uint8Array | undefined>((items >>> PAGE_BITS) + 1).fill(undefined);
  }

  /** Whether the item at a model index is known to fail: what a lookup asks before it fetches the item's record. */
  fails(index: number): boolean {
    const page = this.pages[index >>> PAGE_BITS];
    return page !== undefined && page[index & MASK] === FAILS;
  }

  /** Whether the item at a model index, whose record is `item`, passes the filter's conditions. */
  passes(index: number, filter: RecommendationFilterModel, item: ItemModel): boolean {
    let page = this.pages[index >>> PAGE_BITS];
    if (page === undefined) {
      page = new Uint8Array(VERDICT_PAGE);
      this.pages[index >>> PAGE_BITS] = page;
      this.onPage();
    }
    const known = page[index & MASK]!;
    if (known !== 0) return known === PASSES;
    const passes = passesConditions(filter, item);
    page[index & MASK] = passes ? PASSES : FAILS;
    return passes;
  }
}
