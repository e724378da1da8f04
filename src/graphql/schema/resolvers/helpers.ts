import type {
  ItemModel, ItemRankingModel, PrincipalModel, RecommendationEntryModel, RecommendationFilterModel, RecommendationKind, RecommendationListModel,
} from '../../../ports/backend.js';
import { toRecommendationFilter } from '../../../model/recommendationFilter.js';
import type { RecommendationFilterInput } from '../../../model/recommendationFilter.js';
import type { GatewayContext } from '../context.js';
import { badUserInput, unauthenticated } from '../../../errors.js';
import { MAX_RECOMMENDATIONS } from '../../../config/limits.js';

export function charged<T extends ItemModel | null | readonly (ItemModel | null | Error)[]>(context: GatewayContext, items: T): T {
  context.answerBudget.charge(items);
  return items;
}

export function requirePrincipal(context: GatewayContext): PrincipalModel {
  if (!context.principal) throw unauthenticated();
  return context.principal;
}

export function checkFirst(first: number | null | undefined): number {
  const n = first ?? MAX_RECOMMENDATIONS;
  if (!Number.isInteger(n) || n < 1 || n > MAX_RECOMMENDATIONS) throw badUserInput(`first must be from 1 to ${MAX_RECOMMENDATIONS}`, 'first');
  return n;
}

type Listed = { list: RecommendationListModel; items: ItemModel[] };

/** What a list is asked with: how many, and the filter as the client sent it. */
export interface ListArgs {
  first?: number | null;
  filter?: RecommendationFilterInput | null;
}

/** A list cut to `first`, dropping unknown items, named and counted as served (an impression); without a
 * promise where the backend holds list and records. */
export function recommendationList(context: GatewayContext, kind: RecommendationKind, anchorId: number, args: ListArgs): RecommendationListModel | Promise<RecommendationListModel> {
  const listed = listedFor(context, kind, anchorId, checkFirst(args.first), toRecommendationFilter(args.filter));
  return 'list' in listed ? served(context, listed.list) : listed.then((found) => served(context, found.list));
}

/** Names the list and counts it as served, in the request's variant. */
export function served(context: GatewayContext, list: RecommendationListModel): RecommendationListModel {
  const { trackingId, variant } = context.tracking.serve(list.kind, list.anchorId);
  list.trackingId = trackingId;
  list.variant = variant;
  return list;
}

export function recommendedItems(context: GatewayContext, kind: RecommendationKind, anchorId: number, args: ListArgs): ItemModel[] | Promise<ItemModel[]> {
  const listed = listedFor(context, kind, anchorId, checkFirst(args.first), toRecommendationFilter(args.filter));
  return 'list' in listed ? charged(context, listed.items) : listed.then((found) => charged(context, found.items));
}

function listedFor(context: GatewayContext, kind: RecommendationKind, anchorId: number, n: number, filter: RecommendationFilterModel | null): Listed | Promise<Listed> {
  const { loaders } = context;
  const now = loaders.listNow(kind, anchorId, filter);
  const items = now === undefined ? null : loaders.itemsOf(now);
  if (items !== null) return cut(context, now!, items, n);
  return (async () => {
    const list = await loaders.recommendations.load(kind, anchorId, filter);
    return cut(context, list, loaders.itemsOf(list) ?? (await loaders.items.loadMany(list.entries.map((e) => e.itemId))), n);
  })();
}

/** Cuts to the first `n` entries whose items exist, in the request's variant's order, ranks closed up;
 * a failed load is thrown. */
function cut(context: GatewayContext, list: RecommendationListModel, loaded: readonly (ItemModel | null | Error)[], n: number): Listed {
  const entries: RecommendationEntryModel[] = [];
  const items: ItemModel[] = [];
  const byItem = new Map<number, ItemModel | null | Error | undefined>();
  const ranked = context.tracking.rank(list.entries);
  if (ranked !== list.entries) list.entries.forEach((entry, i) => byItem.set(entry.itemId, loaded[i]));
  for (let i = 0; i < ranked.length && entries.length < n; i++) {
    const item = ranked === list.entries ? loaded[i] : byItem.get(ranked[i]!.itemId);
    if (item instanceof Error) throw item;
    if (isItem(item)) {
      const entry = ranked[i]!;
      // copy only where a dropped item moved the rank: the list's entries are shared
      entries.push(entry.rank === entries.length + 1 ? entry : { ...entry, rank: entries.length + 1 });
      items.push(item);
    }
  }
  return { list: { anchorId: list.anchorId, kind: list.kind, entries }, items };
}

/** A trending or popular list's items, in order, through the item loader; items gone meanwhile are left out. */
export async function rankedItems(context: GatewayContext, ranking: Promise<ItemRankingModel>): Promise<ItemModel[]> {
  const list = await ranking;
  if (list.items !== undefined) context.loaders.know(list.items);
  return charged(context, existingItems(await context.loaders.items.loadMany(list.entries.map((e) => e.itemId))));
}

export const isItem = (value: ItemModel | null | Error | undefined): value is ItemModel =>
  value !== null && value !== undefined && !(value instanceof Error);

/** The existing items in order; a failed load throws, so an upstream failure is an error, never cached as public. */
export function existingItems(values: readonly (ItemModel | null | Error)[]): ItemModel[] {
  const failed = values.find((value) => value instanceof Error);
  if (failed !== undefined) throw failed;
  return values.filter(isItem);
}
