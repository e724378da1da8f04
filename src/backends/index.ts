import { CachingRecsService } from '../cache/cachingRecs.js';
import type { SharedCache } from '../cache/types.js';
import type { Config } from '../config.js';
import { createEmbeddedBackend } from './embedded/index.js';
import { openKeyStore } from './embedded/keys/index.js';
import { ensureFirstAdmin } from './embedded/keys/users.js';
import { openEmbeddedRecs } from './embedded/recs.js';
import { createRestBackend, type BreakerState } from './rest/index.js';
import type { UpstreamObserver } from './rest/upstream.js';
import type { Backend } from './types.js';

export interface OpenBackendHooks {
  /** The shared cache; the REST backend's items and lists go through it. */
  cache: SharedCache;
  /** Called with the generated password when the first start created the administrator. */
  onFirstAdmin?: (password: string) => void;
  /** Progress lines while the embedded recommender loads. */
  log?: (line: string) => void;
  /** Told about every upstream call of the REST backend (metrics, traces). */
  upstreamObserver?: UpstreamObserver;
}

/** A backend, and the breaker states of its upstreams where it has any (for /metrics). */
export type OpenedBackend = Backend & { breakerState?: () => Record<string, BreakerState> };

/**
 * The backend config asks for, decided once at start-up. The REST backend's recommendations go
 * through the shared cache; the embedded one answers from memory in microseconds, faster than a
 * Redis round trip, so it is not cached.
 */
export async function openBackend(config: Config, hooks: OpenBackendHooks): Promise<OpenedBackend> {
  if (config.backend === 'rest') {
    const rest = createRestBackend({
      apiKeyServiceUrl: config.apiKeyServiceUrl!,
      recsServiceUrl: config.recsServiceUrl!,
      recsApiKey: config.recsApiKey!,
      ...config.upstream,
      sharedCache: hooks.cache,
      ...(hooks.upstreamObserver ? { observer: hooks.upstreamObserver } : {}),
    });
    return {
      keys: rest.keys,
      ingest: rest.ingest,
      recs: new CachingRecsService(rest.recs, hooks.cache, {
        itemTtlSeconds: config.cacheItemTtlSeconds,
        recsTtlSeconds: config.cacheRecsTtlSeconds,
        negativeTtlSeconds: config.cacheNegativeTtlSeconds,
      }),
      check: () => rest.check(),
      close: () => rest.close(),
      breakerState: () => rest.breakerState(),
    };
  }
  const store = await openKeyStore(config);
  // the recommender first: a start that fails on recs.db shows no administrator password it then loses
  const recs = await openEmbeddedRecs({
    dataDir: config.dataDir,
    reloadIntervalMs: config.recsReloadIntervalMs,
    model: { maxAgeDays: config.recsEventsMaxAgeDays },
    ...(hooks.log ? { log: hooks.log } : {}),
  }).catch(async (error: unknown) => {
    await store.close();
    throw error;
  });
  const password = await ensureFirstAdmin(store);
  if (password !== null) hooks.onFirstAdmin?.(password);
  return createEmbeddedBackend(store, recs, {
    verifiedPasswordTtlMs: config.verifiedPasswordTtlSeconds * 1000,
    maxKeysPerUser: config.maxKeysPerUser,
  });
}
