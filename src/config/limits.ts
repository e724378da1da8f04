/** The limits every part agrees on; deployment defaults live in src/config/defaults.ts. */

/** Most recommendations one list holds, on both GraphQL and REST. */
export const MAX_RECOMMENDATIONS = 10;

/** Candidates a filtered lookup's last tier looks at, at most: a filter that few of them pass may give a short list. */
export const FILTERED_SCAN_LIMIT = 20_000;

/** What a list with a filter adds to MAX_COST: its first walk under new conditions may check FILTERED_SCAN_LIMIT
 * candidates, one cost unit per 40, so that a page may hold a few filtered lists but not dozens of aliases of them. */
export const FILTERED_LIST_COST = FILTERED_SCAN_LIMIT / 40;

/** Most item ids one request may look up (`items`, `_entities`, one loader batch). */
export const MAX_ITEM_IDS = 100;

/** Limits on what one operation may ask for, checked once per distinct document before it runs. */
export interface QueryLimits {
  /** MAX_DEPTH: field nesting; default 10. Introspection counts apart (src/graphql/pipeline/limits.ts). */
  maxDepth: number;
  /** MAX_ALIASES: aliased fields in one operation; default 30. */
  maxAliases: number;
  /** MAX_ALIAS_LENGTH; default 100. An alias is repeated per value, so a long one inflates lists. */
  maxAliasLength?: number;
  /** MAX_DIRECTIVES: directives in one operation; default 20. */
  maxDirectives: number;
  /** MAX_TOKENS: lexical tokens in a document; default 2000. */
  maxTokens: number;
  /** MAX_COST: fields weighted by how often they run (a list costs its `first`, a filtered one FILTERED_LIST_COST more); default 5000. */
  maxCost: number;
  /** MAX_SAME_NAME_FIELDS: same-name fields in one selection set; default 10. Validation is quadratic in it. */
  maxSameNameFields?: number;
  /** MAX_TYPE_FIELDS: `__type` fields in one operation, fragment spreads counted; default 5. */
  maxTypeFields?: number;
  /** MAX_INTROSPECTION_COST: fields introspection answers, counted on the schema; default 10000. */
  maxIntrospectionCost?: number;
}

/** A token bucket: at most `burst` tokens, refilled `ratePerSecond` a second. */
export interface BucketLimit {
  ratePerSecond: number;
  burst: number;
}

/** Request rate limits; a user's keys share one bucket, so more keys buy no more requests. */
export interface RateLimitSettings {
  /** RATE_LIMIT_RPS / RATE_LIMIT_BURST: per key, user or address; default 50/s, burst 100; 0 (null) off. */
  perPrincipal: BucketLimit | null;
  /** RATE_LIMIT_PER_KEY: `<keyId>=<rps>,…`, burst twice the rate, 0 exempts; default none. */
  perKey: Readonly<Record<string, number>>;
  /** RATE_LIMIT_USER_RPS / _BURST: per user over all keys; default twice per-principal; absent: off. */
  perUser?: BucketLimit | null;
  /** AUTH_FAILURES_PER_MINUTE: failed sign-ins per address and per username; default 10; 0 (null) off. */
  authFailures: BucketLimit | null;
  /** AUTH_KEY_CHECKS_PER_MINUTE: remote key checks finding no valid key, per address; default 60. */
  keyChecks?: BucketLimit | null;
  /** NEW_DOCUMENTS_RPS / _BURST: query texts parsed afresh per user or address; default 5/s, burst 20. */
  newDocuments?: BucketLimit | null;
}

/** What a slow or greedy client may hold; node's own defaults let a few slowloris sockets hold the process. */
export interface ServerLimits {
  /** HEADERS_TIMEOUT_MS: time to send the headers, then 408; default 5000. */
  headersTimeoutMs: number;
  /** REQUEST_TIMEOUT_MS: time to send headers and body, at least HEADERS_TIMEOUT_MS; default 30000. */
  requestTimeoutMs: number;
  /** KEEP_ALIVE_TIMEOUT_MS: idle keep-alive time; set above a load balancer's idle timeout; default 5000. */
  keepAliveTimeoutMs: number;
  /** MAX_CONNECTIONS: open connections at most, 0 no cap; default 1024. */
  maxConnections: number;
  /** MAX_CONNECTIONS_PER_ADDRESS: per IPv4 address or IPv6 /64, trusted proxies exempt; default 128. */
  maxConnectionsPerAddress: number;
  /** LINGER_BYTES_PER_SECOND: refused-body bytes a client network may drain (src/http/linger.ts); 0 none; default 1048576. */
  lingerBytesPerSecond: number;
}
