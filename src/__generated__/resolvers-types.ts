import type { GraphQLResolveInfo, GraphQLScalarType, GraphQLScalarTypeConfig } from 'graphql';
import type { ItemModel, ApiKeyModel, PrincipalModel, RecommendationListModel, RecommendationEntryModel, CreatedApiKeyModel } from '../ports/backend.js';
import type { GatewayContext } from '../graphql/context.js';
export type Maybe<T> = T | null;
export type InputMaybe<T> = Maybe<T>;
export type Exact<T extends { [key: string]: unknown }> = { [K in keyof T]: T[K] };
export type MakeOptional<T, K extends keyof T> = Omit<T, K> & { [SubKey in K]?: Maybe<T[SubKey]> };
export type MakeMaybe<T, K extends keyof T> = Omit<T, K> & { [SubKey in K]: Maybe<T[SubKey]> };
export type MakeEmpty<T extends { [key: string]: unknown }, K extends keyof T> = { [_ in K]?: never };
export type Incremental<T> = T | { [P in keyof T]?: P extends ' $fragmentName' | '__typename' ? T[P] : never };
export type RequireFields<T, K extends keyof T> = Omit<T, K> & { [P in K]-?: NonNullable<T[P]> };
/** All built-in and custom scalars, mapped to their actual values */
export type Scalars = {
  ID: { input: string; output: string; }
  String: { input: string; output: string; }
  Boolean: { input: boolean; output: boolean; }
  Int: { input: number; output: number; }
  Float: { input: number; output: number; }
  /** A point in time, as an ISO 8601 string in UTC (2026-11-22T02:24:48.000Z). */
  DateTime: { input: Date; output: Date | string; }
  /**
   * An item identifier: a positive integer of up to 16 digits (Walmart item ids reach ten digits,
   * past GraphQL's 32-bit Int). Sent and received as a JSON number; a string of digits is accepted
   * as input too. Exact up to 9007199254740991.
   */
  ItemId: { input: number; output: number; }
};

/** An API key's metadata. The key value itself is shown once, by createApiKey, and is never listed. */
export type ApiKey = {
  __typename?: 'ApiKey';
  /** When the key was created; null where the key service does not say. */
  createdAt?: Maybe<Scalars['DateTime']['output']>;
  /** When the key stops working; null for a key that does not expire. */
  expiresAt?: Maybe<Scalars['DateTime']['output']>;
  /** Identifier of the key (UUID). */
  id: Scalars['ID']['output'];
  /** About when the key last authenticated a request (updated at most once a minute); null if never or not known. */
  lastUsedAt?: Maybe<Scalars['DateTime']['output']>;
  /**
   * Name of the key: the one given at creation, or key#<n> where n is one more than the highest
   * such number the user has.
   */
  name: Scalars['String']['output'];
  /** Identifier of the owning user (UUID). */
  userId: Scalars['ID']['output'];
};

export type AuthMethod =
  /** An API key in the Authorization header (bare or after Bearer). */
  | 'API_KEY'
  /** User name and password in an Authorization: Basic header. */
  | 'PASSWORD';

export type CacheControlScope =
  | 'PRIVATE'
  | 'PUBLIC';

export type CreateApiKeyInput = {
  /** Days until the key expires (1 to 3650); the key never expires when omitted. */
  expiresInDays?: InputMaybe<Scalars['Int']['input']>;
  /**
   * Name of the key: 3 to 128 characters, a letter or digit first, then letters, digits and _ @ . - ~;
   * unique per user. Defaults to key#<n>.
   */
  name?: InputMaybe<Scalars['String']['input']>;
  /** Domain of that user. */
  userDomain?: InputMaybe<Scalars['String']['input']>;
  /**
   * User the key is created for; the authenticated user when omitted. Only an administrator may
   * create a key for another user.
   */
  username?: InputMaybe<Scalars['String']['input']>;
};

export type CreateApiKeyPayload = {
  __typename?: 'CreateApiKeyPayload';
  /** The new key's metadata. */
  apiKey: ApiKey;
  /** Identifier of the new key. */
  id: Scalars['ID']['output'];
  /** The key value, shown this once: send it as the Authorization header value. */
  key: Scalars['String']['output'];
  /** true on success. */
  ok: Scalars['Boolean']['output'];
};

export type DeleteApiKeyPayload = {
  __typename?: 'DeleteApiKeyPayload';
  /** Identifier of the deleted key. */
  id: Scalars['ID']['output'];
  /** true on success. */
  ok: Scalars['Boolean']['output'];
  /** DELETED on success. */
  result: Scalars['String']['output'];
};

export type GiftOptions = {
  __typename?: 'GiftOptions';
  allowGiftMessage?: Maybe<Scalars['Boolean']['output']>;
  allowGiftReceipt?: Maybe<Scalars['Boolean']['output']>;
  allowGiftWrap?: Maybe<Scalars['Boolean']['output']>;
};

export type ImageEntity = {
  __typename?: 'ImageEntity';
  /** PRIMARY or SECONDARY. */
  entityType?: Maybe<Scalars['String']['output']>;
  largeImage?: Maybe<Scalars['String']['output']>;
  mediumImage?: Maybe<Scalars['String']['output']>;
  thumbnailImage?: Maybe<Scalars['String']['output']>;
};

/**
 * A product, as the product lookup of the recommendation interface returns it. Only itemId is always
 * present; every other field is null where the record does not have it.
 */
export type Item = {
  __typename?: 'Item';
  addToCartUrl?: Maybe<Scalars['String']['output']>;
  affiliateAddToCartUrl?: Maybe<Scalars['String']['output']>;
  /** Age range text. */
  age?: Maybe<Scalars['String']['output']>;
  /** Free-form attributes; the set of names varies per item. */
  attributes: Array<ItemAttribute>;
  availableOnline?: Maybe<Scalars['Boolean']['output']>;
  bestMarketplacePrice?: Maybe<MarketplacePrice>;
  brandName?: Maybe<Scalars['String']['output']>;
  bundle?: Maybe<Scalars['Boolean']['output']>;
  /** Underscore-joined category identifiers, e.g. 1105910_1231203_1231204. */
  categoryNode?: Maybe<Scalars['String']['output']>;
  /** Slash-separated category path, e.g. Cell Phones/Shop Phones by Operating System/Apple iOS. */
  categoryPath?: Maybe<Scalars['String']['output']>;
  clearance?: Maybe<Scalars['Boolean']['output']>;
  color?: Maybe<Scalars['String']['output']>;
  /** Average customer rating, parsed from the record's decimal text ("4.627" becomes 4.627). */
  customerRating?: Maybe<Scalars['Float']['output']>;
  customerRatingImage?: Maybe<Scalars['String']['output']>;
  freeShipToStore?: Maybe<Scalars['Boolean']['output']>;
  freeShippingOver35Dollars?: Maybe<Scalars['Boolean']['output']>;
  freeShippingOver50Dollars?: Maybe<Scalars['Boolean']['output']>;
  /** Unisex and Male occur. */
  gender?: Maybe<Scalars['String']['output']>;
  giftOptions?: Maybe<GiftOptions>;
  /** Images; the PRIMARY one is last. */
  imageEntities?: Maybe<Array<ImageEntity>>;
  isTwoDayShippingEligible?: Maybe<Scalars['Boolean']['output']>;
  itemId: Scalars['ItemId']['output'];
  largeImage?: Maybe<Scalars['String']['output']>;
  /** May contain HTML markup. */
  longDescription?: Maybe<Scalars['String']['output']>;
  marketplace?: Maybe<Scalars['Boolean']['output']>;
  mediumImage?: Maybe<Scalars['String']['output']>;
  modelNumber?: Maybe<Scalars['String']['output']>;
  msrp?: Maybe<Scalars['Float']['output']>;
  name?: Maybe<Scalars['String']['output']>;
  ninetySevenCentShipping?: Maybe<Scalars['Boolean']['output']>;
  numReviews?: Maybe<Scalars['Int']['output']>;
  /** ONLINE_ONLY and ONLINE_AND_STORE occur. */
  offerType?: Maybe<Scalars['String']['output']>;
  overnightShippingRate?: Maybe<Scalars['Float']['output']>;
  /** The parent item (null when the item is its own parent or the parent is unknown). */
  parent?: Maybe<Item>;
  /** Parent item identifier; variants of one product share it. */
  parentItemId?: Maybe<Scalars['ItemId']['output']>;
  /** Items viewed together with this one, most relevant first (at most first, which is at most 10). */
  postBrowsedProducts: Array<Item>;
  preOrder?: Maybe<Scalars['Boolean']['output']>;
  /** Items bought together with this one, most relevant first (at most first, which is at most 10). */
  productRecommendations: Array<Item>;
  productTrackingUrl?: Maybe<Scalars['String']['output']>;
  productUrl?: Maybe<Scalars['String']['output']>;
  /** Either list with the reason behind each item. */
  recommendations: RecommendationConnection;
  rhid?: Maybe<Scalars['String']['output']>;
  rollBack?: Maybe<Scalars['Boolean']['output']>;
  salePrice?: Maybe<Scalars['Float']['output']>;
  sellerInfo?: Maybe<Scalars['String']['output']>;
  shipToStore?: Maybe<Scalars['Boolean']['output']>;
  shortDescription?: Maybe<Scalars['String']['output']>;
  size?: Maybe<Scalars['String']['output']>;
  standardShipRate?: Maybe<Scalars['Float']['output']>;
  /** Available occurs; anything else means out of stock. */
  stock?: Maybe<Scalars['String']['output']>;
  thumbnailImage?: Maybe<Scalars['String']['output']>;
  twoThreeDayShippingRate?: Maybe<Scalars['Float']['output']>;
  /** Universal Product Code, as text: leading zeros matter. */
  upc?: Maybe<Scalars['String']['output']>;
  /** The variants as items, in the record's order; unknown ones are left out; one that could not be loaded is an error. */
  variantItems: Array<Item>;
  /** Item identifiers of the variants. */
  variants?: Maybe<Array<Scalars['ItemId']['output']>>;
};


/**
 * A product, as the product lookup of the recommendation interface returns it. Only itemId is always
 * present; every other field is null where the record does not have it.
 */
export type ItemPostBrowsedProductsArgs = {
  first?: InputMaybe<Scalars['Int']['input']>;
};


/**
 * A product, as the product lookup of the recommendation interface returns it. Only itemId is always
 * present; every other field is null where the record does not have it.
 */
export type ItemProductRecommendationsArgs = {
  first?: InputMaybe<Scalars['Int']['input']>;
};


/**
 * A product, as the product lookup of the recommendation interface returns it. Only itemId is always
 * present; every other field is null where the record does not have it.
 */
export type ItemRecommendationsArgs = {
  first?: InputMaybe<Scalars['Int']['input']>;
  kind: RecommendationKind;
};

export type ItemAttribute = {
  __typename?: 'ItemAttribute';
  name: Scalars['String']['output'];
  value: Scalars['String']['output'];
};

export type MarketplacePrice = {
  __typename?: 'MarketplacePrice';
  availableOnline?: Maybe<Scalars['Boolean']['output']>;
  clearance?: Maybe<Scalars['Boolean']['output']>;
  offerType?: Maybe<Scalars['String']['output']>;
  price?: Maybe<Scalars['Float']['output']>;
  sellerInfo?: Maybe<Scalars['String']['output']>;
  standardShipRate?: Maybe<Scalars['Float']['output']>;
  twoThreeDayShippingRate?: Maybe<Scalars['Float']['output']>;
};

export type Mutation = {
  __typename?: 'Mutation';
  /** Creates a key; the response is the only place the key value ever appears. */
  createApiKey: CreateApiKeyPayload;
  /**
   * Deletes a key of the authenticated user (an administrator may delete anyone's). An unknown id and
   * another user's key both give NOT_FOUND. The key stops working at once.
   */
  deleteApiKey: DeleteApiKeyPayload;
};


export type MutationCreateApiKeyArgs = {
  input: CreateApiKeyInput;
};


export type MutationDeleteApiKeyArgs = {
  id: Scalars['ID']['input'];
};

export type Query = {
  __typename?: 'Query';
  /**
   * The keys of the authenticated user, sorted by name, metadata only. An administrator may name
   * another user with username (and userDomain); anyone else gets FORBIDDEN for that.
   */
  apiKeys: Array<ApiKey>;
  /** One item; null with a NOT_FOUND error when it does not exist. */
  item?: Maybe<Item>;
  /** Several items (at most 100), in the order asked; null with a NOT_FOUND error for each unknown one. */
  items: Array<Maybe<Item>>;
  /**
   * Post browsed products: items viewed together with the anchor, most relevant first, at most
   * first (1 to 10). NOT_FOUND for an unknown anchor; an empty list when there is nothing to recommend.
   */
  postBrowsedProducts: Array<Item>;
  /**
   * Product recommendation (next best product): items bought together with the anchor, most
   * relevant first, at most first (1 to 10). NOT_FOUND for an unknown anchor.
   */
  productRecommendations: Array<Item>;
  /** Either list, with the reason behind each item. */
  recommendations: RecommendationConnection;
  /** The user this request is authenticated as; null when the request carries no credentials. */
  viewer?: Maybe<Viewer>;
};


export type QueryApiKeysArgs = {
  userDomain?: InputMaybe<Scalars['String']['input']>;
  username?: InputMaybe<Scalars['String']['input']>;
};


export type QueryItemArgs = {
  itemId: Scalars['ItemId']['input'];
};


export type QueryItemsArgs = {
  itemIds: Array<Scalars['ItemId']['input']>;
};


export type QueryPostBrowsedProductsArgs = {
  first?: InputMaybe<Scalars['Int']['input']>;
  itemId: Scalars['ItemId']['input'];
};


export type QueryProductRecommendationsArgs = {
  first?: InputMaybe<Scalars['Int']['input']>;
  itemId: Scalars['ItemId']['input'];
};


export type QueryRecommendationsArgs = {
  first?: InputMaybe<Scalars['Int']['input']>;
  itemId: Scalars['ItemId']['input'];
  kind: RecommendationKind;
};

export type RecommendationConnection = {
  __typename?: 'RecommendationConnection';
  /** The anchor item. */
  anchor: Item;
  edges: Array<RecommendationEdge>;
  kind: RecommendationKind;
  /** The recommended items alone, in order (the same as edges' nodes). */
  nodes: Array<Item>;
};

export type RecommendationEdge = {
  __typename?: 'RecommendationEdge';
  /** How many sessions, orders or users the item shares with the anchor; 0 for fallbacks. */
  evidence: Scalars['Int']['output'];
  node: Item;
  /** 1 for the most relevant. */
  rank: Scalars['Int']['output'];
  /** The model's score (higher is more relevant); null for fallbacks and upstream lists. */
  score?: Maybe<Scalars['Float']['output']>;
  source: RecommendationSource;
};

export type RecommendationKind =
  /** Items bought together with the anchor (product recommendation, next best product). */
  | 'NEXT_BEST_PRODUCT'
  /** Items viewed together with the anchor (post browsed products). */
  | 'POST_BROWSE';

/** What produced a recommended item. */
export type RecommendationSource =
  /** Filled from the anchor's category, evidence being thin. */
  | 'CATEGORY'
  /** Bought in the same orders, or by the same users, as the anchor. */
  | 'CO_PURCHASE'
  /** Viewed in the same sessions as the anchor. */
  | 'CO_VIEW'
  /** Filled from the anchor's department, evidence being thin. */
  | 'DEPARTMENT'
  /** Filled from the most popular items, evidence being thin. */
  | 'POPULAR'
  /** Chosen by the upstream service, which does not say why. */
  | 'UPSTREAM';

/** The authenticated user. */
export type Viewer = {
  __typename?: 'Viewer';
  /** How the request authenticated. */
  authenticatedBy: AuthMethod;
  /** The user's domain; a domain user signs in as <username>@<domain>. */
  domain?: Maybe<Scalars['String']['output']>;
  /** Identifier of the user (UUID); null where the key service does not say (REST mode, no keys yet). */
  id?: Maybe<Scalars['ID']['output']>;
  /** Whether the user may manage other users' keys. */
  isAdmin: Scalars['Boolean']['output'];
  /** The user name; null where it is not known (REST mode with an API key). */
  username?: Maybe<Scalars['String']['output']>;
};

export type WithIndex<TObject> = TObject & Record<string, any>;
export type ResolversObject<TObject> = WithIndex<TObject>;

export type ResolverTypeWrapper<T> = Promise<T> | T;

export type Resolver<TResult, TParent = Record<PropertyKey, never>, TContext = Record<PropertyKey, never>, TArgs = Record<PropertyKey, never>> = ResolverFn<TResult, TParent, TContext, TArgs>;

export type ResolverFn<TResult, TParent, TContext, TArgs> = (
  parent: TParent,
  args: TArgs,
  context: TContext,
  info: GraphQLResolveInfo
) => Promise<TResult> | TResult;

export type SubscriptionSubscribeFn<TResult, TParent, TContext, TArgs> = (
  parent: TParent,
  args: TArgs,
  context: TContext,
  info: GraphQLResolveInfo
) => AsyncIterable<TResult> | Promise<AsyncIterable<TResult>>;

export type SubscriptionResolveFn<TResult, TParent, TContext, TArgs> = (
  parent: TParent,
  args: TArgs,
  context: TContext,
  info: GraphQLResolveInfo
) => TResult | Promise<TResult>;

export interface SubscriptionSubscriberObject<TResult, TKey extends string, TParent, TContext, TArgs> {
  subscribe: SubscriptionSubscribeFn<{ [key in TKey]: TResult }, TParent, TContext, TArgs>;
  resolve?: SubscriptionResolveFn<TResult, { [key in TKey]: TResult }, TContext, TArgs>;
}

export interface SubscriptionResolverObject<TResult, TParent, TContext, TArgs> {
  subscribe: SubscriptionSubscribeFn<any, TParent, TContext, TArgs>;
  resolve: SubscriptionResolveFn<TResult, any, TContext, TArgs>;
}

export type SubscriptionObject<TResult, TKey extends string, TParent, TContext, TArgs> =
  | SubscriptionSubscriberObject<TResult, TKey, TParent, TContext, TArgs>
  | SubscriptionResolverObject<TResult, TParent, TContext, TArgs>;

export type SubscriptionResolver<TResult, TKey extends string, TParent = Record<PropertyKey, never>, TContext = Record<PropertyKey, never>, TArgs = Record<PropertyKey, never>> =
  | ((...args: any[]) => SubscriptionObject<TResult, TKey, TParent, TContext, TArgs>)
  | SubscriptionObject<TResult, TKey, TParent, TContext, TArgs>;

export type TypeResolveFn<TTypes, TParent = Record<PropertyKey, never>, TContext = Record<PropertyKey, never>> = (
  parent: TParent,
  context: TContext,
  info: GraphQLResolveInfo
) => Maybe<TTypes> | Promise<Maybe<TTypes>>;

export type IsTypeOfResolverFn<T = Record<PropertyKey, never>, TContext = Record<PropertyKey, never>> = (obj: T, context: TContext, info: GraphQLResolveInfo) => boolean | Promise<boolean>;

export type NextResolverFn<T> = () => Promise<T>;

export type DirectiveResolverFn<TResult = Record<PropertyKey, never>, TParent = Record<PropertyKey, never>, TContext = Record<PropertyKey, never>, TArgs = Record<PropertyKey, never>> = (
  next: NextResolverFn<TResult>,
  parent: TParent,
  args: TArgs,
  context: TContext,
  info: GraphQLResolveInfo
) => TResult | Promise<TResult>;





/** Mapping between all available schema types and the resolvers types */
export type ResolversTypes = ResolversObject<{
  ApiKey: ResolverTypeWrapper<ApiKeyModel>;
  AuthMethod: AuthMethod;
  Boolean: ResolverTypeWrapper<Scalars['Boolean']['output']>;
  CacheControlScope: CacheControlScope;
  CreateApiKeyInput: CreateApiKeyInput;
  CreateApiKeyPayload: ResolverTypeWrapper<CreatedApiKeyModel>;
  DateTime: ResolverTypeWrapper<Scalars['DateTime']['output']>;
  DeleteApiKeyPayload: ResolverTypeWrapper<DeleteApiKeyPayload>;
  Float: ResolverTypeWrapper<Scalars['Float']['output']>;
  GiftOptions: ResolverTypeWrapper<GiftOptions>;
  ID: ResolverTypeWrapper<Scalars['ID']['output']>;
  ImageEntity: ResolverTypeWrapper<ImageEntity>;
  Int: ResolverTypeWrapper<Scalars['Int']['output']>;
  Item: ResolverTypeWrapper<ItemModel>;
  ItemAttribute: ResolverTypeWrapper<ItemAttribute>;
  ItemId: ResolverTypeWrapper<Scalars['ItemId']['output']>;
  MarketplacePrice: ResolverTypeWrapper<MarketplacePrice>;
  Mutation: ResolverTypeWrapper<Record<PropertyKey, never>>;
  Query: ResolverTypeWrapper<Record<PropertyKey, never>>;
  RecommendationConnection: ResolverTypeWrapper<RecommendationListModel>;
  RecommendationEdge: ResolverTypeWrapper<RecommendationEntryModel>;
  RecommendationKind: RecommendationKind;
  RecommendationSource: RecommendationSource;
  String: ResolverTypeWrapper<Scalars['String']['output']>;
  Viewer: ResolverTypeWrapper<PrincipalModel>;
}>;

/** Mapping between all available schema types and the resolvers parents */
export type ResolversParentTypes = ResolversObject<{
  ApiKey: ApiKeyModel;
  Boolean: Scalars['Boolean']['output'];
  CreateApiKeyInput: CreateApiKeyInput;
  CreateApiKeyPayload: CreatedApiKeyModel;
  DateTime: Scalars['DateTime']['output'];
  DeleteApiKeyPayload: DeleteApiKeyPayload;
  Float: Scalars['Float']['output'];
  GiftOptions: GiftOptions;
  ID: Scalars['ID']['output'];
  ImageEntity: ImageEntity;
  Int: Scalars['Int']['output'];
  Item: ItemModel;
  ItemAttribute: ItemAttribute;
  ItemId: Scalars['ItemId']['output'];
  MarketplacePrice: MarketplacePrice;
  Mutation: Record<PropertyKey, never>;
  Query: Record<PropertyKey, never>;
  RecommendationConnection: RecommendationListModel;
  RecommendationEdge: RecommendationEntryModel;
  String: Scalars['String']['output'];
  Viewer: PrincipalModel;
}>;

export type CacheControlDirectiveArgs = {
  inheritMaxAge?: Maybe<Scalars['Boolean']['input']>;
  maxAge?: Maybe<Scalars['Int']['input']>;
  scope?: Maybe<CacheControlScope>;
};

export type CacheControlDirectiveResolver<Result, Parent, ContextType = GatewayContext, Args = CacheControlDirectiveArgs> = DirectiveResolverFn<Result, Parent, ContextType, Args>;

export type ApiKeyResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['ApiKey'] = ResolversParentTypes['ApiKey']> = ResolversObject<{
  createdAt?: Resolver<Maybe<ResolversTypes['DateTime']>, ParentType, ContextType>;
  expiresAt?: Resolver<Maybe<ResolversTypes['DateTime']>, ParentType, ContextType>;
  id?: Resolver<ResolversTypes['ID'], ParentType, ContextType>;
  lastUsedAt?: Resolver<Maybe<ResolversTypes['DateTime']>, ParentType, ContextType>;
  name?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  userId?: Resolver<ResolversTypes['ID'], ParentType, ContextType>;
}>;

export type CreateApiKeyPayloadResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['CreateApiKeyPayload'] = ResolversParentTypes['CreateApiKeyPayload']> = ResolversObject<{
  apiKey?: Resolver<ResolversTypes['ApiKey'], ParentType, ContextType>;
  id?: Resolver<ResolversTypes['ID'], ParentType, ContextType>;
  key?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  ok?: Resolver<ResolversTypes['Boolean'], ParentType, ContextType>;
}>;

export interface DateTimeScalarConfig extends GraphQLScalarTypeConfig<ResolversTypes['DateTime'], any> {
  name: 'DateTime';
}

export type DeleteApiKeyPayloadResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['DeleteApiKeyPayload'] = ResolversParentTypes['DeleteApiKeyPayload']> = ResolversObject<{
  id?: Resolver<ResolversTypes['ID'], ParentType, ContextType>;
  ok?: Resolver<ResolversTypes['Boolean'], ParentType, ContextType>;
  result?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
}>;

export type GiftOptionsResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['GiftOptions'] = ResolversParentTypes['GiftOptions']> = ResolversObject<{
  allowGiftMessage?: Resolver<Maybe<ResolversTypes['Boolean']>, ParentType, ContextType>;
  allowGiftReceipt?: Resolver<Maybe<ResolversTypes['Boolean']>, ParentType, ContextType>;
  allowGiftWrap?: Resolver<Maybe<ResolversTypes['Boolean']>, ParentType, ContextType>;
}>;

export type ImageEntityResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['ImageEntity'] = ResolversParentTypes['ImageEntity']> = ResolversObject<{
  entityType?: Resolver<Maybe<ResolversTypes['String']>, ParentType, ContextType>;
  largeImage?: Resolver<Maybe<ResolversTypes['String']>, ParentType, ContextType>;
  mediumImage?: Resolver<Maybe<ResolversTypes['String']>, ParentType, ContextType>;
  thumbnailImage?: Resolver<Maybe<ResolversTypes['String']>, ParentType, ContextType>;
}>;

export type ItemResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['Item'] = ResolversParentTypes['Item']> = ResolversObject<{
  addToCartUrl?: Resolver<Maybe<ResolversTypes['String']>, ParentType, ContextType>;
  affiliateAddToCartUrl?: Resolver<Maybe<ResolversTypes['String']>, ParentType, ContextType>;
  age?: Resolver<Maybe<ResolversTypes['String']>, ParentType, ContextType>;
  attributes?: Resolver<Array<ResolversTypes['ItemAttribute']>, ParentType, ContextType>;
  availableOnline?: Resolver<Maybe<ResolversTypes['Boolean']>, ParentType, ContextType>;
  bestMarketplacePrice?: Resolver<Maybe<ResolversTypes['MarketplacePrice']>, ParentType, ContextType>;
  brandName?: Resolver<Maybe<ResolversTypes['String']>, ParentType, ContextType>;
  bundle?: Resolver<Maybe<ResolversTypes['Boolean']>, ParentType, ContextType>;
  categoryNode?: Resolver<Maybe<ResolversTypes['String']>, ParentType, ContextType>;
  categoryPath?: Resolver<Maybe<ResolversTypes['String']>, ParentType, ContextType>;
  clearance?: Resolver<Maybe<ResolversTypes['Boolean']>, ParentType, ContextType>;
  color?: Resolver<Maybe<ResolversTypes['String']>, ParentType, ContextType>;
  customerRating?: Resolver<Maybe<ResolversTypes['Float']>, ParentType, ContextType>;
  customerRatingImage?: Resolver<Maybe<ResolversTypes['String']>, ParentType, ContextType>;
  freeShipToStore?: Resolver<Maybe<ResolversTypes['Boolean']>, ParentType, ContextType>;
  freeShippingOver35Dollars?: Resolver<Maybe<ResolversTypes['Boolean']>, ParentType, ContextType>;
  freeShippingOver50Dollars?: Resolver<Maybe<ResolversTypes['Boolean']>, ParentType, ContextType>;
  gender?: Resolver<Maybe<ResolversTypes['String']>, ParentType, ContextType>;
  giftOptions?: Resolver<Maybe<ResolversTypes['GiftOptions']>, ParentType, ContextType>;
  imageEntities?: Resolver<Maybe<Array<ResolversTypes['ImageEntity']>>, ParentType, ContextType>;
  isTwoDayShippingEligible?: Resolver<Maybe<ResolversTypes['Boolean']>, ParentType, ContextType>;
  itemId?: Resolver<ResolversTypes['ItemId'], ParentType, ContextType>;
  largeImage?: Resolver<Maybe<ResolversTypes['String']>, ParentType, ContextType>;
  longDescription?: Resolver<Maybe<ResolversTypes['String']>, ParentType, ContextType>;
  marketplace?: Resolver<Maybe<ResolversTypes['Boolean']>, ParentType, ContextType>;
  mediumImage?: Resolver<Maybe<ResolversTypes['String']>, ParentType, ContextType>;
  modelNumber?: Resolver<Maybe<ResolversTypes['String']>, ParentType, ContextType>;
  msrp?: Resolver<Maybe<ResolversTypes['Float']>, ParentType, ContextType>;
  name?: Resolver<Maybe<ResolversTypes['String']>, ParentType, ContextType>;
  ninetySevenCentShipping?: Resolver<Maybe<ResolversTypes['Boolean']>, ParentType, ContextType>;
  numReviews?: Resolver<Maybe<ResolversTypes['Int']>, ParentType, ContextType>;
  offerType?: Resolver<Maybe<ResolversTypes['String']>, ParentType, ContextType>;
  overnightShippingRate?: Resolver<Maybe<ResolversTypes['Float']>, ParentType, ContextType>;
  parent?: Resolver<Maybe<ResolversTypes['Item']>, ParentType, ContextType>;
  parentItemId?: Resolver<Maybe<ResolversTypes['ItemId']>, ParentType, ContextType>;
  postBrowsedProducts?: Resolver<Array<ResolversTypes['Item']>, ParentType, ContextType, RequireFields<ItemPostBrowsedProductsArgs, 'first'>>;
  preOrder?: Resolver<Maybe<ResolversTypes['Boolean']>, ParentType, ContextType>;
  productRecommendations?: Resolver<Array<ResolversTypes['Item']>, ParentType, ContextType, RequireFields<ItemProductRecommendationsArgs, 'first'>>;
  productTrackingUrl?: Resolver<Maybe<ResolversTypes['String']>, ParentType, ContextType>;
  productUrl?: Resolver<Maybe<ResolversTypes['String']>, ParentType, ContextType>;
  recommendations?: Resolver<ResolversTypes['RecommendationConnection'], ParentType, ContextType, RequireFields<ItemRecommendationsArgs, 'first' | 'kind'>>;
  rhid?: Resolver<Maybe<ResolversTypes['String']>, ParentType, ContextType>;
  rollBack?: Resolver<Maybe<ResolversTypes['Boolean']>, ParentType, ContextType>;
  salePrice?: Resolver<Maybe<ResolversTypes['Float']>, ParentType, ContextType>;
  sellerInfo?: Resolver<Maybe<ResolversTypes['String']>, ParentType, ContextType>;
  shipToStore?: Resolver<Maybe<ResolversTypes['Boolean']>, ParentType, ContextType>;
  shortDescription?: Resolver<Maybe<ResolversTypes['String']>, ParentType, ContextType>;
  size?: Resolver<Maybe<ResolversTypes['String']>, ParentType, ContextType>;
  standardShipRate?: Resolver<Maybe<ResolversTypes['Float']>, ParentType, ContextType>;
  stock?: Resolver<Maybe<ResolversTypes['String']>, ParentType, ContextType>;
  thumbnailImage?: Resolver<Maybe<ResolversTypes['String']>, ParentType, ContextType>;
  twoThreeDayShippingRate?: Resolver<Maybe<ResolversTypes['Float']>, ParentType, ContextType>;
  upc?: Resolver<Maybe<ResolversTypes['String']>, ParentType, ContextType>;
  variantItems?: Resolver<Array<ResolversTypes['Item']>, ParentType, ContextType>;
  variants?: Resolver<Maybe<Array<ResolversTypes['ItemId']>>, ParentType, ContextType>;
}>;

export type ItemAttributeResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['ItemAttribute'] = ResolversParentTypes['ItemAttribute']> = ResolversObject<{
  name?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  value?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
}>;

export interface ItemIdScalarConfig extends GraphQLScalarTypeConfig<ResolversTypes['ItemId'], any> {
  name: 'ItemId';
}

export type MarketplacePriceResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['MarketplacePrice'] = ResolversParentTypes['MarketplacePrice']> = ResolversObject<{
  availableOnline?: Resolver<Maybe<ResolversTypes['Boolean']>, ParentType, ContextType>;
  clearance?: Resolver<Maybe<ResolversTypes['Boolean']>, ParentType, ContextType>;
  offerType?: Resolver<Maybe<ResolversTypes['String']>, ParentType, ContextType>;
  price?: Resolver<Maybe<ResolversTypes['Float']>, ParentType, ContextType>;
  sellerInfo?: Resolver<Maybe<ResolversTypes['String']>, ParentType, ContextType>;
  standardShipRate?: Resolver<Maybe<ResolversTypes['Float']>, ParentType, ContextType>;
  twoThreeDayShippingRate?: Resolver<Maybe<ResolversTypes['Float']>, ParentType, ContextType>;
}>;

export type MutationResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['Mutation'] = ResolversParentTypes['Mutation']> = ResolversObject<{
  createApiKey?: Resolver<ResolversTypes['CreateApiKeyPayload'], ParentType, ContextType, RequireFields<MutationCreateApiKeyArgs, 'input'>>;
  deleteApiKey?: Resolver<ResolversTypes['DeleteApiKeyPayload'], ParentType, ContextType, RequireFields<MutationDeleteApiKeyArgs, 'id'>>;
}>;

export type QueryResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['Query'] = ResolversParentTypes['Query']> = ResolversObject<{
  apiKeys?: Resolver<Array<ResolversTypes['ApiKey']>, ParentType, ContextType, Partial<QueryApiKeysArgs>>;
  item?: Resolver<Maybe<ResolversTypes['Item']>, ParentType, ContextType, RequireFields<QueryItemArgs, 'itemId'>>;
  items?: Resolver<Array<Maybe<ResolversTypes['Item']>>, ParentType, ContextType, RequireFields<QueryItemsArgs, 'itemIds'>>;
  postBrowsedProducts?: Resolver<Array<ResolversTypes['Item']>, ParentType, ContextType, RequireFields<QueryPostBrowsedProductsArgs, 'first' | 'itemId'>>;
  productRecommendations?: Resolver<Array<ResolversTypes['Item']>, ParentType, ContextType, RequireFields<QueryProductRecommendationsArgs, 'first' | 'itemId'>>;
  recommendations?: Resolver<ResolversTypes['RecommendationConnection'], ParentType, ContextType, RequireFields<QueryRecommendationsArgs, 'first' | 'itemId' | 'kind'>>;
  viewer?: Resolver<Maybe<ResolversTypes['Viewer']>, ParentType, ContextType>;
}>;

export type RecommendationConnectionResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['RecommendationConnection'] = ResolversParentTypes['RecommendationConnection']> = ResolversObject<{
  anchor?: Resolver<ResolversTypes['Item'], ParentType, ContextType>;
  edges?: Resolver<Array<ResolversTypes['RecommendationEdge']>, ParentType, ContextType>;
  kind?: Resolver<ResolversTypes['RecommendationKind'], ParentType, ContextType>;
  nodes?: Resolver<Array<ResolversTypes['Item']>, ParentType, ContextType>;
}>;

export type RecommendationEdgeResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['RecommendationEdge'] = ResolversParentTypes['RecommendationEdge']> = ResolversObject<{
  evidence?: Resolver<ResolversTypes['Int'], ParentType, ContextType>;
  node?: Resolver<ResolversTypes['Item'], ParentType, ContextType>;
  rank?: Resolver<ResolversTypes['Int'], ParentType, ContextType>;
  score?: Resolver<Maybe<ResolversTypes['Float']>, ParentType, ContextType>;
  source?: Resolver<ResolversTypes['RecommendationSource'], ParentType, ContextType>;
}>;

export type ViewerResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['Viewer'] = ResolversParentTypes['Viewer']> = ResolversObject<{
  authenticatedBy?: Resolver<ResolversTypes['AuthMethod'], ParentType, ContextType>;
  domain?: Resolver<Maybe<ResolversTypes['String']>, ParentType, ContextType>;
  id?: Resolver<Maybe<ResolversTypes['ID']>, ParentType, ContextType>;
  isAdmin?: Resolver<ResolversTypes['Boolean'], ParentType, ContextType>;
  username?: Resolver<Maybe<ResolversTypes['String']>, ParentType, ContextType>;
}>;

export type Resolvers<ContextType = GatewayContext> = ResolversObject<{
  ApiKey?: ApiKeyResolvers<ContextType>;
  CreateApiKeyPayload?: CreateApiKeyPayloadResolvers<ContextType>;
  DateTime?: GraphQLScalarType;
  DeleteApiKeyPayload?: DeleteApiKeyPayloadResolvers<ContextType>;
  GiftOptions?: GiftOptionsResolvers<ContextType>;
  ImageEntity?: ImageEntityResolvers<ContextType>;
  Item?: ItemResolvers<ContextType>;
  ItemAttribute?: ItemAttributeResolvers<ContextType>;
  ItemId?: GraphQLScalarType;
  MarketplacePrice?: MarketplacePriceResolvers<ContextType>;
  Mutation?: MutationResolvers<ContextType>;
  Query?: QueryResolvers<ContextType>;
  RecommendationConnection?: RecommendationConnectionResolvers<ContextType>;
  RecommendationEdge?: RecommendationEdgeResolvers<ContextType>;
  Viewer?: ViewerResolvers<ContextType>;
}>;

export type DirectiveResolvers<ContextType = GatewayContext> = ResolversObject<{
  cacheControl?: CacheControlDirectiveResolver<any, any, ContextType>;
}>;
