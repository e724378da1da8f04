import type { QueryLimits, RateLimitSettings, ServerLimits } from '../ports/limits.js';

/**
 * Every default of a setting that more than one module needs, written once: src/config/env.ts
 * falls back to them, and a module given no setting (a test, an embedding) takes the same.
 */

export const DEFAULT_LIMITS: QueryLimits = {
  maxDepth: 10,
  maxAliases: 30,
  maxAliasLength: 100,
  maxDirectives: 20,
  maxTokens: 2000,
  maxCost: 5000,
  maxSameNameFields: 10,
  maxTypeFields: 5,
  maxIntrospectionCost: 10_000,
};

/**
 * How deep an introspection field's selection (`__schema`, `__type`, counted from that field)
 * may nest when MAX_DEPTH is lower: the query graphql-js's getIntrospectionQuery writes, which
 * GraphiQL, Apollo Sandbox and the code generators send, nests 15 deep (its type references 8
 * `ofType` down), past MAX_DEPTH's 10. Its fan-out is graphql-js's MaxIntrospectionDepthRule's
 * to bound (lists of types within lists of types, 3 deep at most), its size MAX_COST's and
 * MAX_TOKENS'; this bounds a chain of `ofType`.
 */
export const INTROSPECTION_MAX_DEPTH = 20;

export const DEFAULT_RATE_LIMITS: RateLimitSettings = {
  perPrincipal: { ratePerSecond: 50, burst: 100 },
  perKey: {},
  perUser: { ratePerSecond: 100, burst: 200 },
  authFailures: { ratePerSecond: 10 / 60, burst: 10 },
  keyChecks: { ratePerSecond: 1, burst: 60 },
  newDocuments: { ratePerSecond: 5, burst: 20 },
};

export const DEFAULT_SERVER_LIMITS: ServerLimits = {
  headersTimeoutMs: 5_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000,
  maxConnections: 1024,
  maxConnectionsPerAddress: 128,
  lingerBytesPerSecond: 1024 * 1024,
};

/** RESPONSE_CACHE_MAX_ENTRIES: PUBLIC answers kept in process. */
export const DEFAULT_RESPONSE_CACHE_ENTRIES = 10_000;
/**
 * RESPONSE_CACHE_MAX_BYTES: bytes of PUBLIC answers kept in process; an answer over a
 * RESPONSE_CACHE_SHARE-th of it is not kept, so that one answer never evicts many.
 */
export const DEFAULT_RESPONSE_CACHE_BYTES = 64 * 1024 * 1024;
export const RESPONSE_CACHE_SHARE = 64;
/** MAX_RESPONSE_BYTES: bytes of item records one GraphQL answer may hold (src/graphql/answerBudget.ts). */
export const DEFAULT_MAX_RESPONSE_BYTES = 4 * 1024 * 1024;
/** PREPARED_OPERATIONS_MAX_DOCUMENTS: query texts kept parsed and validated for the fast path. */
export const DEFAULT_PREPARED_DOCUMENTS = 1_000;

/** ANONYMOUS_BODY_LIMIT_BYTES: the largest body of a request without credentials. */
export const DEFAULT_ANONYMOUS_BODY_LIMIT_BYTES = 32 * 1024;
/** INGEST_BODY_LIMIT_BYTES: what an administrator may send (batches of events and item records). */
export const DEFAULT_INGEST_BODY_LIMIT_BYTES = 8 * 1024 * 1024;
/** Bodies past BODY_LIMIT_BYTES held at once, all requests together (http/body.ts LargeBodies): eight full batches. */
export const LARGE_BODIES_IN_FLIGHT_BYTES = 64 * 1024 * 1024;

/** MAX_KEYS_PER_USER: API keys one user may have in the embedded backend. */
export const DEFAULT_MAX_KEYS_PER_USER = 100;

/**
 * RECS_MAX_ITEMS: distinct items (named by events or records) the embedded recommender may hold;
 * a batch that would add items past it is refused. Each costs about 1.1 KB for as long as the
 * process runs, whether a record ever comes; the 10-million-event build (README) held 881,642
 * items in 1,061 MB of RSS. Two million is over twice the largest log measured, and about 2.2 GB
 * of items alone: a bound on a runaway client's ids, not on a real catalogue.
 */
export const DEFAULT_MAX_ITEMS = 2_000_000;

/** CACHE_ITEM_TTL_SECONDS, CACHE_RECS_TTL_SECONDS, CACHE_NEGATIVE_TTL_SECONDS: how long the REST backend's answers are cached. */
export const DEFAULT_CACHE_TTL_SECONDS = { item: 300, recs: 300, negative: 30 } as const;

/**
 * RECS_EVENTS_MAX_AGE_DAYS: events older than this many days before the newest event stop
 * counting in the embedded recommender; `evaluate --max-age-days` takes the same default, so that
 * it measures the model a gateway serves.
 */
export const DEFAULT_EVENTS_MAX_AGE_DAYS = 90;

/**
 * RECS_NBP_REBUILD_SECONDS: next-best-product is kept between full builds from the prior
 * statistics of the last one (recommender/live.ts); with purchases since, it is built whole again
 * (in a worker) after at most this many seconds, sooner when they exceed 5% of those it counted.
 * Ten minutes: a quiet shop's popularity and category figures barely move in that time.
 */
export const DEFAULT_NBP_REBUILD_SECONDS = 600;

/**
 * METRICS_OPERATION_NAMES: distinct operation names /metrics carries as label values (later ones
 * are `other`): the names come from clients, and the cap bounds the series whatever they send.
 */
export const DEFAULT_METRICS_OPERATION_NAMES = 100;
/**
 * METRICS_OPERATION_NAMES_PER_USER: of those, the names one user (all their keys and sign-ins)
 * may bring in; an administrator's are not counted. One client inventing names takes this many
 * slots, never all of them.
 */
export const DEFAULT_METRICS_OPERATION_NAMES_PER_USER = 20;
