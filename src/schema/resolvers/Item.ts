import type { ItemResolvers } from '../../__generated__/resolvers-types.js';
import { isItem, loadRecommendations, loadRecommendedItems } from './helpers.js';

export const Item: ItemResolvers = {
  parent: async (item, _, context) => {
    if (!item.parentItemId || item.parentItemId === item.itemId) return null;
    return context.loaders.items.load(item.parentItemId);
  },

  variantItems: async (item, _, context) => {
    const ids = (item.variants ?? []).filter((id) => id !== item.itemId);
    const items = await context.loaders.items.loadMany(ids);
    return items.filter(isItem);
  },

  postBrowsedProducts: (item, { first }, context) => loadRecommendedItems(context, 'POST_BROWSE', item.itemId, first),

  productRecommendations: (item, { first }, context) =>
    loadRecommendedItems(context, 'NEXT_BEST_PRODUCT', item.itemId, first),

  recommendations: (item, { kind, first }, context) => loadRecommendations(context, kind, item.itemId, first),
};
