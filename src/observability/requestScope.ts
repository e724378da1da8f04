import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '../logger.js';
import { routeOf, type GatewayMetrics } from './metrics.js';

/**
 * What is known about the request being served. It is handed along explicitly (and through the
 * GraphQL context) rather than kept in an AsyncLocalStorage: that would install promise hooks,
 * which tax every promise of every request (measured: about 5% of the cached path).
 */
export interface RequestRecord {
  id: string;
  /** The GraphQL operation's label (see GatewayMetrics.operationLabel), once known. */
  operation?: string;
}

/**
 * Serves one request, then writes its access-log line and HTTP metrics when the
 * response is done (or the client went away). The path is logged without its query string: the
 * recommendations interface carries the API key there.
 */
export function observeRequest(
  req: IncomingMessage,
  res: ServerResponse,
  id: string,
  sinks: { log: Logger; metrics: GatewayMetrics },
  serve: (record: RequestRecord) => Promise<void>,
): Promise<void> {
  const record: RequestRecord = { id };
  const started = process.hrtime.bigint();
  const path = (req.url ?? '/').split('?')[0]!;
  res.once('close', () => {
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    const route = routeOf(path);
    const status = res.writableFinished ? res.statusCode : 0;
    sinks.metrics.httpRequests.inc({ route, method: req.method ?? 'GET', status: String(status) });
    sinks.metrics.httpDuration.observe({ route }, seconds);
    sinks.log.info(
      {
        requestId: id,
        method: req.method,
        path: path.slice(0, 256),
        status,
        durationMs: Math.round(seconds * 10_000) / 10,
        ...(record.operation !== undefined ? { operation: record.operation } : {}),
        ...(res.writableFinished ? {} : { aborted: true }),
      },
      'request',
    );
  });
  return serve(record);
}
