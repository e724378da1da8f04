import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ClientAddresses } from '../../auth/clientAddress.js';
import type { RateLimiter } from '../../auth/rateLimit.js';
import { GatewayError } from '../../errors.js';
import { metricsAuthorized } from '../../observability/metrics.js';
import { readiness } from '../../observability/readiness.js';
import type { Backend } from '../../ports/backend.js';
import type { SharedCache } from '../../ports/cache.js';
import { sendJson } from '../send.js';

/** GET /healthz: the process answers. */
export function serveHealth(res: ServerResponse): void {
  sendJson(res, 200, { status: 'ok' });
}

/** What /readyz asks, and who may read the recommender's counts: METRICS_TOKEN's bearer, or an administrator. */
export interface ReadinessDeps {
  backend: Backend;
  cache: SharedCache;
  limiter: RateLimiter;
  addresses: ClientAddresses;
  metricsToken: string | null | undefined;
}

/** GET /readyz: whether what the gateway depends on answers (503 with the failing parts when not). */
export async function serveReadiness(req: IncomingMessage, res: ServerResponse, deps: ReadinessDeps): Promise<void> {
  const { httpStatus, body } = await readiness(deps.backend, deps.cache, deps.limiter, await mayReadCounts(req, deps));
  sendJson(res, httpStatus, body);
}

// credentials that are neither are no error here: the answer is what a probe gets
async function mayReadCounts(req: IncomingMessage, { backend, limiter, addresses, metricsToken }: ReadinessDeps): Promise<boolean> {
  const { authorization } = req.headers;
  if (authorization === undefined || backend.recommender === undefined) return false;
  if (metricsToken && metricsAuthorized(authorization, metricsToken)) return true;
  try {
    return (await limiter.authenticate(backend.keys, authorization, addresses.of(req)))?.user.isAdmin === true;
  } catch (error) {
    if (error instanceof GatewayError) return false;
    throw error;
  }
}
