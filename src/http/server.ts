import { randomUUID } from 'node:crypto';
import type http from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ClientAddresses } from '../auth/clientAddress.js';
import { RateLimiter } from '../auth/rateLimit.js';
import { MemoryCache } from '../cache/memory.js';
import { DEFAULT_ANONYMOUS_BODY_LIMIT_BYTES, DEFAULT_INGEST_BODY_LIMIT_BYTES, DEFAULT_SERVER_LIMITS, LARGE_BODIES_IN_FLIGHT_BYTES } from '../config/defaults.js';
import type { Config } from '../config/env.js';
import { ErrorCode } from '../errors.js';
import { createGraphQLEngine } from '../graphql/pipeline/engine.js';
import type { Takeover } from '../graphql/pipeline/takeover.js';
import type { ResponseCache } from '../graphql/pipeline/responseCache.js';
import { silentLogger, type Logger } from '../logger.js';
import { Attribution, attributedIngest, readStats } from '../observability/attribution.js';
import { GatewayMetrics } from '../observability/metrics.js';
import { observeRequest, type RequestRecord } from '../observability/requestScope.js';
import type { Backend, CallOptions, PrincipalModel } from '../ports/backend.js';
import type { SharedCache } from '../ports/cache.js';
import { HttpError, LargeBodies } from './body.js';
import type { IngestRight } from './prelude.js';
import { Cors } from './cors.js';
import { drainHttpServer, followConnections } from './drain.js';
import { inTurn } from './linger.js';
import { createHttpServer, listen, listenAddress, refusedWithoutHost } from './listener.js';
import { graphqlRoute } from './routes/graphql.js';
import { serveHealth, serveReadiness } from './routes/health.js';
import { ideRoute } from './routes/ide.js';
import { serveMetrics } from './routes/metrics.js';
import { servedRestRoute, serveOpenApi } from './routes/servedRest.js';
import { holdsScope } from '../model/scopes.js';
import { allowOf, GRAPHQL_ROUTE, intakeOf, labelOf, routeOf } from './routeTable.js';
import { graphqlError, sendJson, sendMethodNotAllowed } from './send.js';

export { listenAddress, type ListenAddress } from './listener.js';

const ANSWERED: Promise<void> = Promise.resolve();
const GRAPHQL_METHODS = allowOf(GRAPHQL_ROUTE);

function clientErrorAnswer(status: string, message: string, headers: string): string {
  const body = JSON.stringify(graphqlError(message, ErrorCode.BAD_REQUEST));
  return `HTTP/1.1 ${status}\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\n${headers}connection: close\r\n\r\n${body}`;
}

const clientErrorAnswers = (headers: string) => ({
  timeout: clientErrorAnswer('408 Request Timeout', 'The request was not sent in time', headers),
  headTooLarge: clientErrorAnswer('431 Request Header Fields Too Large', 'The request head is larger than 16 KB', headers),
  malformed: clientErrorAnswer('400 Bad Request', 'The request is not valid HTTP/1.1', headers),
});

const CLIENT_ERRORS = clientErrorAnswers('');
// The head was not read, so its Origin is unknown: only CORS_ORIGINS=* can answer with a CORS header.
const CLIENT_ERRORS_ANY_ORIGIN = clientErrorAnswers('access-control-allow-origin: *\r\n');

/** What createGateway needs. */
export interface GatewayOptions {
  config: Pick<Config, 'production' | 'introspection' | 'requestDeadlineMs' | 'bodyLimitBytes' | 'limits' | 'rateLimits'> &
    Partial<Pick<Config, 'responseCacheMaxEntries' | 'responseCacheMaxBytes' | 'maxResponseBytes' | 'metricsOperationNames' | 'metricsOperationNamesPerUser' | 'preparedOperationsMaxDocuments' | 'anonymousBodyLimitBytes' | 'ingestBodyLimitBytes' | 'trustProxy' | 'server' | 'metricsToken' | 'trustedDocuments' | 'corsOrigins' | 'recsExperiment' | 'recsTrackingSecret'>>;
  /** The backend resolvers call; the gateway closes it on stop. */
  backend: Backend;
  /** The shared cache, for persisted queries; the gateway closes it on stop. Default: in-process. */
  cache?: SharedCache;
  log?: Logger;
  /** Request rate limits; the gateway closes it on stop. Default: in-process buckets. */
  limiter?: RateLimiter;
  /** Where metrics go. Default: a registry of this gateway's own. */
  metrics?: GatewayMetrics;
  /** Counts of lists, trackingIds and variants; the gateway writes its counts on stop. Default: over backend.attribution. */
  attribution?: Attribution;
  /** A server already listening: the gateway adds its handler, and listen() is not called. Default: a new one. */
  httpServer?: http.Server;
  /** Called just before the gateway's request handler is added to httpServer. */
  handOver?: () => void;
}

/** A gateway made by createGateway. */
export interface Gateway {
  httpServer: http.Server;
  /** Listens; resolves with a base URL a client on this machine can use. */
  listen(port: number, host?: string): Promise<string>;
  /** Stops taking requests, lets in-flight ones finish, then closes the backend. */
  stop(): Promise<void>;
  /** Requests the takeover answered, and handed back to Apollo; null when it is off. */
  readonly takeoverStats: Takeover['stats'] | null;
  /** The response cache's hits, misses and answers stored; null when it is off. */
  readonly responseCacheStats: ResponseCache['stats'] | null;
}

/** The gateway: a node:http server in front of Apollo Server, with /graphql, GraphiQL and health checks. */
export async function createGateway(options: GatewayOptions): Promise<Gateway> {
  const { config } = options;
  const attribution = options.attribution ?? await Attribution.open({
    store: options.backend.attribution ?? null, sink: options.backend.listCountSink ?? null,
    secret: config.recsTrackingSecret ?? null, experiment: config.recsExperiment ?? null,
  });
  // every path that takes events, GraphQL and REST, reads and counts their trackingIds; the rest of
  // the backend is reached through the prototype, whatever its own shape (getters, a prototype of its own)
  const backend = Object.assign(Object.create(options.backend) as Backend, { ingest: attributedIngest(options.backend.ingest, attribution) });
  const log = options.log ?? silentLogger;
  // a front over an upstream recs-gateway: without the shared secret, every click it forwards is refused
  if (!attribution.verifies && options.backend.listCountSink !== undefined) {
    log.warn('RECS_TRACKING_SECRET is not set: an upstream recs-gateway refuses every trackingId this front gives (each click with one is refused); set the upstream\'s RECS_TRACKING_SECRET here (docs/attribution.md)');
  }
  const cache = options.cache ?? new MemoryCache();
  const limiter = options.limiter ?? RateLimiter.open(config.rateLimits);
  const metrics = options.metrics ?? new GatewayMetrics({ operationNames: config.metricsOperationNames, operationNamesPerUser: config.metricsOperationNamesPerUser });
  metrics.watch({
    cache: cache.stats,
    rateLimits: limiter.counts,
    lists: attribution.counter.totals,
    ...(backend.breakerState ? { breakers: backend.breakerState } : {}),
    ...(backend.roleState ? { role: () => backend.roleState!() } : {}),
  });
  const addresses = new ClientAddresses(config.trustProxy ?? []);
  const anonymousBodyLimit = Math.min(config.anonymousBodyLimitBytes ?? DEFAULT_ANONYMOUS_BODY_LIMIT_BYTES, config.bodyLimitBytes);
  const ingestBodyLimit = Math.max(config.ingestBodyLimitBytes ?? DEFAULT_INGEST_BODY_LIMIT_BYTES, config.bodyLimitBytes);
  // asked before the body is read, so that a batch nobody may send is refused unread
  const { ingest } = backend;
  const ingestRightOf = (principal: PrincipalModel, ask: CallOptions | null): IngestRight | Promise<IngestRight> => {
    if (!holdsScope(principal, 'EVENTS_WRITE')) return 'refused';
    if (principal.user.isAdmin) return 'allowed';
    if (ingest.knownMayIngest === undefined || ingest.askMayIngest === undefined) return 'refused';
    const known = ingest.knownMayIngest(principal);
    if (known !== undefined) return known ? 'allowed' : 'refused';
    return ask === null ? 'unknown' : ingest.askMayIngest(principal, ask).then((may) => (may ? 'allowed' : 'refused'));
  };
  const largeBodies = new LargeBodies(Math.max(LARGE_BODIES_IN_FLIGHT_BYTES, ingestBodyLimit), config.bodyLimitBytes);

  const httpServer = options.httpServer ?? createHttpServer(config.server ?? DEFAULT_SERVER_LIMITS, config.trustProxy);
  followConnections(httpServer);
  const engine = await createGraphQLEngine(config, cache, log);
  const { responseCache } = engine;
  if (responseCache !== null && backend.onDataChange) {
    responseCache.followData(backend.recsNow ?? null);
    backend.onDataChange(() => responseCache.dataChanged());
  }
  const { apollo, takeover } = engine;
  const cors = config.corsOrigins ? new Cors(config.corsOrigins) : null;
  const serveIde = ideRoute({ limiter, addresses });
  const bodyRoutes = { config, backend, limiter, addresses, anonymousBodyLimit, ingestBodyLimit, ingestRightOf, largeBodies };
  const servedRest = servedRestRoute({ ...bodyRoutes, log, readStats: (principal, since, until, options) => readStats(attribution, backend.ingest, principal, since, until, options),
    takeImpressions: (principal, rows) => attribution.takeImpressions(principal, rows),
  });
  const varyByOrigin = cors?.variesByOrigin ?? false;
  const graphql = graphqlRoute({ ...bodyRoutes, metrics, engine, serveIde, varyByOrigin, attribution });

  // Not async: an async wrapper around /graphql's promise would delay its settling.
  function handle(req: IncomingMessage, res: ServerResponse, record: RequestRecord): Promise<void> {
    const target = req.url ?? '/';
    const query = target.indexOf('?');
    if ((query === -1 ? target : target.slice(0, query)) === '/graphql') {
      if (cors !== null) {
        const origin = req.headers.origin;
        if (cors.apply(req, res, origin, GRAPHQL_METHODS, record.id)) return ANSWERED;
      }
      return graphql(req, res, query === -1 ? '' : target.slice(query), record);
    }
    return handleOther(req, res, target, record);
  }

  async function handleOther(req: IncomingMessage, res: ServerResponse, target: string, record: RequestRecord): Promise<void> {
    res.setHeader('x-request-id', record.id);
    let url: URL;
    try {
      // Security: in an origin-form target '//host/…' is a path, not an authority, so '//x/api/v1/apikey'
      // cannot reach /api/v1/apikey past a proxy's rule for /api/.
      url = target.startsWith('/') ? new URL(`http://gateway${target}`) : new URL(target, 'http://gateway');
    } catch {
      throw new HttpError(400, 'The request target is not a valid URL');
    }
    const route = routeOf(url.pathname);
    const notFound = (): void => sendJson(res, 404, graphqlError(`No route for ${url.pathname}`, ErrorCode.NOT_FOUND));
    if (route === null) return notFound();
    if (cors !== null && route.cors && cors.apply(req, res, req.headers.origin, allowOf(route), record.id)) return;
    const method = req.method ?? '';
    if (route.routerRefusesMethods && !route.methods.includes(method)) return sendMethodNotAllowed(res, method, allowOf(route));
    switch (route.speaks) {
      case 'graphql':
        return graphql(req, res, url.search, record);
      case 'ide':
        return serveIde(req, res, url.pathname.slice(route.path.length));
      case 'health':
        return serveHealth(res);
      case 'openapi':
        return serveOpenApi(req, res);
      case 'readiness':
        return serveReadiness(req, res, { backend, cache, limiter, addresses, metricsToken: config.metricsToken });
      case 'metrics':
        return serveMetrics(req, res, metrics, config.metricsToken);
      default:
        if (!(await servedRest(req, res, url, route, record))) notFound();
    }
  }

  const sinks = { log, metrics, labelOf };
  const clientErrors = config.corsOrigins === '*' ? CLIENT_ERRORS_ANY_ORIGIN : CLIENT_ERRORS;
  options.handOver?.();
  httpServer.on('request', (req: IncomingMessage, res: ServerResponse) => inTurn(req, res, onRequest));
  function onRequest(req: IncomingMessage, res: ServerResponse): void {
    if (refusedWithoutHost(req, res, cors)) return;
    const sent = req.headers['x-request-id'];
    const requestId = typeof sent === 'string' ? sent.slice(0, 64) : randomUUID();
    handle(req, res, observeRequest(req, res, requestId, sinks)).catch((error: unknown) => {
      if (!res.headersSent && !res.hasHeader('x-request-id')) res.setHeader('x-request-id', requestId);
      if (error instanceof HttpError) {
        if (!res.headersSent) sendJson(res, error.status, graphqlError(error.message, ErrorCode.BAD_REQUEST));
        else res.destroy();
        return;
      }
      // the path alone: an absolute-form target may carry credentials
      const path = req.url?.startsWith('/') ? req.url.split('?')[0] : '(not a path)';
      if (req.destroyed || (error as { code?: string }).code === 'ECONNRESET') {
        // the client went away mid-request: its doing, not ours
        log.info({ requestId, path }, 'client went away before the request was read');
        return;
      }
      log.error({ err: error, requestId, path }, 'request failed');
      if (!res.headersSent) sendJson(res, 500, graphqlError('Internal server error', ErrorCode.INTERNAL_SERVER_ERROR));
      else res.destroy();
    });
  }
  // `Expect: 100-continue` gets no 100 where the body is past its route's limit: the 413 comes first.
  httpServer.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    const declared = Number(req.headers['content-length']);
    const route = req.headers.authorization === undefined ? null : routeOf(req.url?.split('?')[0] ?? '');
    const most = req.headers.authorization === undefined
      ? anonymousBodyLimit
      : route !== null && intakeOf(route, req.method).body === 'batch' ? ingestBodyLimit : config.bodyLimitBytes;
    if (!(declared > most)) res.writeContinue();
    httpServer.emit('request', req, res);
  });
  // any other `Expect`: a JSON 417, as every other refusal
  httpServer.on('checkExpectation', (_req: IncomingMessage, res: ServerResponse) => {
    sendJson(res, 417, graphqlError('The Expect header takes only 100-continue', ErrorCode.BAD_REQUEST));
  });
  // a client that sends garbage must not take the process down
  httpServer.on('clientError', (error, socket) => {
    // a timeout or an oversized head get a body in the GraphQL shape, as every other error has
    const code = (error as { code?: string }).code;
    const answer = code === 'ERR_HTTP_REQUEST_TIMEOUT' ? clientErrors.timeout : code === 'HPE_HEADER_OVERFLOW' ? clientErrors.headTooLarge : clientErrors.malformed;
    if (socket.writable) socket.end(answer);
    else socket.destroy();
  });

  let stopping: Promise<void> | undefined;
  return {
    httpServer,
    get takeoverStats() {
      return takeover?.stats ?? null;
    },
    responseCacheStats: engine.responseCache?.stats ?? null,
    listen: async (port, host) => {
      await listen(httpServer, port, host);
      return listenAddress(httpServer).localUrl;
    },
    stop: () => {
      stopping ??= (async () => {
        await drainHttpServer(httpServer);
        await apollo.stop();
        await attribution.close();
        await backend.close();
        await cache.close();
        await limiter.close();
      })();
      return stopping;
    },
  };
}
