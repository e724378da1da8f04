import type { QueryLimits, RateLimitSettings, ServerLimits } from './limits.js';

/** Defaults needed by more than one module, written once: env.ts and callers given no setting share them. */

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

/** Introspection depth past MAX_DEPTH: IDEs' standard introspection query nests deeper; this bounds `ofType` chains. */
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

export const DEFAULT_RESPONSE_CACHE_ENTRIES = 10_000;
export const DEFAULT_RESPONSE_CACHE_BYTES = 64 * 1024 * 1024;
export const RESPONSE_CACHE_SHARE = 64;
export const DEFAULT_MAX_RESPONSE_BYTES = 4 * 1024 * 1024;
export const DEFAULT_PREPARED_DOCUMENTS = 1_000;

export const DEFAULT_ANONYMOUS_BODY_LIMIT_BYTES = 32 * 1024;
export const DEFAULT_INGEST_BODY_LIMIT_BYTES = 8 * 1024 * 1024;
/** Bodies past BODY_LIMIT_BYTES held at once, all requests together (http/body.ts): eight full batches. */
export const LARGE_BODIES_IN_FLIGHT_BYTES = 64 * 1024 * 1024;

export const DEFAULT_MAX_KEYS_PER_USER = 100;

/** RECS_MAX_ITEMS: a bound on a runaway client's item ids, well above a real catalogue; each item costs memory for good. */
export const DEFAULT_MAX_ITEMS = 2_000_000;

export const DEFAULT_CACHE_TTL_SECONDS = { item: 300, recs: 300, negative: 30 } as const;

/** RECS_EVENTS_MAX_AGE_DAYS; `evaluate --max-age-days` shares it, so it measures the model a gateway serves. */
export const DEFAULT_EVENTS_MAX_AGE_DAYS = 90;

/** RECS_NBP_REBUILD_SECONDS: a quiet shop's popularity barely moves between full builds. */
export const DEFAULT_NBP_REBUILD_SECONDS = 600;

/** METRICS_OPERATION_NAMES: client-chosen names become labels, so a cap bounds the series. */
export const DEFAULT_METRICS_OPERATION_NAMES = 100;
/** METRICS_OPERATION_NAMES_PER_USER: one client inventing names takes this many slots, never all. */
export const DEFAULT_METRICS_OPERATION_NAMES_PER_USER = 20;
