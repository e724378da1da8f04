import path from 'node:path';
import type { QueryLimits, RateLimitSettings, ServerLimits } from './limits.js';
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
import { parseExperiment, type Experiment } from '../model/experiment.js';
import { readManifest, type TrustedDocumentsSettings } from './manifest.js';
import { ConfigError, isAddressPattern, originProblem } from './valueProblems.js';

export { ConfigError };

/** The gateway's configuration; env.ts is the only reader of environment variables (README lists them). */
export interface Config {
  /** PORT: the HTTP port. Default 4000; 0 picks a free one. */
  port: number;
  /** HOST: the address to listen on. Default: every interface. */
  host: string | undefined;
  /** NODE_ENV=production: introspection off, internal errors masked. */
  production: boolean;
  /** BACKEND: `embedded` (default) or `rest`. */
  backend: 'embedded' | 'rest';
  /** DATA_DIR: the embedded backend's SQLite files; default `./data`. */
  dataDir: string;
  /** DATABASE_URL: postgres:// shares users and keys between processes; default SQLite in DATA_DIR. */
  databaseUrl: string | null;
  /** RECS_ROLE: `all` (default: one process does everything), `serve` (answers from published lists), `learn` (keeps the model, publishes lists); see docs/scaling.md. */
  recsRole: RecsRole;
  /** RECS_MAX_LAG_SECONDS: a serve replica whose lists are older reports `degraded`; default 60. */
  recsMaxLagSeconds: number;
  /** RECS_FOLLOW_INTERVAL_MS: how often to read what other processes stored; 0 never; default 250. */
  recsFollowIntervalMs: number;
  /** RECS_EVENTS_MAX_AGE_DAYS: older events stop counting; 0 never; default 90. */
  recsEventsMaxAgeDays: number;
  /** RECS_NBP_REBUILD_SECONDS: most age of next-best-product's full build; 0 after every batch; default 600. */
  recsNbpRebuildSeconds: number;
  /** RECS_MAX_ITEMS: distinct items held; a call past it is refused whole; default 2000000. */
  recsMaxItems: number;
  /** RECS_EXPERIMENT: variant B's ranking and its share of shoppers (docs/attribution.md); default none, every list A. */
  recsExperiment: Experiment | null;
  /** RECS_TRACKING_SECRET: signs trackingIds; default a secret the store keeps (REST mode: set the upstream's). */
  recsTrackingSecret: string | null;
  /** REDIS_URL: the shared cache; default none (in process). */
  redisUrl: string | null;
  /** REDIS_CLUSTER_NODES: a Redis Cluster's seed nodes instead, as `redis://` URLs; default none. */
  redisClusterNodes: string[] | null;
  /** REDIS_KEY_PREFIX; default `recs-gateway:`. */
  redisKeyPrefix: string;
  /** RATE_LIMIT_KEY_SECRET: HMAC key so no address is stored plain in Redis; default a random salt kept there. */
  rateLimitKeySecret: string | null;
  /** CACHE_ITEM_TTL_SECONDS; default 300. */
  cacheItemTtlSeconds: number;
  /** CACHE_RECS_TTL_SECONDS; default 300. */
  cacheRecsTtlSeconds: number;
  /** CACHE_NEGATIVE_TTL_SECONDS: unknown items, 1 to 60; default 30. */
  cacheNegativeTtlSeconds: number;
  /** RESPONSE_CACHE_MAX_ENTRIES: PUBLIC answers kept in process; 0 off; default 10000. */
  responseCacheMaxEntries: number;
  /** RESPONSE_CACHE_MAX_BYTES: an answer over a 64th is not kept; default 64 MiB. */
  responseCacheMaxBytes: number;
  /** MAX_RESPONSE_BYTES: item record bytes one answer may hold, else QUERY_TOO_COMPLEX; default 4 MiB. */
  maxResponseBytes: number;
  /** PREPARED_OPERATIONS_MAX_DOCUMENTS: queries the takeover answers without Apollo; 0 off; default 1000. */
  preparedOperationsMaxDocuments: number;
  /** APIKEY_SERVICE_URL, for BACKEND=rest. */
  apiKeyServiceUrl: string | null;
  /** RECS_SERVICE_URL, for BACKEND=rest. */
  recsServiceUrl: string | null;
  /** RECS_API_KEY: the gateway's own key for the recommendation service. */
  recsApiKey: string | null;
  /** REQUEST_DEADLINE_MS: most a request may spend upstream; default 10000. */
  requestDeadlineMs: number;
  /** BODY_LIMIT_BYTES; default 1 MiB. */
  bodyLimitBytes: number;
  /** ANONYMOUS_BODY_LIMIT_BYTES: without credentials little may be asked; default 32 KiB, at most BODY_LIMIT_BYTES. */
  anonymousBodyLimitBytes: number;
  /** INGEST_BODY_LIMIT_BYTES: for callers who may send events and records; default 8 MiB, at least BODY_LIMIT_BYTES. */
  ingestBodyLimitBytes: number;
  /** TRUST_PROXY: proxy addresses or CIDR blocks whose X-Forwarded-For is believed; default none. */
  trustProxy: string[];
  /** VERIFIED_PASSWORD_TTL_SECONDS: a verified password skips scrypt this long (keyed hash); 0 off; default 60. */
  verifiedPasswordTtlSeconds: number;
  /** INTROSPECTION; default on except in production. */
  introspection: boolean;
  /** MAX_DEPTH, MAX_COST and the other query limits: see src/config/limits.ts. */
  limits: QueryLimits;
  /** RATE_LIMIT_* , AUTH_* and NEW_DOCUMENTS_* limits: see src/config/limits.ts. */
  rateLimits: RateLimitSettings;
  /** OTEL_EXPORTER_OTLP_ENDPOINT: OTLP over HTTP; default none, and tracing costs nothing. */
  otlpEndpoint: string | null;
  /** OTEL_SERVICE_NAME; default `recs-gateway`. */
  serviceName: string;
  /** LOG_LEVEL: pino's level; debug or trace also print a failed start's stack; default `info`. */
  logLevel: string;
  /** MAX_KEYS_PER_USER: each key is its own rate-limit bucket; default 100. */
  maxKeysPerUser: number;
  /** METRICS_TOKEN: GET /metrics needs `Bearer <token>`; default none, /metrics open. */
  metricsToken: string | null;
  /** METRICS_OPERATION_NAMES: later names are labelled `other`; default 100. */
  metricsOperationNames: number;
  /** METRICS_OPERATION_NAMES_PER_USER; administrators not counted; default 20. */
  metricsOperationNamesPerUser: number;
  /** TRUSTED_DOCUMENTS(_ONLY): a persisted-query manifest, read at start; only: refuse unlisted operations; default none. */
  trustedDocuments: TrustedDocumentsSettings | null;
  /** The REST backend's upstream settings; defaults in src/backends/rest/options.ts. */
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
    /** AUTH_CACHE_TTL_MS: how long an accepted credential is trusted, default 30000. */
    authCacheTtlMs?: number;
  };
  /** CORS_ORIGINS: origins exactly as browsers send them, or `*`; default none, no CORS headers. */
  corsOrigins: string[] | '*' | null;
  /** Client timeouts and connection caps; see ServerLimits. */
  server: ServerLimits;
}

/** RECS_ROLE's values: the names are a contract (issue 43). */
export const RECS_ROLES = ['all', 'serve', 'learn'] as const;
export type RecsRole = (typeof RECS_ROLES)[number];

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

type Env = Record<string, string | undefined>;

/** Reads the configuration from `env`; throws ConfigError listing every bad value. */
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

  /** Seed nodes as ioredis's Cluster takes them: `host:port` or `redis[s]://[user:password@]host:port`,
   * comma-separated; one scheme and one user/password for all, since they hold for every node found. */
  const clusterNodes = (name: string): string[] | null => {
    const entries = list(name);
    if (entries.length === 0) return null;
    const urls: URL[] = [];
    for (const [i, entry] of entries.entries()) {
      try {
        const parsed = new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(entry) ? entry : `redis://${entry}`);
        if (!['redis:', 'rediss:'].includes(parsed.protocol) || parsed.hostname === '' || (parsed.pathname !== '' && parsed.pathname !== '/')) throw new Error('form');
        urls.push(parsed);
      } catch {
        // an entry may hold a password: name its place, never echo it
        problems.push(`${name} must be host:port or redis://[user:password@]host:port entries separated by commas; entry ${i + 1} is not`);
        return null;
      }
    }
    const first = urls[0]!;
    if (urls.some((u) => u.protocol !== first.protocol || u.username !== first.username || u.password !== first.password)) {
      problems.push(`${name}: every node must have the same scheme (redis:// or rediss://) and the same user and password`);
      return null;
    }
    return urls.map((u) => `${u.protocol}//${u.username === '' && u.password === '' ? '' : `${u.username}:${u.password}@`}${u.host}`);
  };

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

  function experiment(): Experiment | null {
    const raw = get('RECS_EXPERIMENT');
    if (raw === undefined) return null;
    const parsed = parseExperiment(raw);
    if (typeof parsed === 'string') problems.push(parsed);
    return typeof parsed === 'string' ? null : parsed;
  }

  function rateLimits(): RateLimitSettings {
    const defaults = DEFAULT_RATE_LIMITS;
    const rps = int('RATE_LIMIT_RPS', defaults.perPrincipal?.ratePerSecond ?? 0, 0, 1_000_000);
    const burst = int('RATE_LIMIT_BURST', Math.max(defaults.perPrincipal?.burst ?? 0, 2 * rps), 1, 10_000_000);
    const failures = int('AUTH_FAILURES_PER_MINUTE', defaults.authFailures?.burst ?? 0, 0, 100_000);
    const keyChecks = int('AUTH_KEY_CHECKS_PER_MINUTE', defaults.keyChecks?.burst ?? 0, 0, 100_000);
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

  /** CORS_ORIGINS as browsers send Origin (lower case, no default port, no path), since that is what is compared. */
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

  // pino throws on an unknown level after config is read: a stack where a failed start prints one line
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

  const roleRaw = get('RECS_ROLE') ?? 'all';
  const recsRole = (RECS_ROLES as readonly string[]).includes(roleRaw) ? (roleRaw as RecsRole) : 'all';
  if (recsRole !== roleRaw) problems.push(`RECS_ROLE must be one of ${RECS_ROLES.join(', ')}, got "${roleRaw}"`);

  const config: Config = {
    port: int('PORT', 4000, 0, 65535),
    host: get('HOST'),
    production,
    backend,
    dataDir: path.resolve(get('DATA_DIR') ?? 'data'),
    databaseUrl: url('DATABASE_URL', ['postgres:', 'postgresql:']),
    recsRole,
    recsMaxLagSeconds: int('RECS_MAX_LAG_SECONDS', 60, 1, 86_400),
    recsFollowIntervalMs: int('RECS_FOLLOW_INTERVAL_MS', 250, 0, 86_400_000),
    recsEventsMaxAgeDays: int('RECS_EVENTS_MAX_AGE_DAYS', DEFAULT_EVENTS_MAX_AGE_DAYS, 0, 36_500),
    recsNbpRebuildSeconds: int('RECS_NBP_REBUILD_SECONDS', DEFAULT_NBP_REBUILD_SECONDS, 0, 86_400),
    recsMaxItems: int('RECS_MAX_ITEMS', DEFAULT_MAX_ITEMS, 1, 1_000_000_000),
    recsExperiment: experiment(),
    recsTrackingSecret: token('RECS_TRACKING_SECRET'),
    redisUrl: url('REDIS_URL', ['redis:', 'rediss:']),
    redisClusterNodes: clusterNodes('REDIS_CLUSTER_NODES'),
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
    maxKeysPerUser: int('MAX_KEYS_PER_USER', DEFAULT_MAX_KEYS_PER_USER, 1, 1_000_000),
    metricsToken: token('METRICS_TOKEN'),
    metricsOperationNames: int('METRICS_OPERATION_NAMES', DEFAULT_METRICS_OPERATION_NAMES, 0, 100_000),
    metricsOperationNamesPerUser: int('METRICS_OPERATION_NAMES_PER_USER', DEFAULT_METRICS_OPERATION_NAMES_PER_USER, 0, 100_000),
    trustedDocuments: trustedDocuments(),
    corsOrigins: corsOrigins(),
  };
  config.ingestBodyLimitBytes = Math.max(config.bodyLimitBytes, int('INGEST_BODY_LIMIT_BYTES', DEFAULT_INGEST_BODY_LIMIT_BYTES, 1024, 256 * 1024 * 1024));
  config.anonymousBodyLimitBytes = Math.min(config.bodyLimitBytes, int('ANONYMOUS_BODY_LIMIT_BYTES', DEFAULT_ANONYMOUS_BODY_LIMIT_BYTES, 1024, 64 * 1024 * 1024));
  if (config.redisUrl !== null && config.redisClusterNodes !== null) {
    problems.push('REDIS_URL and REDIS_CLUSTER_NODES name two different Redis: set one of them');
  }
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
  if (recsRole !== 'all') {
    // the roles share events and published lists through PostgreSQL: nothing else holds both
    if (backend === 'rest') problems.push(`RECS_ROLE=${recsRole} needs BACKEND=embedded: with BACKEND=rest the upstream holds the model`);
    else if (config.databaseUrl === null && !problems.some((p) => p.startsWith('DATABASE_URL'))) {
      problems.push(`RECS_ROLE=${recsRole} needs DATABASE_URL (PostgreSQL), where events and published lists are shared: set it, or RECS_ROLE=all`);
    }
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
