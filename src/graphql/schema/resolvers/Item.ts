import type { ItemResolvers } from '../../../__generated__/resolvers-types.js';
import { charged, existingItems, recommendationList, recommendedItems } from './helpers.js';

export const Item: ItemResolvers = {
  parent: async (item, _, context) => {
    if (!item.parentItemId || item.parentItemId === item.itemId) return null;
    return charged(context, await context.loaders.items.load(item.parentItemId));
  },

  variantItems: async (item, _, context) => {
    const ids = (item.variants ?? []).filter((id) => id !== item.itemId);
    // unknown variants are left out (the schema says so); variants that failed to load are an error
    return charged(context, existingItems(await context.loaders.items.loadMany(ids)));
  },

  postBrowsedProducts: (item, args, context) =>
    recommendedItems(context, 'POST_BROWSE', item.itemId, args),

  productRecommendations: (item, args, context) =>
    recommendedItems(context, 'NEXT_BEST_PRODUCT', item.itemId, args),

  recommendations: (item, { kind, ...args }, context) =>
    recommendationList(context, kind, item.itemId, args),
};
