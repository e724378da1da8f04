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
import { GatewayMetrics } from '../observability/metrics.js';
import { observeRequest, type RequestRecord } from '../observability/requestScope.js';
import type { Backend, CallOptions, PrincipalModel } from '../ports/backend.js';
import type { SharedCache } from '../ports/cache.js';
import { HttpError, LargeBodies, type IngestRight } from './body.js';
import { Cors } from './cors.js';
import { drainHttpServer, followConnections } from './drain.js';
import { inTurn, lingerAfterAnswer, lingerBudgetFor } from './linger.js';
import { createHttpServer, listen, listenAddress, refusedWithoutHost } from './listener.js';
import { graphqlRoute } from './routes/graphql.js';
import { serveHealth, serveReadiness } from './routes/health.js';
import { ideRoute } from './routes/ide.js';
import { serveMetrics } from './routes/metrics.js';
import { servedRestRoute, serveOpenApi } from './routes/servedRest.js';
import { allowOf, GRAPHQL_ROUTE, intakeOf, labelOf, routeOf } from './routeTable.js';
import { graphqlError, sendJson, sendMethodNotAllowed } from './send.js';

export { listenAddress, type ListenAddress } from './listener.js';

const ANSWERED: Promise<void> = Promise.resolve();
const GRAPHQL_METHODS = allowOf(GRAPHQL_ROUTE);

/**
 * A raw answer to a request node could not read (clientError): its status, and its message as a
 * BAD_REQUEST; `headers`, further header lines (each ending in CRLF).
 */
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
/**
 * With CORS_ORIGINS=*: the head was not read, so its Origin is unknown, but any origin gets `*`,
 * as every other answer says then. With a list of origins the raw answers carry no CORS header:
 * the origin they would name is in the head that could not be read (a page's browser then keeps
 * the 400, 408 or 431 from it, which it could not have acted on anyway).
 */
const CLIENT_ERRORS_ANY_ORIGIN = clientErrorAnswers('access-control-allow-origin: *\r\n');

export interface GatewayOptions {
  config: Pick<Config, 'production' | 'introspection' | 'requestDeadlineMs' | 'bodyLimitBytes' | 'limits' | 'rateLimits'> &
    Partial<Pick<Config, 'responseCacheMaxEntries' | 'responseCacheMaxBytes' | 'maxResponseBytes' | 'metricsOperationNames' | 'metricsOperationNamesPerUser' | 'preparedOperationsMaxDocuments' | 'anonymousBodyLimitBytes' | 'ingestBodyLimitBytes' | 'trustProxy' | 'server' | 'metricsToken' | 'trustedDocuments' | 'corsOrigins'>>;
  /** The backend resolvers call; the gateway closes it on stop. */
  backend: Backend;
  /** The shared cache, for persisted queries; the gateway closes it on stop. Default: in-process. */
  cache?: SharedCache;
  log?: Logger;
  /** Request rate limits; the gateway closes it on stop. Default: in-process buckets with config.rateLimits. */
  limiter?: RateLimiter;
  /** Where metrics go (served at /metrics). Default: a registry of this gateway's own. */
  metrics?: GatewayMetrics;
  /**
   * A server already listening (serve listens first and answers /healthz while the backend opens):
   * the gateway adds its request handler to it, and listen() is not called. Default: a new one.
   */
  httpServer?: http.Server;
  /** Called just before the gateway's request handler is added to httpServer: what answered until then stops. */
  handOver?: () => void;
}

export interface Gateway {
  httpServer: http.Server;
  /**
   * Listens; resolves with a base URL a client on this machine can use (http://127.0.0.1:port
   * when listening on every interface; see listenAddress for where it really listens).
   */
  listen(port: number, host?: string): Promise<string>;
  /** Stops taking requests, lets in-flight ones finish, then closes the backend. */
  stop(): Promise<void>;
  /** Requests the takeover answered, and handed back to Apollo; null when it is off. */
  readonly takeoverStats: Takeover['stats'] | null;
  /** The response cache's hits, misses and answers stored; null when it is off. */
  readonly responseCacheStats: ResponseCache['stats'] | null;
}

/**
 * The gateway: a node:http server in front of Apollo Server (no framework in between: it only
 * routes a handful of paths) with the GraphQL endpoint, an offline GraphiQL, and health checks.
 */
export async function createGateway(options: GatewayOptions): Promise<Gateway> {
  const { config, backend } = options;
  const log = options.log ?? silentLogger;
  const cache = options.cache ?? new MemoryCache();
  const limiter = options.limiter ?? RateLimiter.open(config.rateLimits);
  const metrics = options.metrics ?? new GatewayMetrics({ operationNames: config.metricsOperationNames, operationNamesPerUser: config.metricsOperationNamesPerUser });
  metrics.watch({
    cache: cache.stats,
    rateLimits: limiter.counts,
    ...(backend.breakerState ? { breakers: backend.breakerState } : {}),
  });
  const addresses = new ClientAddresses(config.trustProxy ?? []);
  const anonymousBodyLimit = Math.min(config.anonymousBodyLimitBytes ?? DEFAULT_ANONYMOUS_BODY_LIMIT_BYTES, config.bodyLimitBytes);
  const ingestBodyLimit = Math.max(config.ingestBodyLimitBytes ?? DEFAULT_INGEST_BODY_LIMIT_BYTES, config.bodyLimitBytes);
  /**
   * Who may send batches of events (and bodies the size of one): an administrator. Where the
   * upstream decides (REST mode), as it answered for the credential, else asked when `ask` is
   * given, so that a batch nobody may send is refused before it is read.
   */
  const { ingest } = backend;
  const ingestRightOf = (principal: PrincipalModel, ask: CallOptions | null): IngestRight | Promise<IngestRight> => {
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
  const servedRest = servedRestRoute({ ...bodyRoutes, log });
  const varyByOrigin = cors?.variesByOrigin ?? false;
  const graphql = graphqlRoute({ ...bodyRoutes, metrics, engine, serveIde, varyByOrigin });

  /**
   * Routes a request. Not async itself: /graphql's promise is handed back as it is (an async
   * function returning a promise would wait two more turns of the microtask queue to settle).
   */
  function handle(req: IncomingMessage, res: ServerResponse, record: RequestRecord): Promise<void> {
    const target = req.url ?? '/';
    // /graphql as sent needs no URL object; anything else is parsed (and normalised) first
    const query = target.indexOf('?');
    if ((query === -1 ? target : target.slice(0, query)) === '/graphql') {
      // CORS_ORIGINS unset: one comparison; set, one header lookup for a request without Origin
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
      // an origin-form target ('/…') is a path, and '//host/…' in it no authority: resolved as a
      // reference, '//x/api/v1/apikey' was served as /api/v1/apikey (and '/\\x/…' alike), past
      // a proxy's rule for /api/; absolute-form ('http://host/…') keeps its own path
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
        // a path under an interface's that none of its handlers knows
        if (!(await servedRest(req, res, url, route))) notFound();
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
        // a body refused as too large is not read to its end: the connection goes with it, once
        // what is still coming of the body is drained for a bounded while (linger.ts)
        if (!res.headersSent) {
          if (error.status === 413) lingerAfterAnswer(req, res, lingerBudgetFor(error.limit ?? 0));
          sendJson(res, error.status, graphqlError(error.message, ErrorCode.BAD_REQUEST), error.status === 413 ? { connection: 'close' } : {});
        } else res.destroy();
        return;
      }
      // the path alone (an absolute-form target may carry credentials): never its query or authority
      const path = req.url?.startsWith('/') ? req.url.split('?')[0] : '(not a path)';
      if (req.destroyed || (error as { code?: string }).code === 'ECONNRESET') {
        // the client went away (or was cut off by a timeout) mid-request: its doing, not ours
        log.info({ requestId, path }, 'client went away before the request was read');
        return;
      }
      log.error({ err: error, requestId, path }, 'request failed');
      if (!res.headersSent) sendJson(res, 500, graphqlError('Internal server error', ErrorCode.INTERNAL_SERVER_ERROR));
      else res.destroy();
    });
  }
  /**
   * `Expect: 100-continue`: node answered "100 Continue" to every such request, so a client that
   * waits for it before sending its body (curl does, for bodies over a MiB) sent a body already
   * declared past any limit its route has, only to get its 413 after it (a probe). Such a request
   * gets no 100: the 413 comes first, and the client need not send the body at all.
   */
  httpServer.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    const declared = Number(req.headers['content-length']);
    const route = req.headers.authorization === undefined ? null : routeOf(req.url?.split('?')[0] ?? '');
    const most = req.headers.authorization === undefined
      ? anonymousBodyLimit
      : route !== null && intakeOf(route, req.method).body === 'batch' ? ingestBodyLimit : config.bodyLimitBytes;
    if (!(declared > most)) res.writeContinue();
    httpServer.emit('request', req, res);
  });
  /**
   * An `Expect` other than 100-continue: node's own 417 had an empty body, where every other
   * refusal is JSON with a code of the closed set (a probe). The body, if sent anyway, is read
   * and dropped by node, as for any answer given before its request was read.
   */
  httpServer.on('checkExpectation', (_req: IncomingMessage, res: ServerResponse) => {
    sendJson(res, 417, graphqlError('The Expect header takes only 100-continue', ErrorCode.BAD_REQUEST));
  });
  // a client that sends garbage gets a 400 from node; it must not take the process down
  httpServer.on('clientError', (error, socket) => {
    // a client too slow to send its request (REQUEST_TIMEOUT_MS) is told so, as RFC 9110 says
    // and one whose head is past node's maxHeaderSize (16 KB) that the head is too large, as node's own handler does
    // with a body in the GraphQL shape and a code of the closed set, as every other error has
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
        // no new connections; the requests in flight are answered first (Apollo is still up for them)
        await drainHttpServer(httpServer);
        await apollo.stop();
        await backend.close();
        await cache.close();
        await limiter.close();
      })();
      return stopping;
    },
  };
}
