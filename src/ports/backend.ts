import type { AttributionStore, ListCountSink, RecommendationStatsModel } from './attribution.js';
import type { BreakerState } from './observers.js';

/** What resolvers see of a backend; embedded or REST, chosen once at start-up, throwing only src/errors.ts errors. */

export interface UserModel {
  /** UUID; null where the backend does not say (REST mode before the user has a key). */
  id: string | null;
  /** null where it is not known (REST mode, authenticated by key). */
  username: string | null;
  domain: string | null;
  isAdmin: boolean;
}

export type AuthMethod = 'API_KEY' | 'PASSWORD';

/** What a key may do (src/model/scopes.ts decides): read items and lists, send events and items, manage keys. */
export type ApiKeyScope = 'RECOMMENDATIONS_READ' | 'EVENTS_WRITE' | 'KEYS_MANAGE';

export interface PrincipalModel {
  user: UserModel;
  authenticatedBy: AuthMethod;
  keyId: string | null;
  /** SHA-256 of the Authorization value, hex: tells credentials apart in cache keys and logs without the secret. */
  credentialId: string;
  /** The raw Authorization value, only for forwarding to the key service in REST mode. */
  readonly authorization: string;
  /** What this credential may do; undefined where the key service decides each call itself (REST mode). */
  scopes?: readonly ApiKeyScope[];
  /** The key's own rate and daily quota; null or undefined: none (a password, a key without, REST mode). */
  limits?: KeyLimits | null;
}

/** A key's own limits; a null field is no limit of its own. */
export interface KeyLimits {
  rateLimitPerSecond: number | null;
  dailyQuota: number | null;
}

/** One UTC day of a key's requests. */
export interface ApiKeyUsageModel {
  /** YYYY-MM-DD, UTC. */
  day: string;
  requests: number;
  /** Requests refused for the key's own rate or quota. */
  refused: number;
}

/** An API key's metadata; never the key value or its hash. */
export interface ApiKeyModel {
  id: string;
  userId: string;
  name: string;
  createdAt: Date | null;
  expiresAt: Date | null;
  lastUsedAt: Date | null;
  /** What the key may do: its stored scopes within its user's rights. */
  scopes: readonly ApiKeyScope[];
  rateLimitPerSecond: number | null;
  dailyQuota: number | null;
}

export interface CreateApiKeyInput {
  username?: string | null;
  userDomain?: string | null;
  name?: string | null;
  expiresInDays?: number | null;
  /** Omitted: every scope the maker may give (a key's own, or all its user's rights). */
  scopes?: readonly ApiKeyScope[] | null;
  /** Omitted: none of its own for a password's key; a key's own for a key's. */
  rateLimitPerSecond?: number | null;
  dailyQuota?: number | null;
}

/** A key's changes; each field omitted is left as it is. */
export interface UpdateApiKeyInput {
  name?: string | null;
  /** Narrowing only, unless the caller holds the scopes added. */
  scopes?: readonly ApiKeyScope[] | null;
  /** null removes the limit; a key caller may set no more than its own key has. */
  rateLimitPerSecond?: number | null;
  dailyQuota?: number | null;
}

/** Bounds of a key's own limits. */
export const MAX_KEY_RATE_PER_SECOND = 100_000;
export const MAX_KEY_DAILY_QUOTA = 1_000_000_000;
/** The most days ApiKey.usage looks back. */
export const MAX_USAGE_DAYS = 90;
/** The days ApiKey.usage and its REST twin look back when not told. */
export const DEFAULT_USAGE_DAYS = 7;

/** The longest grace period a rotated key's old value may keep working, in seconds: 30 days. */
export const MAX_ROTATION_GRACE_SECONDS = 30 * 86_400;
/** rotateApiKey's default grace period, in seconds: a day. */
export const DEFAULT_ROTATION_GRACE_SECONDS = 86_400;

/** The create response: the only place a key value ever appears. */
export interface CreatedApiKeyModel {
  ok: true;
  id: string;
  key: string;
  apiKey: ApiKeyModel;
}

export interface UserRef {
  username: string;
  domain: string | null;
}

export interface CallOptions {
  /** Aborted at the request's deadline or when the client goes; the embedded backend may ignore it. */
  signal?: AbortSignal;
  /** The caller's address chain, sent as X-Forwarded-For so the key service's limits count the caller, not us. */
  clientAddress?: string;
  /** For a call made for several requests: decides instead of the signal whether the caller has gone. */
  waiting?(): boolean;
  /** Called just before a credential is sent to be checked; may reject (RATE_LIMITED) so nothing is sent. */
  beforeCheck?(): Promise<void>;
}

export const KEY_SERVICE = 'apikeys';
export const RECS_SERVICE = 'recommendations';

export interface KeyService {
  /** Authenticates `<key>`, `Bearer <key>` or Basic; UNAUTHENTICATED gives no hint which part was wrong. */
  authenticate(authorization: string, options?: CallOptions): Promise<PrincipalModel>;
  /** The principal when already verified and still trusted, without waiting; undefined otherwise, never an error. */
  authenticateKnown?(authorization: string, connection?: object): PrincipalModel | undefined;
  /** As authenticateKnown where vouching takes a short wait; asked before a password sign-in counts as an attempt. */
  authenticateVerified?(authorization: string): Promise<PrincipalModel | undefined>;
  /** True when keys are checked without a network call; otherwise the limiter bounds remote checks per address. */
  readonly checksKeysLocally?: boolean;
  listKeys(principal: PrincipalModel, of?: UserRef | null, options?: CallOptions): Promise<ApiKeyModel[]>;
  /** Creates a key; BAD_USER_INPUT for a bad name or unknown user, FORBIDDEN for another user's. */
  createKey(principal: PrincipalModel, input: CreateApiKeyInput, options?: CallOptions): Promise<CreatedApiKeyModel>;
  /** Deletes a key; NOT_FOUND for an unknown id and for another user's key alike. */
  deleteKey(principal: PrincipalModel, id: string, options?: CallOptions): Promise<void>;
  /** Gives the key a new value, shown this once; the old one works `graceSeconds` more (0: stops at
   * once). NOT_FOUND as deleteKey; BAD_USER_INPUT for a grace outside 0..MAX_ROTATION_GRACE_SECONDS. */
  rotateKey(principal: PrincipalModel, id: string, graceSeconds: number, options?: CallOptions): Promise<CreatedApiKeyModel>;
  /** Renames or narrows a key; NOT_FOUND as deleteKey, FORBIDDEN naming a scope the caller lacks. */
  updateKey(principal: PrincipalModel, id: string, input: UpdateApiKeyInput, options?: CallOptions): Promise<ApiKeyModel>;
  /** The key's requests per UTC day over the last `days` days, newest first; NOT_FOUND as deleteKey. */
  keyUsage(principal: PrincipalModel, id: string, days: number, options?: CallOptions): Promise<ApiKeyUsageModel[]>;
  /** Counts a request of the key (refused: for its own rate or quota); where the key service counts usage. */
  countUse?(keyId: string, refused: boolean): void;
  /** Where the key service's store keeps daily quotas for every replica: whether the key's requests
   * admitted this UTC day are under `dailyQuota`; undefined until settleQuota has asked the store. */
  quotaLeft?(keyId: string, dailyQuota: number): boolean | undefined;
  /** Writes this process's counts and learns the key's total this day back from the store. */
  settleQuota?(keyId: string): Promise<void>;
}

export interface ItemAttributeModel {
  name: string;
  value: string;
}

export interface MarketplacePriceModel {
  price?: number | null;
  sellerInfo?: string | null;
  standardShipRate?: number | null;
  twoThreeDayShippingRate?: number | null;
  availableOnline?: boolean | null;
  clearance?: boolean | null;
  offerType?: string | null;
}

export interface GiftOptionsModel {
  allowGiftWrap?: boolean | null;
  allowGiftMessage?: boolean | null;
  allowGiftReceipt?: boolean | null;
}

export interface ImageEntityModel {
  thumbnailImage?: string | null;
  mediumImage?: string | null;
  largeImage?: string | null;
  entityType?: string | null;
}

/** An item record, normalised (numbers as numbers, attributes as pairs); made by parseItemRecord only. */
export interface ItemModel {
  itemId: number;
  parentItemId?: number | null;
  name?: string | null;
  msrp?: number | null;
  salePrice?: number | null;
  upc?: string | null;
  categoryPath?: string | null;
  categoryNode?: string | null;
  shortDescription?: string | null;
  longDescription?: string | null;
  brandName?: string | null;
  thumbnailImage?: string | null;
  mediumImage?: string | null;
  largeImage?: string | null;
  productTrackingUrl?: string | null;
  productUrl?: string | null;
  addToCartUrl?: string | null;
  affiliateAddToCartUrl?: string | null;
  ninetySevenCentShipping?: boolean | null;
  standardShipRate?: number | null;
  twoThreeDayShippingRate?: number | null;
  overnightShippingRate?: number | null;
  freeShippingOver35Dollars?: boolean | null;
  freeShippingOver50Dollars?: boolean | null;
  isTwoDayShippingEligible?: boolean | null;
  color?: string | null;
  size?: string | null;
  gender?: string | null;
  age?: string | null;
  marketplace?: boolean | null;
  shipToStore?: boolean | null;
  freeShipToStore?: boolean | null;
  modelNumber?: string | null;
  sellerInfo?: string | null;
  customerRating?: number | null;
  numReviews?: number | null;
  customerRatingImage?: string | null;
  variants?: number[] | null;
  bestMarketplacePrice?: MarketplacePriceModel | null;
  rhid?: string | null;
  rollBack?: boolean | null;
  bundle?: boolean | null;
  clearance?: boolean | null;
  preOrder?: boolean | null;
  stock?: string | null;
  attributes: ItemAttributeModel[];
  giftOptions?: GiftOptionsModel | null;
  imageEntities?: ImageEntityModel[] | null;
  offerType?: string | null;
  availableOnline?: boolean | null;
}

export type RecommendationKind = 'POST_BROWSE' | 'NEXT_BEST_PRODUCT';

export type RecommendationSource =
  | 'CO_VIEW'
  | 'CO_PURCHASE'
  | 'CATEGORY'
  | 'DEPARTMENT'
  | 'POPULAR'
  | 'UPSTREAM';

/** A checked filter: every condition given must hold for an item to be listed. Made by
 * toRecommendationFilter (model/recommendationFilter.ts) only; equal filters have equal keys. */
export interface RecommendationFilterModel {
  /** Canonical text of the conditions, for cache keys. */
  readonly key: string;
  /** The same but for the exclusions: what depends on the items alone (lists of passing items) is kept by it. */
  readonly conditionsKey: string;
  /** Whether any condition but the exclusions is set. */
  readonly hasConditions: boolean;
  /** Sorted, without repeats (isExcluded searches them). */
  readonly excludeItemIds: readonly number[];
  readonly inStockOnly: boolean;
  /** Bounds on salePrice, inclusive; an item without a salePrice fails either. */
  readonly minPrice: number | null;
  readonly maxPrice: number | null;
  /** Whole leading segments of the item's categoryPath, without slashes at either end. */
  readonly categoryPath: string | null;
  /** Lower-cased, sorted, without repeats; the item's brandName, lower-cased, must be one of them. */
  readonly brandNames: readonly string[];
  /** Whether an item's brandName, as the record spells it, passes: filled as items are checked. */
  readonly brandsSeen: Map<string, boolean>;
}

export interface RecommendationEntryModel {
  rank: number;
  itemId: number;
  /** The model's score; null for fallbacks and upstream lists. */
  score: number | null;
  /** Sessions, orders or users shared with the anchor; 0 for fallbacks. */
  evidence: number;
  source: RecommendationSource;
}

export interface RecommendationListModel {
  anchorId: number;
  kind: RecommendationKind;
  entries: RecommendationEntryModel[];
  /** Item records returned with the list (REST does), to prime the item loader. */
  items?: ItemModel[];
  /** The filter every entry passes; absent for an unfiltered list. */
  filter?: RecommendationFilterModel;
  /** Set as the list is served (RequestTracking.serve): what names it in events, and the ranking that ordered it. */
  trackingId?: string;
  variant?: string;
}

/** Whom recommendedForYou lists for: a session, a user, or both (their events merged); at least one is set. The ids
 * never reach an answer, a log, a metric or a cache key in clear (model/shopper.ts hashes them). */
export interface ShopperModel {
  sessionId: string | null;
  userId: string | null;
}

export interface ForYouEntryModel extends RecommendationEntryModel {
  /** The shopper's viewed or bought item that brought it; null for a fill. */
  because: number | null;
}

/** A shopper's list: best first. Fields naming the list (tracking, variant) go beside entries. */
export interface ForYouListModel {
  entries: ForYouEntryModel[];
  /** Item records returned with the list, to prime the item loader. */
  items?: ItemModel[];
  /** Set by the resolver: the list's name for attribution and the A/B variant that served it. */
  trackingId?: string;
  variant?: string;
}

/** A list anchored on no item (trending, popular): best first. */
export interface ItemRankingModel {
  /** The score its rule gives (trending's rate rise, popular's event count); null where the upstream does not say. */
  entries: { itemId: number; score: number | null }[];
  /** Item records returned with the list (REST does), to prime the item loader. */
  items?: ItemModel[];
}

export interface RecsService {
  /** Items by id: same length and order as ids, null for unknown (DataLoader's batch contract). */
  getItems(ids: readonly number[], options?: CallOptions): Promise<(ItemModel | null)[]>;
  /** At most 10, most relevant first, never the anchor or its variants; NOT_FOUND for an unknown anchor. With a
   * filter, only items passing it: 10 whenever that many pass (embedded), an empty list when none does. */
  recommend(kind: RecommendationKind, anchorId: number, options?: CallOptions, filter?: RecommendationFilterModel | null): Promise<RecommendationListModel>;
  /** Up to `first` (1..50) items rising most in the last day (docs/recommender.md, "Trending and popular"), under
   * `categoryPath` (null: any); an empty list where nothing rose. Absent (test doubles): asked, it is UPSTREAM_REJECTED. */
  trending?(categoryPath: string | null, first: number, options?: CallOptions): Promise<ItemRankingModel>;
  /** Up to `first` (1..50) items most bought (most viewed for POST_BROWSE) in the window, under `categoryPath`. */
  popular?(kind: RecommendationKind, categoryPath: string | null, first: number, options?: CallOptions): Promise<ItemRankingModel>;
  /** Up to `first` (1..50) items for one shopper from their recent events, passing `filter`; a shopper without events
   * gets the popular items. Absent: asked, it is UPSTREAM_REJECTED. */
  forYou?(shopper: ShopperModel, first: number, options?: CallOptions, filter?: RecommendationFilterModel | null): Promise<ForYouListModel>;
}

/** The recommendation data now, read synchronously, so a change drops only the cached answers it changed. */
export interface RecsNow {
  /** The item's record now; the same object until its record is replaced. */
  item(itemId: number): ItemModel | null;
  recommend(kind: RecommendationKind, anchorId: number, filter?: RecommendationFilterModel | null): RecommendationListModel;
}

export type EventKindModel = 'VIEW' | 'PURCHASE';

/** One checked event; identifiers are opaque and never appear in answers, logs or metrics. */
export interface EventInputModel {
  kind: EventKindModel;
  itemId: number;
  sessionId: string | null;
  userId: string | null;
  orderId: string | null;
  time: number;
  /** The shop's own id: an event seen before is not stored again, so a retried call keeps each event once. */
  eventId?: string | null;
  /** The recommendation list the item was picked from, as its trackingId named it: a click or a conversion. */
  trackingId?: string | null;
}

export interface RecordEventsResultModel {
  accepted: number;
  /** Of them, those whose eventId was seen before; null where unknown (REST mode). */
  duplicates?: number | null;
  /** Items named with no record yet; null where unknown (REST mode). */
  itemsWithoutRecord: number | null;
  /** Where some were duplicates: whether each event of the call was stored (false: stored before), in call order. */
  kept?: readonly boolean[];
}

export interface RecommenderStateModel {
  mode: 'store' | 'demo';
  /** The kind of store it follows, never where it is: /readyz answers anyone. */
  store: 'sqlite' | 'postgresql' | null;
  items: number;
  events: number;
  itemsWithoutRecord: number;
  lastEventId: number;
  lastItemSeq: number;
  followError: string | null;
}

/** What /readyz and metrics say of the process's role (RECS_ROLE) where it is not `all`. */
export interface RoleStateModel {
  role: 'serve' | 'learn';
  /** serve: whether any learner holds the store's learner lock; learn: whether this process does. */
  learnerActive: boolean;
  /** Seconds since the learner last published or said its lists were current; null: never. */
  listsAgeSeconds: number | null;
  /** RECS_MAX_LAG_SECONDS: a serve replica whose lists are older is `degraded`. */
  maxLagSeconds: number;
}

export interface UpsertItemsResultModel {
  upserted: number;
}

/** Events and item records in, administrators only; a call is atomic and answered once durable. */
export interface IngestService {
  recordEvents(principal: PrincipalModel, events: readonly EventInputModel[], options?: CallOptions): Promise<RecordEventsResultModel>;
  upsertItems(principal: PrincipalModel, items: readonly ItemModel[], options?: CallOptions): Promise<UpsertItemsResultModel>;
  /** Where isAdmin does not decide (REST mode): the upstream's last answer for this credential, if any. */
  knownMayIngest?(principal: PrincipalModel): boolean | undefined;
  /** recommendationStats where the counts are the upstream's (REST mode: its GET /v1/stats), asked as the caller. */
  recommendationStats?(principal: PrincipalModel, since: number, until: number | null, options?: CallOptions): Promise<RecommendationStatsModel[]>;
  askMayIngest?(principal: PrincipalModel, options?: CallOptions): Promise<boolean>;
}

export interface Backend {
  keys: KeyService;
  recs: RecsService;
  ingest: IngestService;
  check(): Promise<Record<string, string>>;
  recommender?(): RecommenderStateModel;
  /** Calls `listener` after the data changes, so caches of its answers drop them; absent in REST mode. */
  onDataChange?(listener: () => void): void;
  recsNow?: RecsNow;
  /** RECS_ROLE serve or learn: the role's state; absent for `all`. */
  roleState?(): RoleStateModel;
  close(): Promise<void>;
  breakerState?: () => Record<string, BreakerState>;
  /** Where counts of lists served and used are kept; absent in REST mode. */
  attribution?: AttributionStore;
  /** REST mode: where this front's impressions go, the upstream's counts; absent with a store. */
  listCountSink?: ListCountSink;
}
