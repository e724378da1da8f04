import type {
  RecommendationConnectionResolvers,
  RecommendationEdgeResolvers,
} from '../../../__generated__/resolvers-types.js';
import type { ItemModel } from '../../../ports/backend.js';
import type { GatewayContext } from '../context.js';
import { notFound } from '../../../errors.js';
import { charged, served } from './helpers.js';

async function mustLoad(context: GatewayContext, id: number): Promise<ItemModel> {
  const item = await context.loaders.items.load(id);
  if (!item) throw notFound(`No item with itemId ${id}`);
  return charged(context, item);
}

export const RecommendationConnection: RecommendationConnectionResolvers = {
  anchor: (list, _, context) => mustLoad(context, list.anchorId),
  edges: (list) => list.entries,
  nodes: (list, _, context) => Promise.all(list.entries.map((e) => mustLoad(context, e.itemId))),
  trackingId: (list, _, context) => list.trackingId ?? served(context, list).trackingId!,
  variant: (list, _, context) => list.variant ?? served(context, list).variant!,
};

export const RecommendationEdge: RecommendationEdgeResolvers = {
  node: (entry, _, context) => mustLoad(context, entry.itemId),
};
