import type { BreakerState } from './observers.js';

/**
 * What resolvers see of a backend. Two implementations stand behind these interfaces: the
 * embedded one (src/backends/embedded/) and the REST one (src/backends/rest/); which serves is
 * decided once, at start-up, from config. Both throw the errors of src/errors.ts and nothing else.
 */

/** A user as the key store knows it. */
export interface UserModel {
  /** UUID; null where the backend does not say (REST mode before the user has a key). */
  id: string | null;
  /** null where it is not known (REST mode, authenticated by key). */
  username: string | null;
  domain: string | null;
  isAdmin: boolean;
}

export type AuthMethod = 'API_KEY' | 'PASSWORD';

/** Who a request is made by: the result of authenticating its Authorization header. */
export interface PrincipalModel {
  user: UserModel;
  authenticatedBy: AuthMethod;
  /** The key's id when authenticated by key. */
  keyId: string | null;
  /**
   * SHA-256 of the Authorization value, hex: safe to use in cache keys and logs where one must
   * tell credentials apart. The raw value never leaves the request.
   */
  credentialId: string;
  /** The raw Authorization value, for forwarding to the key service in REST mode only. */
  readonly authorization: string;
}

/** An API key's metadata; never the key value or its hash. */
export interface ApiKeyModel {
  id: string;
  userId: string;
  name: string;
  createdAt: Date | null;
  expiresAt: Date | null;
  lastUsedAt: Date | null;
}

export interface CreateApiKeyInput {
  username?: string | null;
  userDomain?: string | null;
  name?: string | null;
  expiresInDays?: number | null;
}

/** The create response: the only place a key value ever appears. */
export interface CreatedApiKeyModel {
  ok: true;
  id: string;
  key: string;
  apiKey: ApiKeyModel;
}

/** Names another user, for administrators. */
export interface UserRef {
  username: string;
  domain: string | null;
}

/** Per-call options every backend method takes last. */
export interface CallOptions {
  /**
   * Aborted when the GraphQL request's overall deadline passes or the client goes away; the REST
   * backend stops waiting then (UPSTREAM_UNAVAILABLE), the embedded one may ignore it.
   */
  signal?: AbortSignal;
  /**
   * The caller's address (or a proxy chain, `client, proxy1, ...`, as the gateway trusts it),
   * forwarded as X-Forwarded-For where the REST backend passes the caller's credentials on to the
   * key service, whose own per-address limits then count the caller rather than the gateway.
   * Sent as given; leave it out to send none. The embedded backend ignores it.
   */
  clientAddress?: string;
  /**
   * Whether anyone still waits for the answer, for a call made on behalf of several requests (the
   * rate limiter's one sign-in for a credential sent again from one address): where given, it
   * decides instead of the signal whether the caller has gone (ports/callSignal.ts callerOf).
   */
  waiting?(): boolean;
  /**
   * Called just before a credential is sent to be checked (REST mode's key service, on a miss of
   * what it remembers; once for requests that share the check): it may reject (RATE_LIMITED), and
   * then nothing is sent. The rate limiter bounds what failures cost the key service with it.
   */
  beforeCheck?(): Promise<void>;
}

/** The key service's name in errors (extensions.service) and metrics. */
export const KEY_SERVICE = 'apikeys';
/** The recommendation service's name in errors (extensions.service) and metrics. */
export const RECS_SERVICE = 'recommendations';

/** The API key interface (api-keys.md, upstream-facts.md). */
export interface KeyService {
  /**
   * Authenticates an Authorization header value: `<key>`, `Bearer <key>` or
   * `Basic base64(user[@domain]:password)`. Throws UNAUTHENTICATED, with no hint which part was wrong.
   */
  authenticate(authorization: string, options?: CallOptions): Promise<PrincipalModel>;
  /**
   * What authenticate would resolve with, when the service can vouch for the credential without
   * waiting (it was verified before and is still trusted); undefined otherwise, never an error:
   * authenticate answers every other case. Optional; the hot path of a cached answer uses it.
   * `connection` is the one the value came on (its socket), where a keep-alive client's repeated
   * value need not be hashed again.
   */
  authenticateKnown?(authorization: string, connection?: object): PrincipalModel | undefined;
  /**
   * The same where vouching takes a short wait (a store whose data version is a query): the
   * principal of a credential verified before and still trusted, undefined for any other, never
   * an error from the credential (a store's failure rejects). The rate limiter asks it before it
   * counts a password sign-in as an attempt.
   */
  authenticateVerified?(authorization: string): Promise<PrincipalModel | undefined>;
  /**
   * True when authenticate checks a key without a network call (a local store). Where false or
   * absent, the rate limiter bounds the checks of an address's unknown keys that reach the key
   * service apart (CallOptions.beforeCheck, AUTH_KEY_CHECKS_PER_MINUTE); a valid key is checked
   * from an address locked out by failures either way.
   */
  readonly checksKeysLocally?: boolean;
  /** The keys of the principal, or of `of` for an administrator; sorted by name. */
  listKeys(principal: PrincipalModel, of?: UserRef | null, options?: CallOptions): Promise<ApiKeyModel[]>;
  /** Creates a key; BAD_USER_INPUT for a bad name or unknown user, FORBIDDEN for another user's. */
  createKey(principal: PrincipalModel, input: CreateApiKeyInput, options?: CallOptions): Promise<CreatedApiKeyModel>;
  /** Deletes a key; NOT_FOUND for an unknown id and for another user's key alike. */
  deleteKey(principal: PrincipalModel, id: string, options?: CallOptions): Promise<void>;
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

/**
 * An item record of recommendations.md, normalised: numbers as numbers (customerRating parsed from
 * its text), attributes as name/value pairs, absent fields absent. Made by parseItemRecord only.
 */
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

/** One recommended item and why. */
export interface RecommendationEntryModel {
  /** 1 for the most relevant. */
  rank: number;
  itemId: number;
  /** The model's score; null for fallbacks and upstream lists. */
  score: number | null;
  /** Sessions, orders or users shared with the anchor; 0 for fallbacks. */
  evidence: number;
  source: RecommendationSource;
}

/** A recommendation list: at most 10 entries, most relevant first. */
export interface RecommendationListModel {
  anchorId: number;
  kind: RecommendationKind;
  entries: RecommendationEntryModel[];
  /**
   * Item records the backend returned along with the list (the REST interface does), so the
   * item loader can be primed with them instead of asking again.
   */
  items?: ItemModel[];
}

/** The product recommendation interface (recommendations.md, upstream-facts.md). */
export interface RecsService {
  /**
   * Items by id: same length and order as ids, null for an unknown id (DataLoader's batch
   * contract). At most 100 ids; the REST implementation splits them into calls of 20.
   */
  getItems(ids: readonly number[], options?: CallOptions): Promise<(ItemModel | null)[]>;
  /**
   * At most 10 entries, most relevant first, never the anchor or its variants. NOT_FOUND for an
   * unknown anchor; an empty list when there is nothing to recommend.
   */
  recommend(kind: RecommendationKind, anchorId: number, options?: CallOptions): Promise<RecommendationListModel>;
}

/**
 * The recommendation service's data as it is at this instant, read synchronously: what the response
 * cache checks a kept answer's sources against after a change (Backend.onDataChange), so that a
 * change drops only the answers it changed. The embedded backend's; absent in REST mode.
 */
export interface RecsNow {
  /** The item's record now; null for an unknown id. The same object until its record is replaced. */
  item(itemId: number): ItemModel | null;
  /** The list recommend gives now (with its items); throws as recommend does (NOT_FOUND). */
  recommend(kind: RecommendationKind, anchorId: number): RecommendationListModel;
}

/** What a shopper did, as the live-recommender API takes it (issue 20's contract). */
export type EventKindModel = 'VIEW' | 'PURCHASE';

/**
 * One event of recordEvents / POST /v1/events after checkEvents (src/ports/ingest.ts): the
 * identifiers are opaque strings that never appear in answers, logs or metrics; time in ms since
 * the epoch (now when the caller gave none).
 */
export interface EventInputModel {
  kind: EventKindModel;
  itemId: number;
  sessionId: string | null;
  userId: string | null;
  orderId: string | null;
  time: number;
  /**
   * The shop's own id for the event (opaque, like the others): one the store has taken before is
   * not stored again, so that a call sent again after its answer was lost keeps each event once.
   */
  eventId?: string | null;
}

export interface RecordEventsResultModel {
  /** The call's events, all taken: those stored now and the duplicates. */
  accepted: number;
  /** Of them, those whose eventId was taken before (or earlier in the call), not stored again; null where unknown (REST mode). */
  duplicates?: number | null;
  /** Items the events name that still have no record (they shape the model, but are not shown); null where unknown (REST mode). */
  itemsWithoutRecord: number | null;
}

/** What /readyz shows of an embedded recommender (see EmbeddedRecs.state). */
export interface RecommenderStateModel {
  /** 'store': the stored catalogue; 'demo': the demo shop, the store having no catalogue yet. */
  mode: 'store' | 'demo';
  /** The kind of store it follows (never where it is: /readyz answers anyone); null without one. */
  store: 'sqlite' | 'postgresql' | null;
  items: number;
  events: number;
  itemsWithoutRecord: number;
  lastEventId: number;
  lastItemSeq: number;
  followError: string | null;
}

export interface UpsertItemsResultModel {
  upserted: number;
}

/**
 * The live-recommender interface: events and item records in, for administrators only (FORBIDDEN
 * otherwise). A call is atomic (every entry checked before any is kept) and answered after it is
 * durable. The embedded backend stores and applies them; REST mode forwards them to the upstream's
 * POST /v1/events and PUT /v1/items with the caller's credentials.
 */
export interface IngestService {
  recordEvents(principal: PrincipalModel, events: readonly EventInputModel[], options?: CallOptions): Promise<RecordEventsResultModel>;
  upsertItems(principal: PrincipalModel, items: readonly ItemModel[], options?: CallOptions): Promise<UpsertItemsResultModel>;
  /**
   * Where the principal's isAdmin does not say who may send events and item records (REST mode:
   * the upstream decides): true or false as the upstream last answered for this credential
   * (remembered for AUTH_CACHE_TTL_MS), undefined when it has not. Absent: isAdmin says.
   */
  knownMayIngest?(principal: PrincipalModel): boolean | undefined;
  /** With knownMayIngest: asks the upstream, by a call that changes nothing, and remembers its answer. */
  askMayIngest?(principal: PrincipalModel, options?: CallOptions): Promise<boolean>;
}

/** A backend: its interfaces, and how to release what it holds. */
export interface Backend {
  keys: KeyService;
  recs: RecsService;
  ingest: IngestService;
  /** Reachability of what it depends on, for /readyz: 'ok', or why not, by name. */
  check(): Promise<Record<string, string>>;
  /** The embedded recommender's state, for /readyz (what it serves, how many items lack a record). */
  recommender?(): RecommenderStateModel;
  /**
   * Calls `listener` after the items or recommendations it answers change (events and records
   * applied, from this process or another): caches of its answers drop them. Absent where they
   * change elsewhere (REST mode: the upstream's, cached for their TTL).
   */
  onDataChange?(listener: () => void): void;
  /** The data now, for checking cached answers after onDataChange; absent where onDataChange is absent. */
  recsNow?: RecsNow;
  close(): Promise<void>;
  /** The circuit breakers of its upstreams, by upstream, for /metrics; absent where there are none. */
  breakerState?: () => Record<string, BreakerState>;
}
