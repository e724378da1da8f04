import type {
  ItemModel, PrincipalModel, RecommendationEntryModel, RecommendationKind, RecommendationListModel,
} from '../../ports/backend.js';
import type { GatewayContext } from '../context.js';
import { badUserInput, unauthenticated } from '../../errors.js';
import { MAX_RECOMMENDATIONS } from '../../ports/limits.js';

/** `items` after charging them to the request's answer budget (AnswerBudget: QUERY_TOO_COMPLEX past it). */
export function charged<T extends ItemModel | null | readonly (ItemModel | null | Error)[]>(context: GatewayContext, items: T): T {
  context.answerBudget?.charge(items);
  return items;
}

export function requirePrincipal(context: GatewayContext): PrincipalModel {
  if (!context.principal) throw unauthenticated();
  return context.principal;
}

/** `first` as a list's length (10 when not given), or null where checkFirst refuses it. */
function lengthOf(first: number | null | undefined): number | null {
  const n = first ?? MAX_RECOMMENDATIONS;
  return Number.isInteger(n) && n >= 1 && n <= MAX_RECOMMENDATIONS ? n : null;
}

export function checkFirst(first: number | null | undefined): number {
  const n = lengthOf(first);
  if (n === null) throw badUserInput(`first must be from 1 to ${MAX_RECOMMENDATIONS}`, 'first');
  return n;
}

/**
 * A recommendation list cut to `first`, keeping only the items that can be returned (an id the
 * catalogue no longer knows is dropped, and the ranks close up). An item that could not be
 * loaded (the upstream failed) is an error, not a drop: whether it belongs in the first `first`
 * is unknown, and a silently shorter list would be cached and served as if complete.
 */
export async function loadRecommendations(
  context: GatewayContext,
  kind: RecommendationKind,
  anchorId: number,
  first: number | null | undefined,
): Promise<RecommendationListModel> {
  return (await recommendationsWithItems(context, kind, anchorId, first)).list;
}

/** The items of loadRecommendations' list, in its order: loaded once, not asked of the loader again. */
export async function loadRecommendedItems(
  context: GatewayContext,
  kind: RecommendationKind,
  anchorId: number,
  first: number | null | undefined,
): Promise<ItemModel[]> {
  const { items } = await recommendationsWithItems(context, kind, anchorId, first);
  context.itemLists?.push(items);
  return charged(context, items);
}

async function recommendationsWithItems(
  context: GatewayContext,
  kind: RecommendationKind,
  anchorId: number,
  first: number | null | undefined,
): Promise<{ list: RecommendationListModel; items: ItemModel[] }> {
  const n = checkFirst(first);
  const { loaders } = context;
  const list = await loaders.recommendations.load(kind, anchorId);
  // the records the list came with (the embedded backend's and the REST interface's), else by id
  return cut(list, loaders.itemsOf(list) ?? (await loaders.items.loadMany(list.entries.map((e) => e.itemId))), n);
}

/**
 * loadRecommendedItems' answer at once, with no promise, where the backend has the list and its
 * records at hand (the embedded backend: Loaders.listNow); undefined where not, or where anything
 * would fail (a bad `first`, an unknown anchor): then loadRecommendedItems answers, and fails, as
 * before. A resolver returns this ?? that, so that graphql-jit runs a query of such fields
 * without a promise job (issue 22: the uncached lookup).
 */
export function recommendedItemsNow(
  context: GatewayContext,
  kind: RecommendationKind,
  anchorId: number,
  first: number | null | undefined,
): ItemModel[] | undefined {
  const items = recommendationsNow(context, kind, anchorId, first)?.items;
  if (items === undefined) return undefined;
  context.itemLists?.push(items);
  return charged(context, items);
}

/** loadRecommendations' answer at once where it can be (as recommendedItemsNow). */
export function recommendationListNow(
  context: GatewayContext,
  kind: RecommendationKind,
  anchorId: number,
  first: number | null | undefined,
): RecommendationListModel | undefined {
  return recommendationsNow(context, kind, anchorId, first)?.list;
}

function recommendationsNow(
  context: GatewayContext,
  kind: RecommendationKind,
  anchorId: number,
  first: number | null | undefined,
): { list: RecommendationListModel; items: ItemModel[] } | undefined {
  const n = lengthOf(first);
  if (n === null) return undefined; // checkFirst's refusal, on the loader's path
  const list = context.loaders.listNow(kind, anchorId);
  const items = list === undefined ? null : context.loaders.itemsOf(list);
  return items === null ? undefined : cut(list!, items, n);
}

/**
 * A list cut to its first `n` entries whose items exist, the ranks closed up over any dropped;
 * `loaded` its items in the order of its entries. An item that failed to load is thrown.
 */
function cut(list: RecommendationListModel, loaded: readonly (ItemModel | null | Error)[], n: number): { list: RecommendationListModel; items: ItemModel[] } {
  const entries: RecommendationEntryModel[] = [];
  const items: ItemModel[] = [];
  for (let i = 0; i < list.entries.length && entries.length < n; i++) {
    const item = loaded[i];
    if (item instanceof Error) throw item;
    if (isItem(item)) {
      const entry = list.entries[i]!;
      // a copy only where a dropped item moved the rank (the list's entries are not changed)
      entries.push(entry.rank === entries.length + 1 ? entry : { ...entry, rank: entries.length + 1 });
      items.push(item);
    }
  }
  return { list: { anchorId: list.anchorId, kind: list.kind, entries }, items };
}

/** A loaded item, not a miss (null) nor a failed load (an Error from loadMany). */
export const isItem = (value: ItemModel | null | Error | undefined): value is ItemModel =>
  value !== null && value !== undefined && !(value instanceof Error);

/**
 * The items that exist, in order, leaving out unknown ids (null); throws the first failed load,
 * so an upstream failure surfaces as an error (and the answer is never cached as public)
 * instead of as a shorter list.
 */
export function existingItems(values: readonly (ItemModel | null | Error)[]): ItemModel[] {
  const failed = values.find((value) => value instanceof Error);
  if (failed !== undefined) throw failed;
  return values.filter(isItem);
}
