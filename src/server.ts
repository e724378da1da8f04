import { randomUUID } from 'node:crypto';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApolloServer, HeaderMap, type HTTPGraphQLRequest } from '@apollo/server';
import { ApolloServerPluginInlineTraceDisabled, ApolloServerPluginLandingPageDisabled } from '@apollo/server/plugin/disabled';
import { trace } from '@opentelemetry/api';
import { GraphQLError, type GraphQLFormattedError } from 'graphql';
import type { BreakerState } from './backends/rest/breaker.js';
import type { Backend, KeyService, PrincipalModel } from './backends/types.js';
import { DEFAULT_SERVER_LIMITS, type Config } from './config.js';
import { RequestContext, type GatewayContext } from './context.js';
import { ErrorCode, GatewayError, httpStatusOf, isErrorCode, unauthenticated } from './errors.js';
import { ClientAddresses } from './auth/clientAddress.js';
import { IDE_ASSET_PREFIX, ideResponse } from './ide.js';
import { isTokenLimitError, queryLimitsRule } from './limits.js';
import { PersistedQueryCache } from './cache/apq.js';
import { MemoryCache } from './cache/memory.js';
import type { SharedCache } from './cache/types.js';
import { isJsonContentType } from './http/contentType.js';
import { createDocumentStore } from './http/documentStore.js';
import { drainHttpServer } from './http/drain.js';
import { checkEnvelope, MAX_JSON_DEPTH, refusalAnswer } from './http/envelope.js';
import { RequestDeadline } from './http/requestSignal.js';
import { TrustedDocuments } from './http/trustedDocuments.js';
import { PreparedOperations, type PreparedAnswer, type PreparedRequest } from './http/preparedOperations.js';
import { DEFAULT_RESPONSE_CACHE_ENTRIES, ResponseCache } from './http/responseCache.js';
import { createLoaders } from './loaders/index.js';
import { silentLogger, type Logger } from './logger.js';
import { observabilityPlugin } from './observability/graphqlPlugin.js';
import { GatewayMetrics, metricsAuthorized } from './observability/metrics.js';
import { readiness } from './observability/readiness.js';
import { observeRequest, type RequestRecord } from './observability/requestScope.js';
import { inServerSpan, tracingActive } from './observability/tracing.js';
import { RateLimiter } from './protection/rateLimit.js';
import { apiKeyErrorResponse, recsErrorResponse, serveApiKeys, serveRecommendations, type RestRequest, type RestResponse } from './rest/index.js';
import { openApiResponse } from './rest/openapi.js';
import { buildGatewaySchema } from './schema/index.js';

// where it was before the schema moved to src/schema/index.ts
export { loadTypeDefs } from './schema/index.js';

export interface GatewayOptions {
  config: Pick<Config, 'production' | 'introspection' | 'requestDeadlineMs' | 'bodyLimitBytes' | 'limits' | 'rateLimits'> &
    Partial<Pick<Config, 'responseCacheMaxEntries' | 'preparedOperationsMaxDocuments' | 'anonymousBodyLimitBytes' | 'trustProxy' | 'server' | 'metricsToken' | 'trustedDocuments'>>;
  /** The backend resolvers call; the gateway closes it on stop. */
  backend: Backend;
  /** The shared cache, for persisted queries; the gateway closes it on stop. Default: in-process. */
  cache?: SharedCache;
  log?: Logger;
  /** Request rate limits; the gateway closes it on stop. Default: in-process buckets with config.rateLimits. */
  limiter?: RateLimiter;
  /** Where metrics go (served at /metrics). Default: a registry of this gateway's own. */
  metrics?: GatewayMetrics;
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
  /** Requests the prepared path answered, and handed to Apollo after all; null when it is off. */
  readonly preparedStats: PreparedOperations['stats'] | null;
  /** The response cache's hits, misses and answers stored; null when it is off. */
  readonly responseCacheStats: ResponseCache['stats'] | null;
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

/** A request-level error in the GraphQL response shape, for failures before Apollo sees the request. */
const graphqlError = (message: string, code: ErrorCode) => ({ errors: [{ message, extensions: { code } }] });

function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const tooLarge = () => new HttpError(413, `Request body larger than ${limit} bytes`);
  if (Number(req.headers['content-length']) > limit) return Promise.reject(tooLarge());
  // events rather than an async iterator: a few microseconds a request on the hot path
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) chunks.push(chunk);
      // answered at once; node drops the rest of the body after the 413 is sent
      else if (size - chunk.length <= limit) reject(tooLarge());
    });
    req.once('end', () => {
      if (size <= limit) resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
    });
    req.once('error', reject);
  });
}

/**
 * How deep a request body's JSON may nest: the envelope and variables nested MAX_JSON_DEPTH deep,
 * with room to spare. Checked on the text before JSON.parse, whose work on a megabyte of `[[[…`
 * (hundreds of milliseconds of one event loop) comes before any limit could look at the result.
 */
const MAX_BODY_DEPTH = MAX_JSON_DEPTH + 8;

/** Whether JSON text nests deeper than `max` (strings skipped); linear, and stops at the limit. */
function nestsDeeper(text: string, max: number): boolean {
  if (text.length <= 2 * max) return false;
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // a string: skip to its closing quote, past escapes
      for (i++; i < text.length; i++) {
        const d = text.charCodeAt(i);
        if (d === 0x5c) i++;
        else if (d === 0x22) break;
      }
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) {
      depth--;
    }
  }
  return false;
}

/** A body's JSON, refused with 400 when it is not JSON or nests too deeply; undefined for none. */
function parseJson(text: string): unknown {
  if (nestsDeeper(text, MAX_BODY_DEPTH)) throw new HttpError(400, `The request body nests deeper than ${MAX_BODY_DEPTH} levels`);
  try {
    return JSON.parse(text);
  } catch {
    throw new HttpError(400, 'The request body is not valid JSON');
  }
}

function parseBody(text: string, contentType: string | undefined): unknown {
  if (text.length === 0) return undefined;
  if (isJsonContentType(contentType)) return parseJson(text);
  // Apollo answers a body of another type with its own 400 (and CSRF prevention relies on that)
  return text;
}

/** ANONYMOUS_BODY_LIMIT_BYTES's default, where a config without it is given. */
const DEFAULT_ANONYMOUS_BODY_LIMIT = 32 * 1024;

/** Whether a request sends a persisted query's extension (to look one up, or to register one). */
function asksPersistedQuery(method: string, body: unknown, search: string): boolean {
  if (method === 'GET') {
    // read as Apollo reads it: JSON, where `persisted\u0051uery` is the same key
    const extensions = new URLSearchParams(search).get('extensions');
    if (extensions === null) return false;
    try {
      const parsed: unknown = JSON.parse(extensions);
      return typeof parsed === 'object' && parsed !== null && 'persistedQuery' in parsed;
    } catch {
      return false; // Apollo refuses it as it is
    }
  }
  if (typeof body !== 'object' || body === null) return false;
  const { extensions } = body as { extensions?: unknown };
  return typeof extensions === 'object' && extensions !== null && 'persistedQuery' in extensions;
}

/** The headers a request-level error carries: the challenge with a 401, Retry-After with a 429. */
function errorHeaders(error: GatewayError): Record<string, string> {
  if (error.code === ErrorCode.UNAUTHENTICATED) return { 'www-authenticate': 'Basic realm="recs-gateway"' };
  if (error.code === ErrorCode.RATE_LIMITED) return { 'retry-after': String(Math.ceil(error.retryAfter ?? 1)) };
  return {};
}

function wantsIde(req: IncomingMessage, search: string): boolean {
  const params = new URLSearchParams(search);
  return req.method === 'GET' && !params.has('query') && !params.has('extensions') && /text\/html/.test(req.headers.accept ?? '');
}

function toHeaderMap(req: IncomingMessage): HeaderMap {
  const headers = new HeaderMap();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined) continue;
    headers.set(name, Array.isArray(value) ? value.join(', ') : value);
  }
  return headers;
}

/** A request to the REST interfaces; a class for the lazy `signal` getter (see RequestDeadline). */
class ServedRestRequest implements RestRequest {
  readonly method: string;
  readonly path: string;
  readonly query: URLSearchParams;
  readonly headers: IncomingMessage['headers'];

  constructor(
    req: IncomingMessage,
    url: URL,
    readonly body: unknown,
    private readonly deadline: RequestDeadline,
    readonly log: Logger,
  ) {
    this.method = (req.method ?? 'GET').toUpperCase();
    this.path = url.pathname;
    this.query = url.searchParams;
    this.headers = req.headers;
  }

  get signal(): AbortSignal {
    return this.deadline.signal;
  }
}

/**
 * The formatError of both GraphQL paths (Apollo's and the prepared one): codes from the closed
 * set pass without a stack trace, a limit gets QUERY_TOO_COMPLEX, anything else is logged whole
 * and shown as INTERNAL_SERVER_ERROR with nothing of it.
 */
export function gatewayFormatError(log: Logger): (formatted: GraphQLFormattedError, error: unknown) => GraphQLFormattedError {
  return (formatted, error) => {
    const code = formatted.extensions?.code;
    if (formatted.extensions?.limit !== undefined || (code === ErrorCode.GRAPHQL_PARSE_FAILED && isTokenLimitError(formatted.message))) {
      // Apollo files every validation failure under one code; a limit gets its own
      return { ...formatted, extensions: { ...formatted.extensions, code: ErrorCode.QUERY_TOO_COMPLEX } };
    }
    // Apollo refuses a few requests with an error of no code and a 4xx status of its own (a
    // persisted query whose hash does not match its text, an unknown persisted-query version):
    // the client's mistake, not a fault of ours
    const http = error instanceof GraphQLError && error.extensions?.code === undefined && !error.originalError ? (error.extensions?.http as { status?: unknown } | undefined) : undefined;
    if (code === ErrorCode.INTERNAL_SERVER_ERROR && typeof http?.status === 'number' && http.status >= 400 && http.status < 500) {
      return { ...formatted, extensions: { ...formatted.extensions, code: ErrorCode.BAD_REQUEST } };
    }
    if (isErrorCode(code) && code !== ErrorCode.INTERNAL_SERVER_ERROR) {
      const { stacktrace: _stacktrace, ...extensions } = formatted.extensions ?? {};
      return { ...formatted, extensions };
    }
    // not one of ours: log it whole, show nothing of it
    log.error({ err: error }, 'unexpected error in a GraphQL request');
    return {
      message: 'Internal server error',
      ...(formatted.path ? { path: formatted.path } : {}),
      ...(formatted.locations ? { locations: formatted.locations } : {}),
      extensions: { code: ErrorCode.INTERNAL_SERVER_ERROR },
    };
  };
}

/**
 * The node:http server with the client limits: a slow client (slowloris headers, a body that
 * never ends) is answered 408 and cut off at the timeout, and connections past the cap are
 * closed unanswered, so a few hundred sockets cannot hold the process.
 */
function createHttpServer(limits: Config['server']): http.Server {
  const server = http.createServer({
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    // node looks for expired requests this often (30 s by default, which would stretch a 10 s
    // timeout to 40 s); a quarter of the shorter timeout keeps the overshoot within 25%
    connectionsCheckingInterval: Math.max(25, Math.min(1_000, Math.floor(limits.headersTimeoutMs / 4))),
  });
  if (limits.maxConnections > 0) server.maxConnections = limits.maxConnections;
  return server;
}

/** Where a listening server is, as bound, and a URL to reach it from this machine. */
export interface ListenAddress {
  /** The bound address: `::` or `0.0.0.0` for every interface. */
  address: string;
  port: number;
  /** Whether it takes connections on every interface (HOST unset, `::` or `0.0.0.0`). */
  allInterfaces: boolean;
  /** A base URL for a client on this machine: the loopback address when on every interface. */
  localUrl: string;
}

export function listenAddress(server: http.Server): ListenAddress {
  const { address, port, family } = server.address() as AddressInfo;
  const allInterfaces = address === '::' || address === '0.0.0.0';
  const local = allInterfaces ? '127.0.0.1' : family === 'IPv6' ? `[${address}]` : address;
  return { address, port, allInterfaces, localUrl: `http://${local}:${port}` };
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
  const metrics = options.metrics ?? new GatewayMetrics();
  metrics.watch({
    cache: cache.stats,
    rateLimits: limiter.counts,
    ...('breakerState' in backend && typeof backend.breakerState === 'function'
      ? { breakers: backend.breakerState as () => Record<string, BreakerState> }
      : {}),
  });
  const addresses = new ClientAddresses(config.trustProxy ?? []);
  const anonymousBodyLimit = Math.min(config.anonymousBodyLimitBytes ?? DEFAULT_ANONYMOUS_BODY_LIMIT, config.bodyLimitBytes);
  const maxResponses = config.responseCacheMaxEntries ?? DEFAULT_RESPONSE_CACHE_ENTRIES;
  const responseCache = maxResponses > 0 ? new ResponseCache({ maxEntries: maxResponses, maxTokens: config.limits.maxTokens }) : null;

  const httpServer = createHttpServer(config.server ?? DEFAULT_SERVER_LIMITS);
  const schema = buildGatewaySchema({ introspection: config.introspection, maxCost: config.limits.maxCost });
  const trustedDocuments = config.trustedDocuments ? new TrustedDocuments(config.trustedDocuments) : null;
  const parseOptions = { maxTokens: config.limits.maxTokens };
  const validationRules = [queryLimitsRule(config.limits)];
  const formatError = gatewayFormatError(log);
  const apollo = new ApolloServer<GatewayContext>({
    schema,
    introspection: config.introspection,
    csrfPrevention: true,
    // main.ts owns the signals: Apollo's own handler would stop, then re-raise the signal and die
    stopOnTerminationSignals: false,
    includeStacktraceInErrorResponses: false,
    persistedQueries: { cache: new PersistedQueryCache(cache) },
    // sized by the source text each parsed document holds, not by Apollo's estimate of the tree
    documentStore: createDocumentStore(),
    allowBatchedHttpRequests: false,
    parseOptions,
    validationRules,
    // no "Did you mean ...?" where the schema is not to be explored
    hideSchemaDetailsFromClientErrors: !config.introspection,
    plugins: [
      ApolloServerPluginLandingPageDisabled(),
      // Apollo turns it on for a subgraph schema: every field's timing to whoever sends
      // apollo-federation-include-trace (traces go through OpenTelemetry here)
      ApolloServerPluginInlineTraceDisabled(),
      observabilityPlugin<GatewayContext>(metrics),
    ],
    formatError,
  });
  const maxDocuments = config.preparedOperationsMaxDocuments ?? 1_000;
  const prepared =
    maxDocuments > 0
      ? new PreparedOperations({
          // a schema of its own: Apollo wraps every field of its schema for its plugins, and
          // graphql-jit inlines only the fields that have no resolver (BENCHMARKS.md, eighth pass)
          schema: buildGatewaySchema({ introspection: config.introspection, maxCost: config.limits.maxCost }),
          parseOptions,
          validationRules,
          formatError,
          maxDocuments,
          introspection: config.introspection,
          hideSchemaDetailsFromClientErrors: !config.introspection,
        })
      : null;
  await apollo.start();

  /**
   * GraphiQL: the page, for a browser's GET /graphql without a query (`file` null), and the files
   * it loads from under /graphql/ide/. Each request spends a token of the client address's
   * bucket: the page is small, but its files are megabytes, and they are served before any
   * authentication.
   */
  async function serveIde(req: IncomingMessage, res: ServerResponse, file: string | null): Promise<void> {
    const method = req.method ?? 'GET';
    if (method !== 'GET' && method !== 'HEAD') {
      return sendJson(res, 405, { errors: [{ message: `Method ${method} not allowed` }] }, { allow: 'GET, HEAD' });
    }
    try {
      await limiter.admit(null, addresses.of(req));
    } catch (error) {
      if (!(error instanceof GatewayError)) throw error;
      return sendJson(res, httpStatusOf[error.code], graphqlError(error.message, error.code), errorHeaders(error));
    }
    const answer = await ideResponse(file, req.headers);
    if (answer === null) return sendJson(res, 404, { errors: [{ message: 'No such file of the IDE' }] });
    res.writeHead(answer.status, answer.headers);
    res.end(method === 'HEAD' || answer.body === null ? undefined : answer.body);
  }

  /**
   * /graphql. The order is the contract: the credential is authenticated under the rate limits
   * from the headers alone (401 or 429 whatever is asked, before a byte of the body is read),
   * then the body is read (a request without credentials may send only a small one) and parsed
   * (400 when it is not JSON), then a PUBLIC answer may come from the response cache, and only
   * then does a GraphQL pipeline see the request. Nothing a stranger sends is normalised, parsed
   * or remembered beyond that small body.
   *
   * The cached path is kept lean on purpose (BENCHMARKS.md has what each step bought): a body
   * seen before is not parsed again, no span is made without a tracer, the headers go out in one
   * writeHead, and x-request-id is set with them rather than up front.
   */
  async function handleGraphQL(req: IncomingMessage, res: ServerResponse, search: string, record: RequestRecord): Promise<void> {
    const method = (req.method ?? 'GET').toUpperCase();
    if (method !== 'POST' && wantsIde(req, search)) {
      res.setHeader('x-request-id', record.id);
      return serveIde(req, res, null);
    }

    // A key verified before, under limits that answer at once, is authenticated without waiting:
    // no promise, no deadline (a cached answer needs neither).
    const authorization = req.headers.authorization;
    const address = addresses.of(req);
    let principal: PrincipalModel | null | undefined =
      authorization === undefined ? undefined : limiter.authenticateNow(backend.keys, authorization, address, req.socket);
    let deadline: RequestDeadline | undefined;
    if (principal === undefined) {
      deadline = new RequestDeadline(res, config.requestDeadlineMs);
      try {
        principal = await limiter.authenticate(backend.keys, authorization, address, deadline);
      } catch (error) {
        if (!(error instanceof GatewayError)) throw error;
        res.setHeader('x-request-id', record.id);
        // a large body left unread is not read to its end either: the connection goes with it
        const closing = Number(req.headers['content-length'] ?? 0) > anonymousBodyLimit || req.headers['transfer-encoding'] !== undefined;
        return sendJson(res, httpStatusOf[error.code], graphqlError(error.message, error.code), {
          ...errorHeaders(error),
          ...(closing ? { connection: 'close' } : {}),
        });
      }
    }

    let text: string | undefined;
    let body: unknown;
    let cacheKey: string | null = null;
    // The hot path (src/http/responseCache.ts): authenticated callers only, PUBLIC answers only.
    const cached = principal !== null && responseCache !== null && method === 'POST' ? responseCache : null;
    if (method === 'POST') {
      text = (await readBody(req, principal === null ? anonymousBodyLimit : config.bodyLimitBytes)).toString('utf8');
      // a body seen before, as sent: no JSON parsing (it passed the trusted-documents check then)
      cacheKey = cached?.knownKey(req.headers, text) ?? null;
      if (cacheKey !== null && serveCached(res, cacheKey, record)) return;
      body = parseBody(text, req.headers['content-type']);
    }
    // a listed hash becomes its body; with TRUSTED_DOCUMENTS_ONLY nothing else runs (before any
    // parsing as GraphQL, and before the response cache, which would answer a text's variants)
    const trusted = trustedDocuments?.resolve(method, search, body) ?? null;
    if (trusted instanceof GatewayError) {
      res.setHeader('x-request-id', record.id);
      return sendJson(res, httpStatusOf[trusted.code], graphqlError(trusted.message, trusted.code));
    }
    if (trusted !== null) ({ body, search } = trusted);
    if (cached !== null && cacheKey === null) {
      cacheKey = cached.keyOf(method, req.headers, body, text);
      if (cacheKey !== null && serveCached(res, cacheKey, record)) return;
    }

    res.setHeader('x-request-id', record.id);
    // persisted queries are registered in a cache every process shares: not by strangers
    if (principal === null && asksPersistedQuery(method, body, search)) {
      const error = unauthenticated();
      return sendJson(res, httpStatusOf[error.code], graphqlError(error.message, error.code), errorHeaders(error));
    }
    // the envelope, checked once as Apollo checks it: the prepared path answers only what Apollo would
    const envelope = checkEnvelope(method, req.headers, search, body);
    if (prepared === null && !envelope.ok && envelope.stage === 'gateway') {
      const refused = refusalAnswer(envelope.stage, [envelope.error], 'application/json; charset=utf-8', formatError);
      return send(res, refused.status, refused.headers, refused.body, null, record);
    }
    deadline ??= new RequestDeadline(res, config.requestDeadlineMs);
    const context = new RequestContext(principal, backend, createLoaders(backend.recs, deadline, { onBatch: metrics.onBatch }), deadline, record);
    const request = prepared?.fromEnvelope(method, req.headers, envelope) ?? null;
    const answer = request === null ? null : await answerPrepared(request, context, record);
    if (answer !== null) return send(res, answer.status, answer.headers, answer.body, cacheKey, record);

    const httpGraphQLRequest: HTTPGraphQLRequest = { method, headers: toHeaderMap(req), search, body };
    const result = await apollo.executeHTTPGraphQLRequest({ httpGraphQLRequest, context: async () => context });
    const headers: Record<string, string> = {};
    for (const [name, value] of result.headers) headers[name] = value;
    if (result.body.kind === 'complete') {
      if ((result.status ?? 200) === 200) prepared?.learnContentType(req.headers, headers['content-type']);
      return send(res, result.status ?? 200, headers, result.body.string, cacheKey, record);
    }
    res.writeHead(result.status ?? 200, headers);
    for await (const chunk of result.body.asyncIterator) res.write(chunk);
    res.end();
  }

  /** Answers from the response cache when it holds a fresh answer for key; false when it does not. */
  function serveCached(res: ServerResponse, key: string, record: RequestRecord): boolean {
    const started = performance.now();
    const hit = responseCache!.serve(key, res, record.id);
    if (hit !== null) metrics.graphqlAnswered(hit, 'ok', started, record);
    return hit !== null;
  }

  /** A query from the prepared path, counted and named as the observability plugin would. */
  async function answerPrepared(request: PreparedRequest, context: GatewayContext, record: RequestRecord): Promise<PreparedAnswer | null> {
    const started = performance.now();
    const operation = metrics.operationLabel(request.operation.operationName, true);
    record.operation = operation;
    if (tracingActive() && request.refusal === undefined) {
      const span = trace.getActiveSpan();
      span?.setAttribute('graphql.operation.name', operation);
      span?.setAttribute('graphql.operation.type', 'query');
    }
    const answer = await prepared!.execute(request, context);
    if (answer !== null) {
      const code = answer.firstErrorCode;
      metrics.graphqlAnswered(operation, code === null ? 'ok' : isErrorCode(code) ? code : 'error', started, record, context.principal === null);
    }
    return answer;
  }

  /**
   * A whole GraphQL answer: sent with its length, then offered to the response cache. Encoded
   * once, for both; the cache's work comes after the answer is on its way.
   */
  function send(res: ServerResponse, status: number, headers: Record<string, string>, body: string, cacheKey: string | null | undefined, record: RequestRecord): void {
    // a shared cache may keep a public answer, but only for callers with the same credential
    if (headers['cache-control']?.includes('public')) headers.vary = 'authorization';
    const bytes = Buffer.from(body, 'utf8');
    headers['content-length'] = String(bytes.length);
    res.writeHead(status, headers);
    res.end(bytes);
    if (cacheKey !== null && cacheKey !== undefined) responseCache!.offer(cacheKey, status, headers, bytes, record.operation);
  }

  /** The seed REST interfaces, served from the same backend: a drop-in for their clients. */
  /**
   * The REST interfaces, in the order /graphql keeps: a request without credentials spends a token
   * of its address's bucket; credentials are checked from the headers before a byte of a body is
   * read; only the creation of a key takes a body, up to BODY_LIMIT_BYTES and with valid
   * credentials; every other body is left unread.
   */
  async function handleRest(req: IncomingMessage, res: ServerResponse, url: URL): Promise<boolean> {
    const isKeys = url.pathname === '/api/v1/apikey' || url.pathname.startsWith('/api/v1/apikey/');
    if (!isKeys && !url.pathname.startsWith('/v1/')) return false;
    const address = addresses.of(req);
    const guarded = limiter.guard(backend.keys, address);
    const authorization = req.headers.authorization;
    const refusal = (error: unknown): RestResponse => (isKeys ? apiKeyErrorResponse(error, authorization) : recsErrorResponse(error));
    if (isKeys ? authorization === undefined : !url.searchParams.has('apiKey')) {
      try {
        await limiter.admit(null, address);
      } catch (error) {
        if (!(error instanceof GatewayError)) throw error;
        return writeRest(req, res, refusal(error), false);
      }
    }
    let keys: KeyService = guarded;
    let raw: Buffer = Buffer.alloc(0);
    let read = false;
    if (req.method === 'POST' && isKeys && url.pathname.replace(/\/+$/, '') === '/api/v1/apikey') {
      // without credentials the handler answers 401 whatever the body says: it is not read
      let limit = 0;
      if (authorization !== undefined) {
        const outcome = await guarded.authenticate(authorization).then(
          (principal) => ({ principal }),
          (error: unknown) => ({ error }),
        );
        // the handler authenticates again: it gets this very answer, counted once
        keys = {
          ...guarded,
          authenticate: (value, options) =>
            value !== authorization ? guarded.authenticate(value, options) : 'error' in outcome ? Promise.reject(outcome.error) : Promise.resolve(outcome.principal),
        };
        limit = 'error' in outcome ? 0 : config.bodyLimitBytes;
      }
      if (limit > 0) {
        raw = await readBody(req, limit);
        read = true;
      }
    }
    let body: unknown;
    try {
      body = raw.length > 0 ? parseJson(raw.toString('utf8')) : undefined;
    } catch {
      body = undefined; // the handlers answer a missing, broken or too deep body with the interface's 400
    }
    const restRequest = new ServedRestRequest(req, url, body, new RequestDeadline(res, config.requestDeadlineMs), log);
    const answer = isKeys ? serveApiKeys(restRequest, keys) : serveRecommendations(restRequest, keys, backend.recs);
    if (answer === null) return false;
    return writeRest(req, res, await answer, read);
  }

  /** A REST answer; a body left unread that is large is not read to its end either: the connection goes. */
  function writeRest(req: IncomingMessage, res: ServerResponse, response: RestResponse, bodyRead: boolean): true {
    const closing = !bodyRead && (Number(req.headers['content-length'] ?? 0) > anonymousBodyLimit || req.headers['transfer-encoding'] !== undefined);
    res.writeHead(response.status, {
      ...response.headers,
      'content-length': Buffer.byteLength(response.body),
      ...(closing ? { connection: 'close' } : {}),
    });
    res.end(response.body);
    return true;
  }

  function graphql(req: IncomingMessage, res: ServerResponse, search: string, record: RequestRecord): Promise<void> {
    if (!tracingActive()) return handleGraphQL(req, res, search, record);
    return inServerSpan(`${req.method} /graphql`, { 'http.request.method': req.method ?? 'GET' }, () => handleGraphQL(req, res, search, record));
  }

  /**
   * Routes a request. Not async itself: /graphql's promise is handed back as it is (an async
   * function returning a promise would wait two more turns of the microtask queue to settle).
   */
  function handle(req: IncomingMessage, res: ServerResponse, record: RequestRecord): Promise<void> {
    const target = req.url ?? '/';
    // /graphql as sent needs no URL object; anything else is parsed (and normalised) first
    const query = target.indexOf('?');
    if ((query === -1 ? target : target.slice(0, query)) === '/graphql') {
      return graphql(req, res, query === -1 ? '' : target.slice(query), record);
    }
    return handleOther(req, res, target, record);
  }

  async function handleOther(req: IncomingMessage, res: ServerResponse, target: string, record: RequestRecord): Promise<void> {
    res.setHeader('x-request-id', record.id);
    let url: URL;
    try {
      url = new URL(target, 'http://gateway');
    } catch {
      throw new HttpError(400, 'The request target is not a valid URL');
    }
    if (await handleRest(req, res, url)) return;
    if (url.pathname.startsWith(IDE_ASSET_PREFIX)) return serveIde(req, res, url.pathname.slice(IDE_ASSET_PREFIX.length));
    switch (url.pathname) {
      case '/graphql':
        return graphql(req, res, url.search, record);
      case '/healthz':
        return sendJson(res, 200, { status: 'ok' });
      case '/openapi.json': {
        const answer = openApiResponse(req.method ?? 'GET', req.headers['if-none-match']);
        res.writeHead(answer.status, answer.headers);
        res.end(answer.body);
        return;
      }
      case '/readyz': {
        const { httpStatus, body } = await readiness(backend, cache, limiter);
        return sendJson(res, httpStatus, body);
      }
      case '/metrics': {
        if (!metricsAuthorized(req.headers.authorization, config.metricsToken)) {
          // nothing about the metrics, nor about what was sent
          return sendJson(res, 401, { errors: [{ message: 'Unauthorized' }] }, { 'www-authenticate': 'Bearer realm="metrics"' });
        }
        const { contentType, body } = await metrics.render();
        res.writeHead(200, { 'content-type': contentType, 'cache-control': 'no-store' });
        res.end(body);
        return;
      }
      default:
        return sendJson(res, 404, { errors: [{ message: `No route for ${url.pathname}` }] });
    }
  }

  const sinks = { log, metrics };
  httpServer.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const sent = req.headers['x-request-id'];
    const requestId = typeof sent === 'string' ? sent.slice(0, 64) : randomUUID();
    handle(req, res, observeRequest(req, res, requestId, sinks)).catch((error: unknown) => {
      if (!res.headersSent && !res.hasHeader('x-request-id')) res.setHeader('x-request-id', requestId);
      if (error instanceof HttpError) {
        // a body refused as too large is not read to its end: the connection goes with it
        if (!res.headersSent) sendJson(res, error.status, graphqlError(error.message, ErrorCode.BAD_REQUEST), error.status === 413 ? { connection: 'close' } : {});
        else res.destroy();
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
  });
  // a client that sends garbage gets a 400 from node; it must not take the process down
  httpServer.on('clientError', (error, socket) => {
    // a client too slow to send its request (REQUEST_TIMEOUT_MS) is told so, as RFC 9110 says
    const status = (error as { code?: string }).code === 'ERR_HTTP_REQUEST_TIMEOUT' ? '408 Request Timeout' : '400 Bad Request';
    if (socket.writable) socket.end(`HTTP/1.1 ${status}\r\nconnection: close\r\n\r\n`);
    else socket.destroy();
  });

  let stopping: Promise<void> | undefined;
  return {
    httpServer,
    preparedStats: prepared?.stats ?? null,
    responseCacheStats: responseCache?.stats ?? null,
    listen: (port, host) =>
      new Promise((resolve, reject) => {
        httpServer.once('error', reject);
        httpServer.listen(port, host, () => {
          httpServer.off('error', reject);
          resolve(listenAddress(httpServer).localUrl);
        });
      }),
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
