import type { ServerResponse } from 'node:http';
import type { RateLimiter } from '../../auth/rateLimit.js';
import { readiness } from '../../observability/readiness.js';
import type { Backend } from '../../ports/backend.js';
import type { SharedCache } from '../../ports/cache.js';
import { sendJson } from '../send.js';

/** GET /healthz: the process answers. */
export function serveHealth(res: ServerResponse): void {
  sendJson(res, 200, { status: 'ok' });
}

/** GET /readyz: whether what the gateway depends on answers (503 with the failing parts when not). */
export async function serveReadiness(res: ServerResponse, backend: Backend, cache: SharedCache, limiter: RateLimiter): Promise<void> {
  const { httpStatus, body } = await readiness(backend, cache, limiter);
  sendJson(res, httpStatus, body);
}
