import type { Resolvers } from '../../../__generated__/resolvers-types.js';
import { ApiKey } from './ApiKey.js';
import { DateTimeScalar, ItemIdScalar } from '../scalars.js';
import { ForYouConnection, ForYouEdge } from './ForYou.js';
import { Item } from './Item.js';
import { Mutation } from './Mutation.js';
import { Query } from './Query.js';
import { RecommendationConnection, RecommendationEdge } from './Recommendation.js';
import { Viewer } from './Viewer.js';

export const resolvers: Resolvers = {
  ItemId: ItemIdScalar,
  DateTime: DateTimeScalar,
  Query,
  Mutation,
  Viewer,
  ApiKey,
  Item,
  RecommendationConnection,
  RecommendationEdge,
  ForYouConnection,
  ForYouEdge,
};
