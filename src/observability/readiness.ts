import type { Backend, RecommenderStateModel, RoleStateModel } from '../ports/backend.js';
import type { SharedCache } from '../ports/cache.js';
import type { RateLimiter } from '../auth/rateLimit.js';

export interface Readiness {
  /** `degraded`: Redis down, served without it; `unavailable`: a required dependency (key store, upstream) down. */
  status: 'ready' | 'degraded' | 'unavailable';
  checks: Record<string, string>;
  /** The embedded recommender's state; counts only for who may read them (serveReadiness). */
  recommender?: Pick<RecommenderStateModel, 'mode' | 'store' | 'followError'> | RecommenderStateModel;
  /** RECS_ROLE serve or learn: the role, whether a learner is active, the age of the newest published list. */
  role?: RoleStateModel;
}

/** A serve replica answering lists older than RECS_MAX_LAG_SECONDS (or none yet), or an active learner that
 * has not published for that long, is degraded: old lists are better than none, so it stays in the load balancer. */
export function roleLagging(role: RoleStateModel | undefined): boolean {
  if (role?.role === 'learn') return role.learnerActive && role.listsAgeSeconds !== null && role.listsAgeSeconds > role.maxLagSeconds;
  return role?.role === 'serve' && (role.listsAgeSeconds === null || role.listsAgeSeconds > role.maxLagSeconds);
}

/** /readyz: 200 while requests can be served, degraded or not, so losing Redis does not take every
 * gateway out of the load balancer at once; 503 when a required dependency is down. */
export async function readiness(backend: Backend, cache: SharedCache, limiter: RateLimiter, withCounts = false): Promise<{ httpStatus: number; body: Readiness }> {
  const [required, cacheState, limiterState] = await Promise.all([backend.check(), cache.check(), limiter.check()]);
  const checks: Record<string, string> = { ...required, cache: cacheState, rateLimits: limiterState };
  const requiredOk = Object.values(required).every((state) => state === 'ok');
  const optionalOk = cacheState === 'ok' && limiterState === 'ok';
  const role = backend.roleState?.();
  if (roleLagging(role)) checks.lists = `older than RECS_MAX_LAG_SECONDS (${role!.maxLagSeconds} s)${role!.learnerActive ? '' : ': no learner holds the lock'}`;
  const status = !requiredOk ? 'unavailable' : optionalOk && !roleLagging(role) ? 'ready' : 'degraded';
  const state = backend.recommender?.();
  // anyone may ask: no store path, host or error text; its size (a shop's trade) only to the privileged
  const followError = state?.followError === null ? null : 'cannot read the store (the log says why)';
  const recommender = state && (withCounts ? { ...state, followError } : { mode: state.mode, store: state.store, followError });
  return { httpStatus: requiredOk ? 200 : 503, body: { status, checks, ...(recommender ? { recommender } : {}), ...(role ? { role } : {}) } };
}
