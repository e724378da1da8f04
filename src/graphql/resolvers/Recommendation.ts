import type {
  RecommendationConnectionResolvers,
  RecommendationEdgeResolvers,
} from '../../__generated__/resolvers-types.js';
import type { ItemModel } from '../../ports/backend.js';
import { notFound } from '../../errors.js';

async function mustLoad(load: (id: number) => Promise<ItemModel | null>, id: number): Promise<ItemModel> {
  const item = await load(id);
  if (!item) throw notFound(`No item with itemId ${id}`);
  return item;
}

export const RecommendationConnection: RecommendationConnectionResolvers = {
  anchor: (list, _, context) => mustLoad((id) => context.loaders.items.load(id), list.anchorId),
  edges: (list) => list.entries,
  nodes: (list, _, context) => Promise.all(list.entries.map((e) => mustLoad((id) => context.loaders.items.load(id), e.itemId))),
};

export const RecommendationEdge: RecommendationEdgeResolvers = {
  node: (entry, _, context) => mustLoad((id) => context.loaders.items.load(id), entry.itemId),
};
