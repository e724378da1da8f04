import type { QueryResolvers } from '../../../__generated__/resolvers-types.js';
import type { ItemModel } from '../../../ports/backend.js';
import { badUserInput, forbidden, notFound } from '../../../errors.js';
import { MAX_ITEM_IDS } from '../../../config/limits.js';
import { checkListFirst, listsLacking, parseCategoryPath } from '../../../model/itemLists.js';
import { recommendedForYou } from './ForYou.js';
import { readStats } from '../../../observability/attribution.js';
import { charged, rankedItems, recommendationList, recommendedItems, requirePrincipal } from './helpers.js';


export const Query: QueryResolvers = {
  viewer: (_, __, context) => context.principal,

  apiKeys: (_, { username, userDomain }, context) =>
    context.backend.keys.listKeys(
      requirePrincipal(context),
      username ? { username, domain: userDomain ?? null } : null,
      { signal: context.signal },
    ),

  item: async (_, { itemId }, context) => {
    requirePrincipal(context);
    const item = await context.loaders.items.load(itemId);
    if (!item) throw notFound(`No item with itemId ${itemId}`);
    return charged(context, item);
  },

  items: async (_, { itemIds }, context) => {
    requirePrincipal(context);
    if (itemIds.length > MAX_ITEM_IDS) throw badUserInput(`At most ${MAX_ITEM_IDS} itemIds a query`, 'itemIds');
    const items = charged(context, await context.loaders.items.loadMany(itemIds));
    // graphql-js turns an Error in a list into a null with its own error at that index
    return items.map((item, i) => item ?? notFound(`No item with itemId ${itemIds[i]}`)) as unknown as (ItemModel | null)[];
  },

  postBrowsedProducts: (_, { itemId, ...args }, context) => {
    requirePrincipal(context);
    return recommendedItems(context, 'POST_BROWSE', itemId, args);
  },

  productRecommendations: (_, { itemId, ...args }, context) => {
    requirePrincipal(context);
    return recommendedItems(context, 'NEXT_BEST_PRODUCT', itemId, args);
  },

  recommendations: (_, { itemId, kind, ...args }, context) => {
    requirePrincipal(context);
    return recommendationList(context, kind, itemId, args);
  },

  /** Counts of lists served and used (administrators only: the scope table gives it EVENTS_WRITE). */
  recommendationStats: (_, { since, until }, context) => {
    const principal = requirePrincipal(context);
    const { attribution } = context.tracking;
    if (attribution === null) throw forbidden('This gateway keeps no recommendation statistics');
    return readStats(attribution, context.backend.ingest, principal, since, until ?? null, { signal: context.signal });
  },

  /** The items rising most in the last day (the schema states the rule). */
  trendingItems: (_, { categoryPath, first }, context) => {
    requirePrincipal(context);
    const path = parseCategoryPath(categoryPath);
    const n = checkListFirst(first);
    const recs = context.backend.recs;
    if (recs.trending === undefined) throw listsLacking('trending');
    return rankedItems(context, recs.trending(path, n, { signal: context.signal }));
  },

  /** The items most bought (most viewed for POST_BROWSE) in the window. */
  popularItems: (_, { categoryPath, kind, first }, context) => {
    requirePrincipal(context);
    const path = parseCategoryPath(categoryPath);
    const n = checkListFirst(first);
    const recs = context.backend.recs;
    if (recs.popular === undefined) throw listsLacking('popular');
    return rankedItems(context, recs.popular(kind ?? 'NEXT_BEST_PRODUCT', path, n, { signal: context.signal }));
  },

  /** One shopper's list (schema/forYou.graphql states the rule). */
  recommendedForYou: (_, args, context) => recommendedForYou(context, args),
};
