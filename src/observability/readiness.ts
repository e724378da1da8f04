import type { Backend, RecommenderStateModel } from '../ports/backend.js';
import type { SharedCache } from '../ports/cache.js';
import type { RateLimiter } from '../auth/rateLimit.js';

export interface Readiness {
  /**
   * `ready`: everything answers. `degraded`: an optional dependency (Redis: the shared cache and
   * the shared rate limits) is down, and the gateway serves without it (cache misses, limits per
   * process). `unavailable`: a dependency requests need (the key store, an upstream) is down.
   */
  status: 'ready' | 'degraded' | 'unavailable';
  /** Each dependency's state: 'ok', or what is wrong with it. */
  checks: Record<string, string>;
  /**
   * The embedded recommender: what it serves (`mode`), its items and events, and how many items
   * the events name still lack a record (they shape the model and are never shown until one
   * arrives); the counts only to who may read them (serveReadiness). Informational: a recommender
   * that cannot follow its store serves what it has.
   */
  recommender?: Pick<RecommenderStateModel, 'mode' | 'store' | 'followError'> | RecommenderStateModel;
}

/**
 * /readyz: 200 while requests can be served, degraded or not, so losing Redis does not take every
 * gateway out of the load balancer at once; 503 when a required dependency is down.
 */
export async function readiness(backend: Backend, cache: SharedCache, limiter: RateLimiter, withCounts = false): Promise<{ httpStatus: number; body: Readiness }> {
  const [required, cacheState, limiterState] = await Promise.all([backend.check(), cache.check(), limiter.check()]);
  const checks: Record<string, string> = { ...required, cache: cacheState, rateLimits: limiterState };
  const requiredOk = Object.values(required).every((state) => state === 'ok');
  const optionalOk = cacheState === 'ok' && limiterState === 'ok';
  const status = !requiredOk ? 'unavailable' : optionalOk ? 'ready' : 'degraded';
  const state = backend.recommender?.();
  // anyone may ask: the store's kind, never its path or host, and no error text (the log has it);
  // how much it holds (a shop's trade) only to who may read the metrics, or an administrator
  const followError = state?.followError === null ? null : 'cannot read the store (the log says why)';
  const recommender = state && (withCounts ? { ...state, followError } : { mode: state.mode, store: state.store, followError });
  return { httpStatus: requiredOk ? 200 : 503, body: { status, checks, ...(recommender ? { recommender } : {}) } };
}
