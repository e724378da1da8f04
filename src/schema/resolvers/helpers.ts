import type { ItemModel, PrincipalModel, RecommendationKind, RecommendationListModel } from '../../backends/types.js';
import type { GatewayContext } from '../../context.js';
import { badUserInput, unauthenticated } from '../../errors.js';
import { recommendationKey } from '../../loaders/index.js';

export function requirePrincipal(context: GatewayContext): PrincipalModel {
  if (!context.principal) throw unauthenticated();
  return context.principal;
}

/** Both interfaces return at most 10 items. */
export const MAX_RECOMMENDATIONS = 10;

export function checkFirst(first: number | null | undefined): number {
  const n = first ?? MAX_RECOMMENDATIONS;
  if (!Number.isInteger(n) || n < 1 || n > MAX_RECOMMENDATIONS) {
    throw badUserInput(`first must be from 1 to ${MAX_RECOMMENDATIONS}`, 'first');
  }
  return n;
}

/**
 * A recommendation list cut to `first`, keeping only the items that can be returned (an id the
 * catalogue no longer knows is dropped, and the ranks close up).
 */
export async function loadRecommendations(
  context: GatewayContext,
  kind: RecommendationKind,
  anchorId: number,
  first: number | null | undefined,
): Promise<RecommendationListModel> {
  const n = checkFirst(first);
  const list = await context.loaders.recommendations.load(recommendationKey(kind, anchorId));
  const items = await context.loaders.items.loadMany(list.entries.map((e) => e.itemId));
  const entries = list.entries
    .filter((_, i) => isItem(items[i]))
    .slice(0, n)
    .map((entry, i) => ({ ...entry, rank: i + 1 }));
  return { anchorId: list.anchorId, kind: list.kind, entries };
}

export async function loadRecommendedItems(
  context: GatewayContext,
  kind: RecommendationKind,
  anchorId: number,
  first: number | null | undefined,
) {
  const list = await loadRecommendations(context, kind, anchorId, first);
  const items = await context.loaders.items.loadMany(list.entries.map((e) => e.itemId));
  return items.filter(isItem);
}

/** A loaded item, not a miss (null) nor a failed load (an Error from loadMany). */
export const isItem = (value: ItemModel | null | Error | undefined): value is ItemModel =>
  value !== null && value !== undefined && !(value instanceof Error);
