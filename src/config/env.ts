import path from 'node:path';
import type { QueryLimits, RateLimitSettings, ServerLimits } from '../ports/limits.js';
import {
  DEFAULT_ANONYMOUS_BODY_LIMIT_BYTES,
  DEFAULT_INGEST_BODY_LIMIT_BYTES,
  DEFAULT_CACHE_TTL_SECONDS,
  DEFAULT_EVENTS_MAX_AGE_DAYS,
  DEFAULT_NBP_REBUILD_SECONDS,
  DEFAULT_LIMITS,
  DEFAULT_MAX_ITEMS,
  DEFAULT_MAX_KEYS_PER_USER,
  DEFAULT_PREPARED_DOCUMENTS,
  DEFAULT_RATE_LIMITS,
  DEFAULT_MAX_RESPONSE_BYTES,
  DEFAULT_METRICS_OPERATION_NAMES,
  DEFAULT_METRICS_OPERATION_NAMES_PER_USER,
  DEFAULT_RESPONSE_CACHE_BYTES,
  DEFAULT_RESPONSE_CACHE_ENTRIES,
  DEFAULT_SERVER_LIMITS,
} from './defaults.js';
import { readManifest, type TrustedDocumentsSettings } from './manifest.js';
import { ConfigError, isAddressPattern, originProblem } from './valueProblems.js';

export { ConfigError };

/**
 * The gateway's configuration: the only reader of environment variables. Every setting, its
 * variable and its default is listed here and in the README's configuration table.
 */
export interface Config {
  /** PORT: the HTTP port. Default 4000; 0 picks a free one. */
  port: number;
  /** HOST: the address to listen on. Default: every interface. */
  host: string | undefined;
  /** NODE_ENV=production turns introspection off and masks internal errors. */
  production: boolean;
  /** BACKEND: `embedded` (default; no other service needed) or `rest`. */
  backend: 'embedded' | 'rest';
  /** DATA_DIR: where the embedded backend keeps its SQLite files. Default `./data`. */
  dataDir: string;
  /**
   * DATABASE_URL: a postgres:// URL puts users and keys in PostgreSQL, so several gateway
   * processes share one store. Default: SQLite in DATA_DIR/keys.db.
   */
  databaseUrl: string | null;
  /**
   * RECS_FOLLOW_INTERVAL_MS: how often the embedded recommender reads what other processes stored
   * (events, item records, imports) after what it has applied; 0: never. Default 250.
   */
  recsFollowIntervalMs: number;
  /**
   * RECS_EVENTS_MAX_AGE_DAYS: events older than this many days before the newest event stop
   * counting in the embedded recommender (ModelOptions.maxAgeDays); 0: never. Default 90.
   */
  recsEventsMaxAgeDays: number;
  /**
   * RECS_NBP_REBUILD_SECONDS: with purchases since, next-best-product's full build is at most this
   * many seconds old (between builds it is kept from the last one's prior statistics: see
   * ModelOptions.nextBestRebuildSeconds); 0: rebuilt after every batch with purchases. Default 600.
   */
  recsNbpRebuildSeconds: number;
  /**
   * RECS_MAX_ITEMS: distinct items the embedded recommender may hold (named by events or records);
   * a call that would add items past it is refused with BAD_USER_INPUT, nothing of it kept. Default 2000000.
   */
  recsMaxItems: number;
  /** REDIS_URL: the shared cache. Default: none (an in-process cache). */
  redisUrl: string | null;
  /** REDIS_KEY_PREFIX: prefix of every key the gateway writes in Redis. Default `recs-gateway:`. */
  redisKeyPrefix: string;
  /**
   * RATE_LIMIT_KEY_SECRET: the key of the HMAC that names the rate limits' buckets in Redis (no
   * client address is written there as it is); the same on every gateway sharing them. Default:
   * none, and a random salt kept in Redis names them, which a copy of Redis holds too.
   */
  rateLimitKeySecret: string | null;
  /** CACHE_ITEM_TTL_SECONDS: how long an item is cached. Default 300. */
  cacheItemTtlSeconds: number;
  /** CACHE_RECS_TTL_SECONDS: how long a recommendation list is cached. Default 300. */
  cacheRecsTtlSeconds: number;
  /** CACHE_NEGATIVE_TTL_SECONDS: how long an unknown item is remembered, 1 to 60. Default 30. */
  cacheNegativeTtlSeconds: number;
  /**
   * RESPONSE_CACHE_MAX_ENTRIES: PUBLIC GraphQL answers kept in process, served to authenticated
   * callers before the GraphQL pipeline (src/graphql/responseCache.ts); 0 turns it off. Default 10000.
   */
  responseCacheMaxEntries: number;
  /**
   * RESPONSE_CACHE_MAX_BYTES: bytes of answers the response cache keeps; an answer over a 64th of
   * it is not kept, so that one answer never evicts many. Default 64 MiB.
   */
  responseCacheMaxBytes: number;
  /**
   * MAX_RESPONSE_BYTES: bytes of item records one GraphQL answer may hold, each record counted
   * whole each time it is answered (src/graphql/answerBudget.ts); past it, QUERY_TOO_COMPLEX.
   * Default 4 MiB.
   */
  maxResponseBytes: number;
  /**
   * PREPARED_OPERATIONS_MAX_DOCUMENTS: exact queries Apollo accepted that the takeover answers
   * again without Apollo's pipeline (src/graphql/takeover.ts); 0 sends every request through
   * Apollo. Default 1000.
   */
  preparedOperationsMaxDocuments: number;
  /** APIKEY_SERVICE_URL: the key service, for BACKEND=rest. */
  apiKeyServiceUrl: string | null;
  /** RECS_SERVICE_URL: the recommendation service, for BACKEND=rest. */
  recsServiceUrl: string | null;
  /** RECS_API_KEY: the gateway's own key for the recommendation service, for BACKEND=rest. */
  recsApiKey: string | null;
  /** REQUEST_DEADLINE_MS: the most a GraphQL request may spend on upstream calls. Default 10000. */
  requestDeadlineMs: number;
  /** BODY_LIMIT_BYTES: the largest request body accepted. Default 1 MiB. */
  bodyLimitBytes: number;
  /**
   * ANONYMOUS_BODY_LIMIT_BYTES: the largest body accepted from a request without credentials
   * (all it may ask is `viewer` and, where allowed, introspection). Default 32 KiB; at most
   * BODY_LIMIT_BYTES.
   */
  anonymousBodyLimitBytes: number;
  /**
   * INGEST_BODY_LIMIT_BYTES: the largest body accepted from a caller who may send events and item
   * records (an administrator; in REST mode, a caller the upstream lets send them, asked before
   * such a body is read): 10,000 events of three 36-character ids each take about 2 MiB. Default
   * 8 MiB; at least BODY_LIMIT_BYTES.
   */
  ingestBodyLimitBytes: number;
  /**
   * TRUST_PROXY: the addresses of the proxies in front of the gateway, comma-separated (IPv4 or
   * IPv6, or CIDR blocks such as 10.0.0.0/8). A request from one of them is counted against the
   * address its X-Forwarded-For names (the last one that is not itself a trusted proxy).
   * Default: none; the peer's address counts.
   */
  trustProxy: string[];
  /**
   * VERIFIED_PASSWORD_TTL_SECONDS: how long a password sign-in, once verified, is trusted without
   * the scrypt work again (kept under a keyed hash, never the password; dropped at once when the
   * user's keys change, and when another process changes the store). 0 turns it off. Default 60.
   */
  verifiedPasswordTtlSeconds: number;
  /** INTROSPECTION: true or false; default on except in production. */
  introspection: boolean;
  /** MAX_DEPTH, MAX_ALIASES, MAX_ALIAS_LENGTH, MAX_DIRECTIVES, MAX_TOKENS, MAX_COST, MAX_SAME_NAME_FIELDS, MAX_TYPE_FIELDS, MAX_INTROSPECTION_COST: see src/ports/limits.ts. */
  limits: QueryLimits;
  /** RATE_LIMIT_RPS, RATE_LIMIT_BURST, RATE_LIMIT_PER_KEY, AUTH_FAILURES_PER_MINUTE, AUTH_KEY_CHECKS_PER_MINUTE, NEW_DOCUMENTS_RPS, NEW_DOCUMENTS_BURST: see src/ports/limits.ts. */
  rateLimits: RateLimitSettings;
  /**
   * OTEL_EXPORTER_OTLP_ENDPOINT: where traces go (OTLP over HTTP, e.g. http://collector:4318).
   * Default: none, and tracing costs nothing.
   */
  otlpEndpoint: string | null;
  /** OTEL_SERVICE_NAME: the service name traces carry. Default `recs-gateway`. */
  serviceName: string;
  /** LOG_LEVEL: pino's level (fatal, error, warn, info, debug, trace, silent); debug or trace also print a failed start's stack. Default `info`. */
  logLevel: string;
  // --- Exposure limits (security review): keys per user, who may read /metrics ---
  /**
   * MAX_KEYS_PER_USER: the most API keys one user may have in the embedded backend (each key is
   * a rate-limit bucket of its own). Default 100.
   */
  maxKeysPerUser: number;
  /**
   * METRICS_TOKEN: when set, GET /metrics needs `Authorization: Bearer <token>` (else 401).
   * Default: none, and /metrics is open (keep it off the public network then).
   */
  metricsToken: string | null;
  /** METRICS_OPERATION_NAMES: operation names /metrics labels at most (later ones are `other`). Default 100. */
  metricsOperationNames: number;
  /**
   * METRICS_OPERATION_NAMES_PER_USER: of those, the names one user may bring in (an
   * administrator's are not counted). Default 20.
   */
  metricsOperationNamesPerUser: number;
  // --- Trusted documents (src/graphql/trustedDocuments.ts) ---
  /**
   * TRUSTED_DOCUMENTS: the path of a persisted-query manifest (Apollo's format, or GraphQL Code
   * Generator's {"<sha256>": "<body>"}); its operations may then be sent as
   * extensions.persistedQuery.sha256Hash alone. TRUSTED_DOCUMENTS_ONLY=true refuses any other
   * operation with PERSISTED_QUERY_NOT_IN_LIST (400). Read at start: a missing file or a
   * malformed manifest stops it. Default: none, and only false.
   */
  trustedDocuments: TrustedDocumentsSettings | null;
  /** The REST backend's upstream settings; each left out takes the default in src/backends/rest/options.ts. */
  upstream: {
    /** UPSTREAM_CONNECT_TIMEOUT_MS, default 2000. */
    connectTimeoutMs?: number;
    /** UPSTREAM_HEADERS_TIMEOUT_MS, default 5000. */
    headersTimeoutMs?: number;
    /** UPSTREAM_BODY_TIMEOUT_MS, default 5000. */
    bodyTimeoutMs?: number;
    /** UPSTREAM_CONNECTIONS per upstream, default 50. */
    connections?: number;
    /** UPSTREAM_RETRIES for GETs, 0 to 2, default 2. */
    retries?: number;
    /** BREAKER_FAILURES in a row that open an upstream's breaker, default 5. */
    breakerFailures?: number;
    /** BREAKER_OPEN_MS before a probe, default 10000. */
    breakerOpenMs?: number;
    /** AUTH_CACHE_TTL_MS: how long a credential the key service accepted is trusted, default 30000. */
    authCacheTtlMs?: number;
  };
  /**
   * CORS_ORIGINS: the origins whose pages may call /graphql and the REST interfaces from a browser,
   * comma-separated, each exactly as a browser sends it (https://app.example, http://localhost:5173),
   * or `*` for any origin (src/http/cors.ts). Default: none, and no answer carries CORS headers.
   */
  corsOrigins: string[] | '*' | null;
  /** How long clients may take to send a request, and how many may be connected; see ServerLimits. */
  server: ServerLimits;
}

/** pino's levels: LOG_LEVEL takes one of them, in any case. */
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

type Env = Record<string, string | undefined>;

/** Reads the configuration from `env` (process.env by default); throws ConfigError listing every bad value. */
export function loadConfig(env: Env = process.env): Config {
  const problems: string[] = [];
  const get = (name: string): string | undefined => {
    const value = env[name]?.trim();
    return value === '' ? undefined : value;
  };
  const int = (name: string, fallback: number, min: number, max: number): number => {
    const raw = get(name);
    if (raw === undefined) return fallback;
    const value = Number(raw);
    if (!/^\d+$/.test(raw) || value < min || value > max) {
      problems.push(`${name} must be a whole number from ${min} to ${max}, got "${raw}"`);
      return fallback;
    }
    return value;
  };
  const bool = (name: string, fallback: boolean): boolean => {
    const raw = get(name)?.toLowerCase();
    if (raw === undefined) return fallback;
    if (['1', 'true', 'yes', 'on'].includes(raw)) return true;
    if (['0', 'false', 'no', 'off'].includes(raw)) return false;
    problems.push(`${name} must be true or false, got "${raw}"`);
    return fallback;
  };
  const url = (name: string, protocols: string[]): string | null => {
    const raw = get(name);
    if (raw === undefined) return null;
    try {
      const parsed = new URL(raw);
      if (!protocols.includes(parsed.protocol)) throw new Error('protocol');
      return raw;
    } catch {
      // the URL may hold a password: name the variable, never echo the value
      problems.push(`${name} must be a URL starting with ${protocols.map((p) => `${p}//`).join(' or ')}`);
      return null;
    }
  };

  const list = (name: string): string[] =>
    (get(name) ?? '')
      .split(',')
      .map((part) => part.trim())
      .filter((part) => part !== '');

  /** A secret compared with a Bearer value: visible ASCII, long enough not to be guessed. */
  const token = (name: string): string | null => {
    const raw = get(name);
    if (raw === undefined) return null;
    if (!/^[\x21-\x7e]{16,1024}$/.test(raw)) {
      // never echo a secret, even a malformed one
      problems.push(`${name} must be 16 to 1024 visible ASCII characters (no spaces)`);
      return null;
    }
    return raw;
  };

  function rateLimits(): RateLimitSettings {
    const defaults = DEFAULT_RATE_LIMITS;
    const rps = int('RATE_LIMIT_RPS', defaults.perPrincipal?.ratePerSecond ?? 0, 0, 1_000_000);
    const burst = int('RATE_LIMIT_BURST', Math.max(defaults.perPrincipal?.burst ?? 0, 2 * rps), 1, 10_000_000);
    const failures = int('AUTH_FAILURES_PER_MINUTE', defaults.authFailures?.burst ?? 0, 0, 100_000);
    const keyChecks = int('AUTH_KEY_CHECKS_PER_MINUTE', defaults.keyChecks?.burst ?? 0, 0, 100_000);
    // per user: twice the per-principal figures unless set; off with it unless set
    const userRps = int('RATE_LIMIT_USER_RPS', rps === 0 ? 0 : 2 * rps, 0, 1_000_000);
    const userBurst = int('RATE_LIMIT_USER_BURST', Math.max(2 * burst, 2 * userRps, 1), 1, 10_000_000);
    const perKey: Record<string, number> = {};
    for (const pair of (get('RATE_LIMIT_PER_KEY') ?? '').split(',').filter((p) => p.trim() !== '')) {
      const match = /^\s*([0-9a-fA-F-]{36})\s*=\s*(\d+)\s*$/.exec(pair);
      if (!match) {
        problems.push(`RATE_LIMIT_PER_KEY must be <key id>=<requests a second> pairs separated by commas, got "${pair.trim()}"`);
        continue;
      }
      perKey[match[1]!.toLowerCase()] = Number(match[2]);
    }
    const newRps = int('NEW_DOCUMENTS_RPS', defaults.newDocuments?.ratePerSecond ?? 0, 0, 100_000);
    const newBurst = int('NEW_DOCUMENTS_BURST', Math.max(defaults.newDocuments?.burst ?? 1, newRps), 1, 1_000_000);
    return {
      perPrincipal: rps === 0 ? null : { ratePerSecond: rps, burst },
      perKey,
      perUser: userRps === 0 ? null : { ratePerSecond: userRps, burst: userBurst },
      authFailures: failures === 0 ? null : { ratePerSecond: failures / 60, burst: failures },
      keyChecks: keyChecks === 0 ? null : { ratePerSecond: keyChecks / 60, burst: keyChecks },
      newDocuments: newRps === 0 ? null : { ratePerSecond: newRps, burst: newBurst },
    };
  }

  /**
   * CORS_ORIGINS: `*`, or origins as a browser sends them in Origin: scheme://host[:port], lower
   * case, no default port, no path (nor a trailing slash), which is what they are compared with.
   * The first bad one is named.
   */
  function corsOrigins(): string[] | '*' | null {
    const origins = list('CORS_ORIGINS');
    if (origins.length === 0) return null;
    if (origins.length === 1 && origins[0] === '*') return '*';
    for (const origin of origins) {
      const problem = originProblem(origin);
      if (problem !== null) {
        problems.push(`CORS_ORIGINS must be * or origins such as https://app.example (scheme://host[:port]) separated by commas: ${problem}`);
        return null;
      }
    }
    return origins;
  }

  // --- Trusted documents ---
  function trustedDocuments(): TrustedDocumentsSettings | null {
    const file = get('TRUSTED_DOCUMENTS');
    const only = bool('TRUSTED_DOCUMENTS_ONLY', false);
    if (file === undefined) {
      if (only) problems.push('TRUSTED_DOCUMENTS_ONLY=true needs TRUSTED_DOCUMENTS, the path of the manifest');
      return null;
    }
    const resolved = path.resolve(file);
    try {
      return { path: resolved, only, operations: readManifest(resolved) };
    } catch (error) {
      problems.push(`TRUSTED_DOCUMENTS: ${(error as Error).message}`);
      return null;
    }
  }

  // --- Log level ---
  // pino throws on a level it does not know, after the configuration was read: a stack trace
  // where a failed start prints one line
  function logLevel(): string {
    const raw = get('LOG_LEVEL');
    if (raw === undefined) return 'info';
    const level = raw.toLowerCase();
    if ((LOG_LEVELS as readonly string[]).includes(level)) return level;
    problems.push(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${raw}"`);
    return 'info';
  }

  const production = get('NODE_ENV') === 'production';
  const backendRaw = get('BACKEND') ?? 'embedded';
  if (backendRaw !== 'embedded' && backendRaw !== 'rest') {
    problems.push(`BACKEND must be embedded or rest, got "${backendRaw}"`);
  }
  const backend = backendRaw === 'rest' ? 'rest' : 'embedded';

  const config: Config = {
    port: int('PORT', 4000, 0, 65535),
    host: get('HOST'),
    production,
    backend,
    dataDir: path.resolve(get('DATA_DIR') ?? 'data'),
    databaseUrl: url('DATABASE_URL', ['postgres:', 'postgresql:']),
    recsFollowIntervalMs: int('RECS_FOLLOW_INTERVAL_MS', 250, 0, 86_400_000),
    recsEventsMaxAgeDays: int('RECS_EVENTS_MAX_AGE_DAYS', DEFAULT_EVENTS_MAX_AGE_DAYS, 0, 36_500),
    recsNbpRebuildSeconds: int('RECS_NBP_REBUILD_SECONDS', DEFAULT_NBP_REBUILD_SECONDS, 0, 86_400),
    recsMaxItems: int('RECS_MAX_ITEMS', DEFAULT_MAX_ITEMS, 1, 1_000_000_000),
    redisUrl: url('REDIS_URL', ['redis:', 'rediss:']),
    redisKeyPrefix: get('REDIS_KEY_PREFIX') ?? 'recs-gateway:',
    rateLimitKeySecret: token('RATE_LIMIT_KEY_SECRET'),
    cacheItemTtlSeconds: int('CACHE_ITEM_TTL_SECONDS', DEFAULT_CACHE_TTL_SECONDS.item, 1, 86_400),
    cacheRecsTtlSeconds: int('CACHE_RECS_TTL_SECONDS', DEFAULT_CACHE_TTL_SECONDS.recs, 1, 86_400),
    cacheNegativeTtlSeconds: int('CACHE_NEGATIVE_TTL_SECONDS', DEFAULT_CACHE_TTL_SECONDS.negative, 1, 60),
    responseCacheMaxEntries: int('RESPONSE_CACHE_MAX_ENTRIES', DEFAULT_RESPONSE_CACHE_ENTRIES, 0, 1_000_000),
    responseCacheMaxBytes: int('RESPONSE_CACHE_MAX_BYTES', DEFAULT_RESPONSE_CACHE_BYTES, 64 * 1024, 16 * 1024 * 1024 * 1024),
    maxResponseBytes: int('MAX_RESPONSE_BYTES', DEFAULT_MAX_RESPONSE_BYTES, 1024, 1024 * 1024 * 1024),
    preparedOperationsMaxDocuments: int('PREPARED_OPERATIONS_MAX_DOCUMENTS', DEFAULT_PREPARED_DOCUMENTS, 0, 100_000),
    apiKeyServiceUrl: url('APIKEY_SERVICE_URL', ['http:', 'https:']),
    recsServiceUrl: url('RECS_SERVICE_URL', ['http:', 'https:']),
    recsApiKey: get('RECS_API_KEY') ?? null,
    requestDeadlineMs: int('REQUEST_DEADLINE_MS', 10_000, 100, 300_000),
    bodyLimitBytes: int('BODY_LIMIT_BYTES', 1024 * 1024, 1024, 64 * 1024 * 1024),
    anonymousBodyLimitBytes: 0,
    ingestBodyLimitBytes: 0,
    trustProxy: list('TRUST_PROXY'),
    verifiedPasswordTtlSeconds: int('VERIFIED_PASSWORD_TTL_SECONDS', 60, 0, 3600),
    introspection: bool('INTROSPECTION', !production),
    limits: {
      maxDepth: int('MAX_DEPTH', DEFAULT_LIMITS.maxDepth, 1, 100),
      maxAliases: int('MAX_ALIASES', DEFAULT_LIMITS.maxAliases, 0, 1000),
      maxAliasLength: int('MAX_ALIAS_LENGTH', DEFAULT_LIMITS.maxAliasLength!, 1, 100_000),
      maxDirectives: int('MAX_DIRECTIVES', DEFAULT_LIMITS.maxDirectives, 0, 1000),
      maxTokens: int('MAX_TOKENS', DEFAULT_LIMITS.maxTokens, 10, 100_000),
      maxCost: int('MAX_COST', DEFAULT_LIMITS.maxCost, 1, 10_000_000),
      maxSameNameFields: int('MAX_SAME_NAME_FIELDS', DEFAULT_LIMITS.maxSameNameFields!, 1, 1000),
      maxTypeFields: int('MAX_TYPE_FIELDS', DEFAULT_LIMITS.maxTypeFields!, 0, 1000),
      maxIntrospectionCost: int('MAX_INTROSPECTION_COST', DEFAULT_LIMITS.maxIntrospectionCost!, 1, 10_000_000),
    },
    rateLimits: rateLimits(),
    otlpEndpoint: url('OTEL_EXPORTER_OTLP_ENDPOINT', ['http:', 'https:']),
    serviceName: get('OTEL_SERVICE_NAME') ?? 'recs-gateway',
    logLevel: logLevel(),
    upstream: {},
    server: {
      headersTimeoutMs: int('HEADERS_TIMEOUT_MS', DEFAULT_SERVER_LIMITS.headersTimeoutMs, 100, 600_000),
      requestTimeoutMs: int('REQUEST_TIMEOUT_MS', DEFAULT_SERVER_LIMITS.requestTimeoutMs, 100, 3_600_000),
      keepAliveTimeoutMs: int('KEEP_ALIVE_TIMEOUT_MS', DEFAULT_SERVER_LIMITS.keepAliveTimeoutMs, 1, 600_000),
      maxConnections: int('MAX_CONNECTIONS', DEFAULT_SERVER_LIMITS.maxConnections, 0, 1_000_000),
      maxConnectionsPerAddress: int('MAX_CONNECTIONS_PER_ADDRESS', DEFAULT_SERVER_LIMITS.maxConnectionsPerAddress, 0, 1_000_000),
      lingerBytesPerSecond: int('LINGER_BYTES_PER_SECOND', DEFAULT_SERVER_LIMITS.lingerBytesPerSecond, 0, 1024 * 1024 * 1024),
    },
    // --- Exposure limits (security review) ---
    maxKeysPerUser: int('MAX_KEYS_PER_USER', DEFAULT_MAX_KEYS_PER_USER, 1, 1_000_000),
    metricsToken: token('METRICS_TOKEN'),
    metricsOperationNames: int('METRICS_OPERATION_NAMES', DEFAULT_METRICS_OPERATION_NAMES, 0, 100_000),
    metricsOperationNamesPerUser: int('METRICS_OPERATION_NAMES_PER_USER', DEFAULT_METRICS_OPERATION_NAMES_PER_USER, 0, 100_000),
    trustedDocuments: trustedDocuments(),
    corsOrigins: corsOrigins(),
  };
  config.ingestBodyLimitBytes = Math.max(config.bodyLimitBytes, int('INGEST_BODY_LIMIT_BYTES', DEFAULT_INGEST_BODY_LIMIT_BYTES, 1024, 256 * 1024 * 1024));
  config.anonymousBodyLimitBytes = Math.min(config.bodyLimitBytes, int('ANONYMOUS_BODY_LIMIT_BYTES', DEFAULT_ANONYMOUS_BODY_LIMIT_BYTES, 1024, 64 * 1024 * 1024));
  for (const proxy of config.trustProxy) if (!isAddressPattern(proxy)) problems.push(`TRUST_PROXY must list IP addresses or CIDR blocks, got "${proxy}"`);
  // node refuses a headers timeout longer than the whole request's
  if (config.server.headersTimeoutMs > config.server.requestTimeoutMs) {
    problems.push(`HEADERS_TIMEOUT_MS (${config.server.headersTimeoutMs}) must not be more than REQUEST_TIMEOUT_MS (${config.server.requestTimeoutMs})`);
  }
  const optionalInt = (name: string, min: number, max: number): number | undefined =>
    get(name) === undefined ? undefined : int(name, 0, min, max);
  const upstream = {
    connectTimeoutMs: optionalInt('UPSTREAM_CONNECT_TIMEOUT_MS', 1, 60_000),
    headersTimeoutMs: optionalInt('UPSTREAM_HEADERS_TIMEOUT_MS', 1, 300_000),
    bodyTimeoutMs: optionalInt('UPSTREAM_BODY_TIMEOUT_MS', 1, 300_000),
    connections: optionalInt('UPSTREAM_CONNECTIONS', 1, 1024),
    retries: optionalInt('UPSTREAM_RETRIES', 0, 2),
    breakerFailures: optionalInt('BREAKER_FAILURES', 1, 1000),
    breakerOpenMs: optionalInt('BREAKER_OPEN_MS', 10, 600_000),
    authCacheTtlMs: optionalInt('AUTH_CACHE_TTL_MS', 0, 3_600_000),
  };
  for (const [name, value] of Object.entries(upstream)) {
    if (value !== undefined) (config.upstream as Record<string, number>)[name] = value;
  }
  if (backend === 'rest') {
    for (const [name, value] of [
      ['APIKEY_SERVICE_URL', config.apiKeyServiceUrl],
      ['RECS_SERVICE_URL', config.recsServiceUrl],
      ['RECS_API_KEY', config.recsApiKey],
    ] as const) {
      if (value === null && !problems.some((p) => p.startsWith(name))) problems.push(`${name} is required when BACKEND=rest`);
    }
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return config;
}
