import type { IncomingHttpHeaders } from 'node:http';
import { HeaderMap, type ApolloServer } from '@apollo/server';
import { trace } from '@opentelemetry/api';
import { isErrorCode } from '../errors.js';
import type { GatewayMetrics } from '../observability/metrics.js';
import type { RequestRecord } from '../observability/requestScope.js';
import { tracingActive } from '../observability/tracing.js';
import type { GatewayContext } from './context.js';
import { checkEnvelope, refusalAnswer, type FormatError } from './envelope.js';
import { validationsSoFar } from './limits.js';
import type { PreparedOperations } from './preparedOperations.js';

/** A GraphQL request as HTTP delivered it: the method in upper case, the body read and parsed (undefined for a GET). */
export interface GraphQLHttpRequest {
  method: string;
  headers: IncomingHttpHeaders;
  /** The URL's query string as sent, with its `?` (a GET's query, variables and extensions). */
  search: string;
  body: unknown;
  /** How deep the body's JSON text nests at most (src/http/body.ts parseBody); undefined when not known. */
  bodyDepth?: number;
}

/** GraphQL's answer, for the route to write: whole (`body`), or in parts (`chunks`, incremental delivery). */
export type GraphQLHttpAnswer =
  | { status: number; headers: Record<string, string>; body: string; chunks?: undefined }
  | { status: number; headers: Record<string, string>; body?: undefined; chunks: AsyncIterable<string> };

/** Executes one GraphQL request, with its context (principal, loaders, deadline) made by the route. */
export type ExecuteGraphQL = (request: GraphQLHttpRequest, context: GatewayContext, record: RequestRecord) => Promise<GraphQLHttpAnswer>;

/** What execution is made of (GraphQLEngine's parts). */
export interface ExecutionParts {
  apollo: ApolloServer<GatewayContext>;
  /** The fast path; null when off (PREPARED_OPERATIONS_MAX_DOCUMENTS=0). */
  prepared: PreparedOperations | null;
  formatError: FormatError;
}

function toHeaderMap(headers: IncomingHttpHeaders): HeaderMap {
  const map = new HeaderMap();
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    map.set(name, Array.isArray(value) ? value.join(', ') : value);
  }
  return map;
}

/**
 * The one GraphQL entry point: the envelope is checked once, exactly as Apollo checks it
 * (envelope.ts), and only then does a request go to the fast path (preparedOperations.ts), which
 * answers nothing Apollo would refuse, or to Apollo Server. The response cache sits in front of
 * this, in the route: a cached answer never reaches it.
 *
 * One async function from the route to the fast path's execution, as when the route chose the
 * path itself: no promise layer is added for the uncached path either.
 */
export function graphqlExecution(parts: ExecutionParts, metrics: GatewayMetrics): ExecuteGraphQL {
  const { apollo, prepared, formatError } = parts;

  return async function executeGraphQL(request, context, record) {
    const { method, headers, search, body, bodyDepth } = request;
    const envelope = checkEnvelope(method, headers, search, body, bodyDepth);
    // without the fast path, a rule of the gateway's own still refuses before Apollo (which would answer)
    if (prepared === null && !envelope.ok && envelope.stage === 'gateway') {
      return refusalAnswer(envelope.stage, [envelope.error], 'application/json; charset=utf-8', formatError);
    }
    // the prepared path validates synchronously, here; Apollo marks the context itself (validationMarkPlugin)
    const validatedBefore = validationsSoFar();
    const fast = prepared?.fromEnvelope(method, headers, envelope) ?? null;
    if (validationsSoFar() !== validatedBefore) context.validated = true;
    if (fast !== null) {
      // counted and named as the observability plugin counts and names Apollo's
      const started = performance.now();
      const operation = metrics.operationLabel(fast.operation.operationName, true);
      record.operation = operation;
      if (tracingActive() && fast.refusal === undefined) {
        const span = trace.getActiveSpan();
        span?.setAttribute('graphql.operation.name', operation);
        span?.setAttribute('graphql.operation.type', fast.operation.type);
      }
      const answer = await prepared!.execute(fast, context);
      if (answer !== null) {
        const code = answer.firstErrorCode;
        metrics.graphqlAnswered(operation, code === null ? 'ok' : isErrorCode(code) ? code : 'error', started, record, context.principal);
        return answer;
      }
    }

    const result = await apollo.executeHTTPGraphQLRequest({
      httpGraphQLRequest: { method, headers: toHeaderMap(headers), search, body },
      context: () => Promise.resolve(context),
    });
    const answerHeaders: Record<string, string> = {};
    for (const [name, value] of result.headers) answerHeaders[name] = value;
    const status = result.status ?? 200;
    if (result.body.kind === 'chunked') return { status, headers: answerHeaders, chunks: result.body.asyncIterator };
    if (status === 200) prepared?.learnContentType(headers, answerHeaders['content-type']);
    return { status, headers: answerHeaders, body: result.body.string };
  };
}
