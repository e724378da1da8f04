import type { ForYouConnectionResolvers, ForYouEdgeResolvers } from '../../../__generated__/resolvers-types.js';
import { upstreamRejected } from '../../../errors.js';
import { checkListFirst } from '../../../model/itemLists.js';
import { toRecommendationFilter } from '../../../model/recommendationFilter.js';
import type { RecommendationFilterInput } from '../../../model/recommendationFilter.js';
import { toShopper } from '../../../model/shopper.js';
import { RECS_SERVICE } from '../../../ports/backend.js';
import type { ForYouListModel } from '../../../ports/backend.js';
import type { GatewayContext } from '../context.js';
import { charged, existingItems, requirePrincipal } from './helpers.js';

export interface ForYouArgs {
  sessionId?: string | null;
  userId?: string | null;
  first?: number | null;
  filter?: RecommendationFilterInput | null;
}

/** Query.recommendedForYou: the list, its items loaded (records it came with first), items gone meanwhile left out. */
export async function recommendedForYou(context: GatewayContext, args: ForYouArgs): Promise<ForYouListModel> {
  requirePrincipal(context);
  const shopper = toShopper(args.sessionId, args.userId);
  const first = checkListFirst(args.first);
  const filter = toRecommendationFilter(args.filter);
  const recs = context.backend.recs;
  if (recs.forYou === undefined) throw upstreamRejected(RECS_SERVICE, 'the recommendations backend lacks lists for one shopper');
  const list = await recs.forYou(shopper, first, { signal: context.signal }, filter);
  if (list.items !== undefined) context.loaders.know(list.items);
  // counted once the list exists: a failed call is no impression
  const { trackingId, variant } = context.tracking.serve('FOR_YOU', { shopper: shopper.userId ?? shopper.sessionId! });
  const items = existingItems(await context.loaders.items.loadMany(list.entries.map((e) => e.itemId)));
  const known = new Set(items.map((item) => item.itemId));
  const entries = list.entries.filter((e) => known.has(e.itemId)).map((e, i) => (e.rank === i + 1 ? e : { ...e, rank: i + 1 }));
  return { ...list, entries, items: charged(context, items), trackingId, variant };
}

export const ForYouConnection: ForYouConnectionResolvers = {
  edges: (list) => list.entries,
  trackingId: (list) => list.trackingId!,
  variant: (list) => list.variant!,
  nodes: (list, _, context) => context.loaders.items.loadMany(list.entries.map((e) => e.itemId)).then(existingItems),
};

export const ForYouEdge: ForYouEdgeResolvers = {
  node: async (entry, _, context) => existingItems([await context.loaders.items.load(entry.itemId)])[0]!,
  because: async (entry, _, context) => (entry.because === null ? null : (await context.loaders.items.load(entry.because)) ?? null),
};
