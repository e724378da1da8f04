import type { Backend } from '../../ports/backend.js';
import type { BreakerState } from './breaker.js';
import { RestKeyService } from './keys.js';
import {
  DEFAULT_AUTH_CACHE_MAX_ENTRIES, DEFAULT_AUTH_CACHE_TTL_MS, upstreamSettings,
} from './options.js';
import type { RestBackendOptions } from './options.js';
import { RestRecsService } from './recs.js';
import { RestIngestService } from './ingest.js';
import { RestImpressions } from './impressions.js';
import { Upstream } from './upstream.js';

export type { RestBackendOptions } from './options.js';
export type { BreakerState } from './breaker.js';
export { RestKeyService } from './keys.js';
export { RestRecsService } from './recs.js';

/** The upstream services, as named in errors, metrics and check(). */
export type RestService = 'apikeys' | 'recommendations';

/** The REST backend: a Backend plus its breakers' state for metrics. */
export interface RestBackend extends Backend {
  breakerState(): Record<RestService, BreakerState>;
}

/** How long check() waits for each upstream. */
const CHECK_TIMEOUT_MS = 2000;

export function createRestBackend(options: RestBackendOptions): RestBackend {
  for (const name of ['apiKeyServiceUrl', 'recsServiceUrl', 'recsApiKey'] as const) {
    if (typeof options[name] !== 'string' || options[name] === '') throw new TypeError(`${name} is required`);
  }
  const settings = upstreamSettings(options);
  const apikeys = new Upstream('apikeys', options.apiKeyServiceUrl, settings, options.observer, options.now);
  const recommendations = new Upstream('recommendations', options.recsServiceUrl, settings, options.observer, options.now);
  const authCacheTtlMs = options.authCacheTtlMs ?? DEFAULT_AUTH_CACHE_TTL_MS;
  const authCacheMaxEntries = options.authCacheMaxEntries ?? DEFAULT_AUTH_CACHE_MAX_ENTRIES;
  return {
    keys: new RestKeyService(apikeys, authCacheTtlMs, authCacheMaxEntries, options.sharedCache),
    recs: new RestRecsService(recommendations, options.recsApiKey),
    // the caller's own credentials, to the upstream's twins: it decides who may send them, and
    // what it answered a credential is remembered as long as the credential itself
    ingest: new RestIngestService(recommendations, authCacheTtlMs, authCacheMaxEntries),
    listCountSink: new RestImpressions(recommendations, options.recsApiKey),
    async check() {
      // Unauthenticated requests: any HTTP answer below 500 proves reachability without
      // spending the gateway key's rate limit.
      const [keys, recs] = await Promise.all([
        apikeys.ping('/api/v1/apikey', CHECK_TIMEOUT_MS),
        recommendations.ping('/v1/items', CHECK_TIMEOUT_MS),
      ]);
      return { apikeys: keys, recommendations: recs };
    },
    breakerState() {
      return { apikeys: apikeys.breakerState, recommendations: recommendations.breakerState };
    },
    async close() {
      await Promise.all([apikeys.close(), recommendations.close()]);
    },
  };
}
