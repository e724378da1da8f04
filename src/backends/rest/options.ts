import type { SharedCache } from '../../ports/cache.js';
import type { UpstreamObserver, UpstreamSettings } from './upstream.js';

/** Settings of the REST backend; the lead maps the environment variables named below onto them. */
export interface RestBackendOptions {
  /** Base URL of the API key service (Concord), path prefix allowed. APIKEY_SERVICE_URL; required. */
  apiKeyServiceUrl: string;
  /** Base URL of the recommendations service (Walmart Open API). RECS_SERVICE_URL; required. */
  recsServiceUrl: string;
  /** The gateway's own key for the recommendations service; never a client's. RECS_API_KEY; required. */
  recsApiKey: string;
  /** TCP (and TLS) connect timeout. UPSTREAM_CONNECT_TIMEOUT_MS; default 2000. */
  connectTimeoutMs?: number;
  /** Time allowed until the response headers arrive. UPSTREAM_HEADERS_TIMEOUT_MS; default 5000. */
  headersTimeoutMs?: number;
  /** Time allowed between two chunks of a response body. UPSTREAM_BODY_TIMEOUT_MS; default 5000. */
  bodyTimeoutMs?: number;
  /** Keep-alive connections per upstream. Default 50. */
  connections?: number;
  /** How long an idle keep-alive connection is kept (the server's hint may shorten it). Default 4000. */
  keepAliveTimeoutMs?: number;
  /** Retries of a GET after a connection error, 429, 502, 503 or 504; POST and DELETE never. UPSTREAM_RETRIES; default 2. */
  retries?: number;
  /** First backoff ceiling; doubles per retry, fully jittered. Default 100. */
  retryBaseDelayMs?: number;
  /** Largest backoff ceiling. Default 1000. */
  retryMaxDelayMs?: number;
  /** Longest Retry-After honoured by waiting; a longer one ends the retries. Default 2000. */
  maxRetryAfterMs?: number;
  /** Retries allowed per request, on average, per upstream. Default 0.1. */
  retryBudgetRatio?: number;
  /** Retries available beyond the ratio (the budget's capacity). Default 3. */
  retryBudgetReserve?: number;
  /** Consecutive failures (connection errors, timeouts, 5xx) that open a breaker. BREAKER_FAILURES; default 5. */
  breakerFailures?: number;
  /** How long an open breaker rejects before letting one probe through. BREAKER_OPEN_MS; default 10000. */
  breakerOpenMs?: number;
  /** How long an authentication is remembered: a key deleted elsewhere works this long at most. AUTH_CACHE_TTL_MS; default 30000. */
  authCacheTtlMs?: number;
  /** Credentials remembered at most; the least recently used goes first. Default 10000. */
  authCacheMaxEntries?: number;
  /** Where authentications and deleted keys are shared with other gateway processes; default: nowhere. */
  sharedCache?: SharedCache;
  /** Largest response body read; a larger one is UPSTREAM_UNAVAILABLE. Default 5 MiB. */
  maxResponseBytes?: number;
  /** Told about every upstream attempt (metrics, traces). Default: none. */
  observer?: UpstreamObserver;
  /** The breakers' clock, in ms: tests advance their own rather than sleep. Default Date.now. */
  now?: () => number;
}

export const DEFAULT_UPSTREAM_SETTINGS: UpstreamSettings = {
  connectTimeoutMs: 2000,
  headersTimeoutMs: 5000,
  bodyTimeoutMs: 5000,
  connections: 50,
  keepAliveTimeoutMs: 4000,
  retries: 2,
  retryBaseDelayMs: 100,
  retryMaxDelayMs: 1000,
  maxRetryAfterMs: 2000,
  retryBudgetRatio: 0.1,
  retryBudgetReserve: 3,
  breakerFailures: 5,
  breakerOpenMs: 10_000,
  maxResponseBytes: 5 * 1024 * 1024,
};

export const DEFAULT_AUTH_CACHE_TTL_MS = 30_000;
export const DEFAULT_AUTH_CACHE_MAX_ENTRIES = 10_000;

export function upstreamSettings(options: RestBackendOptions): UpstreamSettings {
  const settings = { ...DEFAULT_UPSTREAM_SETTINGS };
  for (const key of Object.keys(settings) as (keyof UpstreamSettings)[]) {
    const value = options[key];
    if (value !== undefined) {
      const least = key === 'breakerFailures' || key === 'connections' ? 1 : 0;
      if (!Number.isFinite(value) || value < least) throw new RangeError(`${key} must be a number >= ${least}, got ${value}`);
      settings[key] = value;
    }
  }
  return settings;
}
