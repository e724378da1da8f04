import type { IncomingMessage, ServerResponse } from 'node:http';
import { ErrorCode, GatewayError, httpStatusOf, isErrorCode } from '../../errors.js';
import { RequestContext } from '../../graphql/schema/context.js';
import { asksPersistedQuery, withoutRegistration } from '../../graphql/pipeline/persistedQueries.js';
import type { GraphQLEngine } from '../../graphql/pipeline/engine.js';
import { createLoaders } from '../../graphql/schema/loaders.js';
import type { Config } from '../../config/env.js';
import type { Resolved } from '../../graphql/pipeline/apollo.js';
import { variantKey, type AnswerSources } from '../../graphql/pipeline/responseCache.js';
import type { Attribution } from '../../observability/attribution.js';
import type { ListCode } from '../../model/trackingId.js';
import type { GatewayMetrics } from '../../observability/metrics.js';
import type { RequestRecord } from '../../observability/requestScope.js';
import { trace } from '@opentelemetry/api';
import { inServerSpan, tracingActive } from '../../observability/tracing.js';
import type { PrincipalModel } from '../../ports/backend.js';
import { holdsScope } from '../../model/scopes.js';
import { deepParameter, MAX_BODY_DEPTH } from '../body.js';
import { allowOf, GRAPHQL_ROUTE, intakeOf } from '../routeTable.js';
import { lingerAfterAnswer } from '../linger.js';
import { ANSWERED, Prelude, type PreludeDeps } from '../prelude.js';
import { GRAPHQL_REFUSALS } from '../refusals.js';
import { deadlineOf } from '../requestSignal.js';
import { challengeFor, errorHeaders, gatewayErrorBody, graphqlError, sendJson, sendMethodNotAllowed } from '../send.js';

const POST_BODY = intakeOf(GRAPHQL_ROUTE, 'POST').body;

function wantsIde(req: IncomingMessage, search: string): boolean {
  const params = new URLSearchParams(search);
  return req.method === 'GET' && !params.has('query') && !params.has('extensions') && /text\/html/.test(req.headers.accept ?? '');
}

/** What /graphql needs: the GraphQL engine, and HTTP, authentication and the response cache in front of it. */
export interface GraphQLRouteDeps extends PreludeDeps {
  config: PreludeDeps['config'] & Partial<Pick<Config, 'maxResponseBytes'>>;
  metrics: GatewayMetrics;
  engine: GraphQLEngine;
  /** The IDE's page, for a browser's GET /graphql without a query. */
  serveIde: (req: IncomingMessage, res: ServerResponse, file: null) => Promise<void>;
  /** CORS_ORIGINS lists origins: a PUBLIC answer then varies by Origin. */
  varyByOrigin?: boolean;
  /** Each request's variant (X-Recs-Shopper), and the counts of the lists answers hold, cached or not. */
  attribution: Attribution;
}

/** /graphql's handler: `(req, res, search, record)`, search the URL's query string as sent. */
export function graphqlRoute(deps: GraphQLRouteDeps): (req: IncomingMessage, res: ServerResponse, search: string, record: RequestRecord) => Promise<void> {
  const { config, backend, limiter, addresses, metrics, serveIde, attribution } = deps;
  const prelude = new Prelude(deps, GRAPHQL_REFUSALS, true);
  const { responseCache, trustedDocuments, newDocuments, execute } = deps.engine;
  const publicVary = deps.varyByOrigin === true ? 'authorization, origin' : 'authorization';

  /** The order is the contract: 405, then the prelude (authentication and rate limits from the headers alone, before
   * the body is read; then the body), then trusted documents, the response cache, and only then the engine. */
  async function handleGraphQL(req: IncomingMessage, res: ServerResponse, search: string, record: RequestRecord): Promise<void> {
    const method = (req.method ?? 'GET').toUpperCase();
    if (method !== 'GET' && method !== 'POST') return refuseMethod(req, res, method, record);
    if (method !== 'POST' && wantsIde(req, search)) {
      res.setHeader('x-request-id', record.id);
      return serveIde(req, res, null);
    }

    // 1. the prelude: admit, authenticate, limit, read (prelude.ts)
    const address = addresses.of(req);
    let caller = prelude.caller(req, res, record, req.headers.authorization, address);
    if (caller instanceof Promise) caller = await caller;
    if (caller === ANSWERED) return;
    const principal = caller;
    const tracking = attribution.forRequest(req.headers);
    let text: string | undefined;
    let body: unknown;
    let cacheKey: string | null = null;
    // only authenticated callers, PUBLIC answers only: every field such an answer holds needs RECOMMENDATIONS_READ
    const cached = principal !== null && holdsScope(principal, 'RECOMMENDATIONS_READ') && responseCache !== null && method === 'POST' ? responseCache : null;
    if (method === 'POST') {
      const raw = await prelude.read(req, res, record, POST_BODY, principal, address);
      if (raw === ANSWERED) return;
      text = raw!.toString('utf8');
      // a body seen before needs no parsing: it passed the trusted-documents check then
      cacheKey = variantKey(cached?.knownKey(req.headers, text) ?? null, tracking.variant);
      if (cacheKey !== null && serveCached(res, cacheKey, record, principal)) return;
      body = prelude.parse(req, res, record, text);
      if (body === ANSWERED) return;
    } else {
      const deep = deepParameter(search);
      if (deep !== null) {
        res.setHeader('x-request-id', record.id);
        return sendJson(res, 400, graphqlError(`\`${deep}\` nests deeper than ${MAX_BODY_DEPTH} levels`, ErrorCode.BAD_REQUEST));
      }
    }

    // 2. trusted documents: with TRUSTED_DOCUMENTS_ONLY nothing else runs, not even the response cache, which would answer a text's variants
    const trusted = trustedDocuments?.resolve(method, search, body) ?? null;
    if (trusted instanceof GatewayError) {
      res.setHeader('x-request-id', record.id);
      return sendJson(res, httpStatusOf[trusted.code], graphqlError(trusted.message, trusted.code));
    }
    if (trusted !== null) ({ body, search } = trusted);

    // 3. the response cache
    if (cached !== null && cacheKey === null) {
      cacheKey = variantKey(cached.keyOf(method, req.headers, body, text), tracking.variant);
      if (cacheKey !== null && serveCached(res, cacheKey, record, principal)) return;
    }

    // 4. the engine: persisted queries are shared by every process, so strangers may look one up, never register one
    if (principal === null && asksPersistedQuery(method, body, search)) ({ body, search } = withoutRegistration(method, body, search));
    const unknownText = newDocuments.unknownText(method, body, search);
    if (unknownText !== null) {
      try {
        await limiter.mayValidate(principal, address);
      } catch (error) {
        if (!(error instanceof GatewayError)) throw error;
        res.setHeader('x-request-id', record.id);
        return sendJson(res, httpStatusOf[error.code], gatewayErrorBody(error, `Too many new query texts (NEW_DOCUMENTS_RPS): retry in ${Math.ceil(error.retryAfter ?? 1)} s; texts sent before are still answered`), errorHeaders(error, req.headers));
      }
    }
    const deadline = deadlineOf(res, config.requestDeadlineMs);
    const sources = cacheKey !== null ? responseCache!.sourcesOfNewAnswer(cacheKey) : null;
    const hooks = sources === null ? { onBatch: metrics.onBatch } : { onBatch: metrics.onBatch, onList: sources.onList, onItems: sources.onItems };
    const context = new RequestContext(principal, backend, createLoaders(backend.recs, deadline, hooks, backend.recsNow ?? null), deadline, record, address, config.maxResponseBytes, tracking);
    const started = performance.now();
    const answer = await execute({ method, headers: req.headers, search, body }, context);
    const { resolved } = context;
    observe(resolved, answer.status, started, record, principal);
    if (resolved.validated) {
      if (unknownText !== null) newDocuments.remember(unknownText);
      limiter.validated(principal, address).catch(() => undefined);
    }

    // 5. send
    if (answer.status === 401 && answer.headers['www-authenticate'] !== undefined) answer.headers['www-authenticate'] = challengeFor(req.headers);
    attribution.counter.countImpressions(tracking.impressions);
    if (answer.chunks === undefined) return send(res, answer.status, answer.headers, answer.body, cacheKey, record, sources, tracking.impressions);
    res.setHeader('x-request-id', record.id);
    res.writeHead(answer.status, answer.headers);
    for await (const chunk of answer.chunks) res.write(chunk);
    res.end();
  }

  /** The operation's metrics and trace attributes, once an engine answered it. */
  function observe(resolved: Resolved, status: number, started: number, record: RequestRecord, principal: PrincipalModel | null): void {
    const operation = metrics.operationLabel(resolved.operationName, resolved.operationType !== null);
    record.operation = operation;
    const code = resolved.firstErrorCode;
    const outcome = code !== null ? (isErrorCode(code) ? code : 'error') : status >= 400 ? ErrorCode.BAD_REQUEST : 'ok';
    metrics.graphqlAnswered(operation, outcome, started, record, principal);
    if (tracingActive() && resolved.operationType !== null) {
      const span = trace.getActiveSpan();
      span?.setAttribute('graphql.operation.name', operation);
      span?.setAttribute('graphql.operation.type', resolved.operationType);
    }
  }

  /** 405 before Apollo's CSRF check and the credential: no other method is served, whoever asks. */
  function refuseMethod(req: IncomingMessage, res: ServerResponse, method: string, record: RequestRecord): void {
    res.setHeader('x-request-id', record.id);
    // a body is not read: one sent takes the connection with it
    const length = req.headers['content-length'];
    if ((length !== undefined && length !== '0') || req.headers['transfer-encoding'] !== undefined) {
      res.setHeader('connection', 'close');
      lingerAfterAnswer(req, res);
    }
    sendMethodNotAllowed(res, method, allowOf(GRAPHQL_ROUTE));
  }

  /** Answers from the response cache when it holds a fresh answer for key; false when it does not. */
  function serveCached(res: ServerResponse, key: string, record: RequestRecord, principal: PrincipalModel | null): boolean {
    const started = performance.now();
    const hit = responseCache!.serve(key, res, record.id, attribution.counter.countImpressions);
    if (hit !== null) metrics.graphqlAnswered(hit, 'ok', started, record, principal);
    return hit !== null;
  }

  /** A whole GraphQL answer: sent with its length, then offered to the response cache. The headers go to writeHead
   * as one array, x-request-id first, as the cached path sends them: node takes an array without a setHeader each. */
  function send(res: ServerResponse, status: number, headers: Record<string, string>, body: string, cacheKey: string | null | undefined, record: RequestRecord, sources: AnswerSources | null, impressions: readonly ListCode[]): void {
    // a shared cache may keep a public answer, but only for callers with the same credential
    if (headers['cache-control']?.includes('public')) headers.vary = publicVary;
    const bytes = cacheKey !== null && cacheKey !== undefined ? Buffer.from(body, 'utf8') : null;
    headers['content-length'] = String(bytes === null ? Buffer.byteLength(body, 'utf8') : bytes.length);
    const flat = ['x-request-id', record.id];
    for (const name in headers) flat.push(name, headers[name]!);
    res.writeHead(status, flat);
    if (bytes === null) {
      res.end(body, 'utf8');
      return;
    }
    res.end(bytes);
    responseCache!.offer(cacheKey!, status, headers, bytes, record.operation, sources, impressions);
  }

  function graphql(req: IncomingMessage, res: ServerResponse, search: string, record: RequestRecord): Promise<void> {
    if (!tracingActive()) return handleGraphQL(req, res, search, record);
    return inServerSpan(`${req.method} /graphql`, { 'http.request.method': req.method ?? 'GET' }, () => handleGraphQL(req, res, search, record));
  }
  return graphql;
}
