/* eslint-disable */
import type { DocumentTypeDecoration } from '@graphql-typed-document-node/core';
export type Maybe<T> = T | null;
export type InputMaybe<T> = T | null | undefined;
export type Exact<T extends { [key: string]: unknown }> = { [K in keyof T]: T[K] };
export type MakeOptional<T, K extends keyof T> = Omit<T, K> & { [SubKey in K]?: Maybe<T[SubKey]> };
export type MakeMaybe<T, K extends keyof T> = Omit<T, K> & { [SubKey in K]: Maybe<T[SubKey]> };
export type MakeEmpty<T extends { [key: string]: unknown }, K extends keyof T> = { [_ in K]?: never };
export type Incremental<T> = T | { [P in keyof T]?: P extends ' $fragmentName' | '__typename' ? T[P] : never };
/** All built-in and custom scalars, mapped to their actual values */
export type Scalars = {
  ID: { input: string; output: string; }
  String: { input: string; output: string; }
  Boolean: { input: boolean; output: boolean; }
  Int: { input: number; output: number; }
  Float: { input: number; output: number; }
  /**
   * A point in time, as an ISO 8601 string in UTC (2026-11-22T02:24:48.000Z). As input (an event's
   * time): ISO 8601 with an offset, Z or ±hh:mm (2026-11-23T06:40:00Z, 2026-11-23T07:40:00+01:00), T
   * and Z in either case as RFC 3339 allows; a time without an offset is refused, as RFC 3339 refuses it; and from 1970 to a day ahead of the gateway's
   * clock. Any other value is refused as the variable's value (HTTP 400, BAD_USER_INPUT).
   */
  DateTime: { input: string; output: string; }
  /**
   * An item identifier: a whole number from 1 to 9007199254740991, 2^53 − 1, where a JSON number stops
   * being exact (Walmart item ids reach ten digits, past GraphQL's 32-bit Int). Sent and received as
   * a JSON number; a string of its digits is accepted as input too.
   */
  ItemId: { input: number; output: number; }
};

/** An API key's metadata. The key value itself is shown once, by createApiKey, and is never listed. */
export type ApiKey = {
  __typename?: 'ApiKey';
  /** When the key was created; null where the key service does not say. */
  createdAt?: Maybe<Scalars['DateTime']['output']>;
  /** Requests this key may make per UTC day (then 429 QUOTA_EXCEEDED until midnight UTC); null: no quota. */
  dailyQuota?: Maybe<Scalars['Int']['output']>;
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
  /** Requests a second this key may make, beyond the gateway's own limits; null: only the gateway's. */
  rateLimitPerSecond?: Maybe<Scalars['Int']['output']>;
  /** What the key may do: the scopes it was given, within its user's rights. */
  scopes: Array<ApiKeyScope>;
  /**
   * Requests the key made per UTC day, newest first, over the last `days` days (1 to 90) including
   * today: days without requests are left out. Counted in memory, written every few seconds.
   */
  usage: Array<ApiKeyUsage>;
  /** Identifier of the owning user (UUID). */
  userId: Scalars['ID']['output'];
};


/** An API key's metadata. The key value itself is shown once, by createApiKey, and is never listed. */
export type ApiKeyUsageArgs = {
  days?: InputMaybe<Scalars['Int']['input']>;
};

/**
 * What a key may do. A key with RECOMMENDATIONS_READ alone is a publishable key: safe to ship in an
 * app or a web page, as it can read items and recommendations and nothing else.
 */
export type ApiKeyScope =
  /** recordEvents and upsertItems; POST /v1/events, PUT /v1/items. Administrators' keys only. */
  | 'EVENTS_WRITE'
  /** apiKeys, createApiKey, deleteApiKey, rotateApiKey, updateApiKey; /api/v1/apikey. */
  | 'KEYS_MANAGE'
  /** item, items, postBrowsedProducts, productRecommendations, recommendations; GET /v1/... */
  | 'RECOMMENDATIONS_READ';

/** One UTC day of a key's requests. */
export type ApiKeyUsage = {
  __typename?: 'ApiKeyUsage';
  /** The day, YYYY-MM-DD (UTC). */
  day: Scalars['String']['output'];
  /** Of those, the ones refused for the key's own rateLimitPerSecond or dailyQuota (429). */
  refused: Scalars['Int']['output'];
  /** Requests the key authenticated that day, refused ones included. */
  requests: Scalars['Int']['output'];
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
  /**
   * Requests the key may make per UTC day (1 to 1000000000); past it, 429 QUOTA_EXCEEDED until
   * midnight UTC. Null or omitted: no quota. A key caller may give no more than its own key has.
   */
  dailyQuota?: InputMaybe<Scalars['Int']['input']>;
  /** Days until the key expires (1 to 3650); the key never expires when omitted. */
  expiresInDays?: InputMaybe<Scalars['Int']['input']>;
  /**
   * Name of the key: 3 to 128 characters, a letter or digit first, then letters, digits and _ @ . - ~;
   * unique per user. Defaults to key#<n>.
   */
  name?: InputMaybe<Scalars['String']['input']>;
  /**
   * Requests a second the key may make (1 to 100000), on top of the gateway's own limits; null or
   * omitted: none of its own. A key caller may give no more than its own key has.
   */
  rateLimitPerSecond?: InputMaybe<Scalars['Int']['input']>;
  /**
   * What the key may do; omitted, every scope the caller may give (all its user's rights for a
   * password, the caller's own for a key). A scope the caller lacks is FORBIDDEN, naming it.
   */
  scopes?: InputMaybe<Array<ApiKeyScope>>;
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
  /** Identifier of the key: a new one, or the rotated one's. */
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

/**
 * One event for the recommender. A view needs a sessionId or a userId; a purchase an orderId, a
 * sessionId or a userId. The identifiers are opaque (at most 200 characters each): they group events
 * and are never shown in answers, logs or metrics.
 */
export type EventInput = {
  /**
   * Your own id for the event (opaque, at most 200 characters), so that sending a call again is safe:
   * an event whose eventId the gateway has stored before, or that comes earlier in the same call, is
   * not stored again, and counts in duplicates. Send the same id when you retry a call whose answer
   * you did not get (a timeout, a dropped connection): it may have been stored.
   */
  eventId?: InputMaybe<Scalars['String']['input']>;
  /** The item viewed or bought; it may have no record yet (upsertItems adds it). */
  itemId: Scalars['ItemId']['input'];
  /** VIEW or PURCHASE. */
  kind: EventKind;
  /** The order a purchase belongs to: items of one order are bought together. */
  orderId?: InputMaybe<Scalars['String']['input']>;
  /** The shopper's browsing session: views of one session make items viewed together. */
  sessionId?: InputMaybe<Scalars['String']['input']>;
  /** When it happened, with an offset (see DateTime), from 1970 to a day ahead of the gateway's clock; now when omitted. */
  time?: InputMaybe<Scalars['DateTime']['input']>;
  /**
   * The trackingId of the recommendation list the item was picked from: a VIEW with it counts a
   * click on that list, a PURCHASE a conversion (recommendationStats). One the gateway did not give
   * is BAD_USER_INPUT, and the call keeps nothing.
   */
  trackingId?: InputMaybe<Scalars['String']['input']>;
  /** The shopper, across sessions: purchases of one user make items bought together. */
  userId?: InputMaybe<Scalars['String']['input']>;
};

/** What a shopper did with an item. */
export type EventKind =
  /** The shopper bought the item. */
  | 'PURCHASE'
  /** The shopper looked at the item (a product page, a quick view). */
  | 'VIEW';

/** A shopper's list. */
export type ForYouConnection = {
  __typename?: 'ForYouConnection';
  edges: Array<ForYouEdge>;
  /** The recommended items alone, in order (the same as edges' nodes). */
  nodes: Array<Item>;
  /**
   * Names this list (kind FOR_YOU, the shopper hashed, the variant), as RecommendationConnection's does:
   * send it as EventInput.trackingId with a click or a purchase from the list.
   */
  trackingId: Scalars['String']['output'];
  /**
   * The A/B variant of the shopper the list is for (X-Recs-Shopper's, when sent); the ranking is the
   * same in both variants, so an experiment compares the anchored lists' orders alone.
   */
  variant: Scalars['String']['output'];
};

export type ForYouEdge = {
  __typename?: 'ForYouEdge';
  /** The shopper's viewed or bought item that brought it most; null for a popular fill. */
  because?: Maybe<Item>;
  node: Item;
  /** 1 for the most relevant. */
  rank: Scalars['Int']['output'];
  /** The summed score (higher is more relevant); null for popular fills. */
  score?: Maybe<Scalars['Float']['output']>;
  /** CO_VIEW or CO_PURCHASE by the list that brought it most, POPULAR for a fill. */
  source: RecommendationSource;
};

export type GiftOptions = {
  __typename?: 'GiftOptions';
  allowGiftMessage?: Maybe<Scalars['Boolean']['output']>;
  allowGiftReceipt?: Maybe<Scalars['Boolean']['output']>;
  allowGiftWrap?: Maybe<Scalars['Boolean']['output']>;
};

/** Gift options of an item record. */
export type GiftOptionsInput = {
  /** Whether a gift message can be added. */
  allowGiftMessage?: InputMaybe<Scalars['Boolean']['input']>;
  /** Whether a gift receipt can be added. */
  allowGiftReceipt?: InputMaybe<Scalars['Boolean']['input']>;
  /** Whether the item can be gift-wrapped. */
  allowGiftWrap?: InputMaybe<Scalars['Boolean']['input']>;
};

export type ImageEntity = {
  __typename?: 'ImageEntity';
  /** PRIMARY or SECONDARY. */
  entityType?: Maybe<Scalars['String']['output']>;
  largeImage?: Maybe<Scalars['String']['output']>;
  mediumImage?: Maybe<Scalars['String']['output']>;
  thumbnailImage?: Maybe<Scalars['String']['output']>;
};

/** One image of an item record. */
export type ImageEntityInput = {
  /** PRIMARY or SECONDARY. */
  entityType?: InputMaybe<Scalars['String']['input']>;
  /** URL of the large image. */
  largeImage?: InputMaybe<Scalars['String']['input']>;
  /** URL of the medium image. */
  mediumImage?: InputMaybe<Scalars['String']['input']>;
  /** URL of the thumbnail. */
  thumbnailImage?: InputMaybe<Scalars['String']['input']>;
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
  /** Items viewed together with this one, most relevant first (at most first, which is at most 10), passing filter if given. */
  postBrowsedProducts: Array<Item>;
  preOrder?: Maybe<Scalars['Boolean']['output']>;
  /** Items bought together with this one, most relevant first (at most first, which is at most 10), passing filter if given. */
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
  filter?: InputMaybe<RecommendationFilter>;
  first?: InputMaybe<Scalars['Int']['input']>;
};


/**
 * A product, as the product lookup of the recommendation interface returns it. Only itemId is always
 * present; every other field is null where the record does not have it.
 */
export type ItemProductRecommendationsArgs = {
  filter?: InputMaybe<RecommendationFilter>;
  first?: InputMaybe<Scalars['Int']['input']>;
};


/**
 * A product, as the product lookup of the recommendation interface returns it. Only itemId is always
 * present; every other field is null where the record does not have it.
 */
export type ItemRecommendationsArgs = {
  filter?: InputMaybe<RecommendationFilter>;
  first?: InputMaybe<Scalars['Int']['input']>;
  kind: RecommendationKind;
};

export type ItemAttribute = {
  __typename?: 'ItemAttribute';
  name: Scalars['String']['output'];
  value: Scalars['String']['output'];
};

/** A name/value attribute of an item record. */
export type ItemAttributeInput = {
  /** The attribute's name (the key in the record's attributes object). */
  name: Scalars['String']['input'];
  /** Its value, as text. */
  value: Scalars['String']['input'];
};

/**
 * An item record (the item record of recommendations.md, as the Item type shows it): itemId and name
 * are required, every other field is optional. A record replaces the item's previous record whole.
 * Texts are capped: shortDescription and longDescription at 10,000 characters; URLs (the images,
 * imageEntities' images, productTrackingUrl, productUrl, addToCartUrl, affiliateAddToCartUrl,
 * customerRatingImage) at 2,000; every other text (name, brandName, an attribute's name and value,
 * ...) at 1,000; attributes at 200 entries, imageEntities at 100, variants at 1,000.
 */
export type ItemInput = {
  /** URL that adds the item to the cart. */
  addToCartUrl?: InputMaybe<Scalars['String']['input']>;
  /** Affiliate URL that adds the item to the cart. */
  affiliateAddToCartUrl?: InputMaybe<Scalars['String']['input']>;
  /** Age range text. */
  age?: InputMaybe<Scalars['String']['input']>;
  /** Free-form attributes; a name given twice keeps its last value. */
  attributes?: InputMaybe<Array<ItemAttributeInput>>;
  /** Whether it can be bought online. */
  availableOnline?: InputMaybe<Scalars['Boolean']['input']>;
  /** The best marketplace offer. */
  bestMarketplacePrice?: InputMaybe<MarketplacePriceInput>;
  /** The brand; at most 1,000 characters. */
  brandName?: InputMaybe<Scalars['String']['input']>;
  /** Whether it is a bundle. */
  bundle?: InputMaybe<Scalars['Boolean']['input']>;
  /** Underscore-joined category identifiers, e.g. 1105910_1231203_1231204. */
  categoryNode?: InputMaybe<Scalars['String']['input']>;
  /** Slash-separated category path, e.g. Cell Phones/Shop Phones by Operating System/Apple iOS. */
  categoryPath?: InputMaybe<Scalars['String']['input']>;
  /** Whether it is on clearance. */
  clearance?: InputMaybe<Scalars['Boolean']['input']>;
  /** Colour, as text. */
  color?: InputMaybe<Scalars['String']['input']>;
  /** Average customer rating (0 to 5). */
  customerRating?: InputMaybe<Scalars['Float']['input']>;
  /** URL of the rating's image. */
  customerRatingImage?: InputMaybe<Scalars['String']['input']>;
  /** Whether shipping to a store is free. */
  freeShipToStore?: InputMaybe<Scalars['Boolean']['input']>;
  /** Whether shipping is free over 35 dollars. */
  freeShippingOver35Dollars?: InputMaybe<Scalars['Boolean']['input']>;
  /** Whether shipping is free over 50 dollars. */
  freeShippingOver50Dollars?: InputMaybe<Scalars['Boolean']['input']>;
  /** Unisex, Male, ... */
  gender?: InputMaybe<Scalars['String']['input']>;
  /** Gift options. */
  giftOptions?: InputMaybe<GiftOptionsInput>;
  /** Images; the PRIMARY one last. */
  imageEntities?: InputMaybe<Array<ImageEntityInput>>;
  /** Whether two-day shipping is available. */
  isTwoDayShippingEligible?: InputMaybe<Scalars['Boolean']['input']>;
  /** The item's identifier. */
  itemId: Scalars['ItemId']['input'];
  /** URL of the large image. */
  largeImage?: InputMaybe<Scalars['String']['input']>;
  /** A long description; may contain HTML markup; at most 10,000 characters. */
  longDescription?: InputMaybe<Scalars['String']['input']>;
  /** Whether it is sold on the marketplace. */
  marketplace?: InputMaybe<Scalars['Boolean']['input']>;
  /** URL of the medium image. */
  mediumImage?: InputMaybe<Scalars['String']['input']>;
  /** The manufacturer's model number, as text. */
  modelNumber?: InputMaybe<Scalars['String']['input']>;
  /** Manufacturer's suggested retail price. */
  msrp?: InputMaybe<Scalars['Float']['input']>;
  /** The item's name, not empty; at most 1,000 characters. */
  name: Scalars['String']['input'];
  /** Whether 97-cent shipping applies. */
  ninetySevenCentShipping?: InputMaybe<Scalars['Boolean']['input']>;
  /** Number of customer reviews. */
  numReviews?: InputMaybe<Scalars['Int']['input']>;
  /** ONLINE_ONLY or ONLINE_AND_STORE. */
  offerType?: InputMaybe<Scalars['String']['input']>;
  /** Overnight shipping rate. */
  overnightShippingRate?: InputMaybe<Scalars['Float']['input']>;
  /** Parent item identifier; variants of one product share it. */
  parentItemId?: InputMaybe<Scalars['ItemId']['input']>;
  /** Whether it can be pre-ordered. */
  preOrder?: InputMaybe<Scalars['Boolean']['input']>;
  /** Tracking URL of the product page. */
  productTrackingUrl?: InputMaybe<Scalars['String']['input']>;
  /** URL of the product page. */
  productUrl?: InputMaybe<Scalars['String']['input']>;
  /** Walmart's rhid. */
  rhid?: InputMaybe<Scalars['String']['input']>;
  /** Whether it is on rollback. */
  rollBack?: InputMaybe<Scalars['Boolean']['input']>;
  /** The price it sells for. */
  salePrice?: InputMaybe<Scalars['Float']['input']>;
  /** Who sells it. */
  sellerInfo?: InputMaybe<Scalars['String']['input']>;
  /** Whether it can be shipped to a store. */
  shipToStore?: InputMaybe<Scalars['Boolean']['input']>;
  /** A short description; at most 10,000 characters. */
  shortDescription?: InputMaybe<Scalars['String']['input']>;
  /** Size, as text. */
  size?: InputMaybe<Scalars['String']['input']>;
  /** Standard shipping rate. */
  standardShipRate?: InputMaybe<Scalars['Float']['input']>;
  /** Available means in stock; anything else out of stock. */
  stock?: InputMaybe<Scalars['String']['input']>;
  /** URL of the thumbnail image. */
  thumbnailImage?: InputMaybe<Scalars['String']['input']>;
  /** Two-to-three-day shipping rate. */
  twoThreeDayShippingRate?: InputMaybe<Scalars['Float']['input']>;
  /** Universal Product Code, as text: leading zeros matter. */
  upc?: InputMaybe<Scalars['String']['input']>;
  /** Item identifiers of the variants. */
  variants?: InputMaybe<Array<Scalars['ItemId']['input']>>;
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

/** The best marketplace offer of an item record. */
export type MarketplacePriceInput = {
  /** Whether the offer can be bought online. */
  availableOnline?: InputMaybe<Scalars['Boolean']['input']>;
  /** Whether the offer is on clearance. */
  clearance?: InputMaybe<Scalars['Boolean']['input']>;
  /** ONLINE_ONLY or ONLINE_AND_STORE. */
  offerType?: InputMaybe<Scalars['String']['input']>;
  /** The offer's price. */
  price?: InputMaybe<Scalars['Float']['input']>;
  /** Who sells it. */
  sellerInfo?: InputMaybe<Scalars['String']['input']>;
  /** Standard shipping rate of the offer. */
  standardShipRate?: InputMaybe<Scalars['Float']['input']>;
  /** Two-to-three-day shipping rate of the offer. */
  twoThreeDayShippingRate?: InputMaybe<Scalars['Float']['input']>;
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
  /**
   * Records what shoppers did, for the recommender: at most 10,000 events a call, all kept or none
   * (BAD_USER_INPUT naming the first bad event's index and field). A call whose item ids would take
   * the recommender past RECS_MAX_ITEMS distinct items is refused whole (BAD_USER_INPUT). A bad time
   * is refused by DateTime, as the variable's value. Administrators only (FORBIDDEN
   * otherwise). Send the events as a variable: a literal list of thousands of events is over the
   * token limit. Answered once the events are kept.
   */
  recordEvents: RecordEventsPayload;
  /**
   * Gives a key a new value, shown this once in the payload (same id, name and scopes). The old value
   * keeps working for gracePeriodSeconds (0 to 2592000, 30 days; 0: it stops at once), then stops on
   * every gateway sharing the key store within a second. NOT_FOUND as deleteApiKey; FORBIDDEN for a
   * key with a scope the caller lacks.
   */
  rotateApiKey: CreateApiKeyPayload;
  /** Renames a key or changes its scopes and limits; NOT_FOUND as deleteApiKey. */
  updateApiKey: ApiKey;
  /**
   * Adds or replaces item records: at most 1,000 a call, all stored or none (BAD_USER_INPUT naming
   * the first bad record's index and field: a text over its cap, see ItemInput). A call that would
   * take the recommender past RECS_MAX_ITEMS distinct items is refused whole (BAD_USER_INPUT), as
   * recordEvents is. An itemId sent twice in one call is stored once, its last record, as a record
   * sent again in a later call replaces the earlier. Administrators only (FORBIDDEN otherwise).
   */
  upsertItems: UpsertItemsPayload;
};


export type MutationCreateApiKeyArgs = {
  input: CreateApiKeyInput;
};


export type MutationDeleteApiKeyArgs = {
  id: Scalars['ID']['input'];
};


export type MutationRecordEventsArgs = {
  events: Array<EventInput>;
};


export type MutationRotateApiKeyArgs = {
  gracePeriodSeconds?: InputMaybe<Scalars['Int']['input']>;
  id: Scalars['ID']['input'];
};


export type MutationUpdateApiKeyArgs = {
  id: Scalars['ID']['input'];
  input: UpdateApiKeyInput;
};


export type MutationUpsertItemsArgs = {
  items: Array<ItemInput>;
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
   * Items most bought in the window the recommender keeps (most viewed for POST_BROWSE), best first,
   * ties by the other count, then by itemId; only items bought (viewed) at least once. At most first
   * (1 to 50); categoryPath as trendingItems's.
   */
  popularItems: Array<Item>;
  /**
   * Post browsed products: items viewed together with the anchor, most relevant first, at most
   * first (1 to 10), each passing filter if given. NOT_FOUND for an unknown anchor; an empty list
   * when there is nothing to recommend.
   */
  postBrowsedProducts: Array<Item>;
  /**
   * Product recommendation (next best product): items bought together with the anchor, most
   * relevant first, at most first (1 to 10), each passing filter if given. NOT_FOUND for an unknown anchor.
   */
  productRecommendations: Array<Item>;
  /**
   *   Impressions, clicks and purchases per kind of list and variant, over the whole UTC hours that
   *   overlap [since, until) (until: now when omitted), every process over the store counted; counts
   *   reach the store every 2 seconds (docs/attribution.md). Administrators only (FORBIDDEN otherwise);
   *   BAD_USER_INPUT when until is not after since. REST twin: GET /v1/stats?since=&until=, which a
   * REST-mode gateway asks (UPSTREAM_REJECTED where the upstream has none).
   */
  recommendationStats: Array<RecommendationStats>;
  /** Either list, with the reason behind each item. */
  recommendations: RecommendationConnection;
  /**
   * Items for one shopper, best first, at most first (1 to 50; BAD_USER_INPUT otherwise), from the
   * events the gateway holds for the session, the user, or both (their events merged): the ten latest
   * distinct items each bring their co-viewed (viewed) or co-bought (bought) items, a more recent item
   * weighing more (1 / (1 + p) for the p-th latest). Items the shopper viewed or bought in the window
   * are left out, with their families. A shopper without events gets the popular items (source
   * POPULAR). The filter applies as on the anchored lists, and the list keeps first items whenever that
   * many pass. A sessionId or a userId is required (each 1 to 200 characters); neither ever appears in
   * an answer, a log or a metric. Never cached publicly: the answer is one shopper's.
   */
  recommendedForYou: ForYouConnection;
  /**
   * Items rising most in the last day, best first, at most first (1 to 50; BAD_USER_INPUT otherwise).
   * Rule: score = events in the last 24 hours / (1 + events a day over the 27 days before), views and
   * purchases alike, leaving out items with fewer than 3 events in the last 24 hours; "now" is the
   * newest event time the recommender holds, not the clock, so the same events give the same list.
   * The 1 keeps items seen less than once a day from dividing by almost nothing; 3 keeps chance out.
   * categoryPath keeps items whose categoryPath is it or lies under it, whole segments only
   * (Electronics/TV matches Electronics/TV/4K, not Electronics/TVs). An empty list where nothing rose.
   */
  trendingItems: Array<Item>;
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


export type QueryPopularItemsArgs = {
  categoryPath?: InputMaybe<Scalars['String']['input']>;
  first?: InputMaybe<Scalars['Int']['input']>;
  kind?: InputMaybe<RecommendationKind>;
};


export type QueryPostBrowsedProductsArgs = {
  filter?: InputMaybe<RecommendationFilter>;
  first?: InputMaybe<Scalars['Int']['input']>;
  itemId: Scalars['ItemId']['input'];
};


export type QueryProductRecommendationsArgs = {
  filter?: InputMaybe<RecommendationFilter>;
  first?: InputMaybe<Scalars['Int']['input']>;
  itemId: Scalars['ItemId']['input'];
};


export type QueryRecommendationStatsArgs = {
  since: Scalars['DateTime']['input'];
  until?: InputMaybe<Scalars['DateTime']['input']>;
};


export type QueryRecommendationsArgs = {
  filter?: InputMaybe<RecommendationFilter>;
  first?: InputMaybe<Scalars['Int']['input']>;
  itemId: Scalars['ItemId']['input'];
  kind: RecommendationKind;
};


export type QueryRecommendedForYouArgs = {
  filter?: InputMaybe<RecommendationFilter>;
  first?: InputMaybe<Scalars['Int']['input']>;
  sessionId?: InputMaybe<Scalars['String']['input']>;
  userId?: InputMaybe<Scalars['String']['input']>;
};


export type QueryTrendingItemsArgs = {
  categoryPath?: InputMaybe<Scalars['String']['input']>;
  first?: InputMaybe<Scalars['Int']['input']>;
};

/** A share with its 95% Wilson score interval. */
export type Rate = {
  __typename?: 'Rate';
  high: Scalars['Float']['output'];
  low: Scalars['Float']['output'];
  value: Scalars['Float']['output'];
};

export type RecommendationConnection = {
  __typename?: 'RecommendationConnection';
  /** The anchor item. */
  anchor: Item;
  edges: Array<RecommendationEdge>;
  kind: RecommendationKind;
  /** The recommended items alone, in order (the same as edges' nodes). */
  nodes: Array<Item>;
  /**
   * Names this list (its kind, anchor and variant), opaque and short: send it as EventInput.trackingId
   * with the VIEW of an item a shopper opened from the list (a click) and with the PURCHASE of it (a
   * conversion). Serving the list counts an impression (recommendationStats).
   */
  trackingId: Scalars['String']['output'];
  /**
   * The ranking that ordered the list: A, the shipped one, or B, the experiment's (RECS_EXPERIMENT),
   * by the X-Recs-Shopper header's shopper; A without an experiment or without the header.
   */
  variant: Scalars['String']['output'];
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

/**
 * Conditions a recommended item must meet; every condition given must hold, and one not given (null,
 * or an empty list) sets nothing. The list keeps its length (first) whenever that many items pass,
 * filled from the anchor's category, department and the popular items, filtered too; a filter no
 * item passes gives an empty list, not an error. BAD_USER_INPUT for more than 100 excludeItemIds, a
 * negative price, minPrice above maxPrice, or an empty categoryPath.
 */
export type RecommendationFilter = {
  /** The item's brandName must be one of these; case does not matter. */
  brandNames?: InputMaybe<Array<Scalars['String']['input']>>;
  /**
   * A category and everything under it, as whole leading segments of the item's categoryPath:
   * Electronics/TV matches Electronics/TV and Electronics/TV/4K, not Electronics/TVs. Slashes at
   * either end are ignored.
   */
  categoryPath?: InputMaybe<Scalars['String']['input']>;
  /** Items never to list, e.g. those in the cart; at most 100. */
  excludeItemIds?: InputMaybe<Array<Scalars['ItemId']['input']>>;
  /** true: only items in stock (stock is Available or absent); false or null: in stock or not. */
  inStockOnly?: InputMaybe<Scalars['Boolean']['input']>;
  /** Highest salePrice, inclusive; an item without a salePrice is left out. */
  maxPrice?: InputMaybe<Scalars['Float']['input']>;
  /** Lowest salePrice, inclusive; an item without a salePrice is left out. */
  minPrice?: InputMaybe<Scalars['Float']['input']>;
};

export type RecommendationKind =
  /** Items bought together with the anchor (product recommendation, next best product). */
  | 'NEXT_BEST_PRODUCT'
  /** Items viewed together with the anchor (post browsed products). */
  | 'POST_BROWSE';

/** The kinds of list whose use is counted (recommendationStats). */
export type RecommendationListKind =
  /** A shopper's own list (recommendedForYou). */
  | 'FOR_YOU'
  /** recommendations(kind: NEXT_BEST_PRODUCT). */
  | 'NEXT_BEST_PRODUCT'
  /** recommendations(kind: POST_BROWSE). */
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

/** How one kind of list, in one variant, was served and used. */
export type RecommendationStats = {
  __typename?: 'RecommendationStats';
  /** clicks / impressions; null without impressions. */
  clickThroughRate?: Maybe<Rate>;
  /** VIEW events naming one of these lists by trackingId. */
  clicks: Scalars['Int']['output'];
  /** purchases / impressions; null without impressions. */
  conversionRate?: Maybe<Rate>;
  /** Lists served, from the response cache too. */
  impressions: Scalars['Int']['output'];
  kind: RecommendationListKind;
  /** PURCHASE events naming one of these lists by trackingId. */
  purchases: Scalars['Int']['output'];
  /** A (the shipped ranking) or B (the experiment's). */
  variant: Scalars['String']['output'];
};

/** What recordEvents kept. */
export type RecordEventsPayload = {
  __typename?: 'RecordEventsPayload';
  /** How many events were taken: all of the call's (a call is all or nothing), duplicates included. */
  accepted: Scalars['Int']['output'];
  /**
   * Of those, how many had an eventId stored before (or earlier in the call), and were not stored
   * again. Null where the backend does not say (REST mode in front of an upstream that does not).
   */
  duplicates?: Maybe<Scalars['Int']['output']>;
  /**
   * How many distinct items named by the call still have no item record: they shape the model but
   * are not shown until upsertItems sends their records. Null where the backend does not say (REST mode
   * in front of an upstream that does not).
   */
  itemsWithoutRecord?: Maybe<Scalars['Int']['output']>;
};

/** A key's changes: a field omitted stays as it is. */
export type UpdateApiKeyInput = {
  /** The new daily quota (1 to 1000000000), null to remove it; raised as rateLimitPerSecond. */
  dailyQuota?: InputMaybe<Scalars['Int']['input']>;
  /** The new name, under the rule of CreateApiKeyInput.name. */
  name?: InputMaybe<Scalars['String']['input']>;
  /**
   * The new rate (1 to 100000), null to remove it. A caller authenticated by a key may set no more
   * than its own key has: a key may lower its own limits, never raise them (FORBIDDEN).
   */
  rateLimitPerSecond?: InputMaybe<Scalars['Int']['input']>;
  /** The new scopes: narrowing only, unless the caller holds those added (FORBIDDEN naming one it lacks). */
  scopes?: InputMaybe<Array<ApiKeyScope>>;
};

/** What upsertItems kept. */
export type UpsertItemsPayload = {
  __typename?: 'UpsertItemsPayload';
  /** How many items were stored: one for each itemId of the call (a call is all or nothing); of a record sent twice in one call, the last is stored, counted once. */
  upserted: Scalars['Int']['output'];
};

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

export type MyApiKeysQueryVariables = Exact<{ [key: string]: never; }>;


export type MyApiKeysQuery = { __typename?: 'Query', viewer?: { __typename?: 'Viewer', username?: string | null, domain?: string | null, authenticatedBy: AuthMethod } | null, apiKeys: Array<{ __typename?: 'ApiKey', id: string, name: string, createdAt?: string | null, expiresAt?: string | null, lastUsedAt?: string | null }> };

export type ProductPageQueryVariables = Exact<{
  itemId: Scalars['ItemId']['input'];
}>;


export type ProductPageQuery = { __typename?: 'Query', item?: (
    { __typename?: 'Item', shortDescription?: string | null, variantItems: Array<{ __typename?: 'Item', itemId: number, color?: string | null, size?: string | null, salePrice?: number | null, stock?: string | null }>, boughtWith: { __typename?: 'RecommendationConnection', edges: Array<{ __typename?: 'RecommendationEdge', rank: number, source: RecommendationSource, node: (
          { __typename?: 'Item', variantItems: Array<{ __typename?: 'Item', itemId: number, color?: string | null, size?: string | null }> }
          & { ' $fragmentRefs'?: { 'ProductCardFragment': ProductCardFragment } }
        ) }> }, viewedWith: Array<(
      { __typename?: 'Item' }
      & { ' $fragmentRefs'?: { 'ProductCardFragment': ProductCardFragment } }
    )> }
    & { ' $fragmentRefs'?: { 'ProductCardFragment': ProductCardFragment } }
  ) | null };

export type ProductCardFragment = { __typename?: 'Item', itemId: number, name?: string | null, brandName?: string | null, salePrice?: number | null, customerRating?: number | null, numReviews?: number | null, thumbnailImage?: string | null, stock?: string | null } & { ' $fragmentName'?: 'ProductCardFragment' };

export class TypedDocumentString<TResult, TVariables>
  extends String
  implements DocumentTypeDecoration<TResult, TVariables>
{
  __apiType?: NonNullable<DocumentTypeDecoration<TResult, TVariables>['__apiType']>;
  private value: string;
  public __meta__?: Record<string, any> | undefined;

  constructor(value: string, __meta__?: Record<string, any> | undefined) {
    super(value);
    this.value = value;
    this.__meta__ = __meta__;
  }

  override toString(): string & DocumentTypeDecoration<TResult, TVariables> {
    return this.value;
  }
}
export const ProductCardFragmentDoc = new TypedDocumentString(`
    fragment ProductCard on Item {
  itemId
  name
  brandName
  salePrice
  customerRating
  numReviews
  thumbnailImage
  stock
}
    `, {"fragmentName":"ProductCard"}) as unknown as TypedDocumentString<ProductCardFragment, unknown>;
export const MyApiKeysDocument = new TypedDocumentString(`
    query MyApiKeys {
  viewer {
    username
    domain
    authenticatedBy
  }
  apiKeys {
    id
    name
    createdAt
    expiresAt
    lastUsedAt
  }
}
    `) as unknown as TypedDocumentString<MyApiKeysQuery, MyApiKeysQueryVariables>;
export const ProductPageDocument = new TypedDocumentString(`
    query ProductPage($itemId: ItemId!) {
  item(itemId: $itemId) {
    ...ProductCard
    shortDescription
    variantItems {
      itemId
      color
      size
      salePrice
      stock
    }
    boughtWith: recommendations(kind: NEXT_BEST_PRODUCT, first: 4) {
      edges {
        rank
        source
        node {
          ...ProductCard
          variantItems {
            itemId
            color
            size
          }
        }
      }
    }
    viewedWith: postBrowsedProducts(first: 4) {
      ...ProductCard
    }
  }
}
    fragment ProductCard on Item {
  itemId
  name
  brandName
  salePrice
  customerRating
  numReviews
  thumbnailImage
  stock
}`) as unknown as TypedDocumentString<ProductPageQuery, ProductPageQueryVariables>;