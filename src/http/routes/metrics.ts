import type { IncomingMessage, ServerResponse } from 'node:http';
import { ErrorCode } from '../../errors.js';
import { metricsAuthorized, type GatewayMetrics } from '../../observability/metrics.js';
import { graphqlError, sendJson } from '../send.js';

/** GET /metrics: Prometheus' text, behind METRICS_TOKEN when one is set. */
export async function serveMetrics(req: IncomingMessage, res: ServerResponse, metrics: GatewayMetrics, token: string | null | undefined): Promise<void> {
  if (!metricsAuthorized(req.headers.authorization, token)) {
    // Security: nothing about the metrics, nor about what was sent
    return sendJson(res, 401, graphqlError('Unauthorized', ErrorCode.UNAUTHENTICATED), { 'www-authenticate': 'Bearer realm="metrics"' });
  }
  const { contentType, body } = await metrics.render();
  res.writeHead(200, { 'content-type': contentType, 'cache-control': 'no-store' });
  res.end(body);
}
