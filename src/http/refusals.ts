import { badUserInput, ErrorCode, GatewayError, httpStatusOf, rateLimited } from '../errors.js';
import { isJsonContentType } from '../graphql/pipeline/contentType.js';
import type { Logger } from '../logger.js';
import {
  apiKeyBodyTooLarge, apiKeyEncoded, apiKeyErrorResponse, apiKeyNotJson, ingestBodyTooLarge, ingestErrorResponse, ingestNotJson, ingestUnsupportedEncoding, isApiKeyJson, recsErrorResponse,
} from '../rest/index.js';
import type { Answer, Refusals } from './prelude.js';
import { errorHeaders, gatewayErrorBody, graphqlError } from './send.js';

// Each interface's answers to what the prelude refuses: the same refusals, each in its documented error body.

const graphqlAnswer = (status: number, value: unknown, headers: Record<string, string> = {}): Answer => ({
  status,
  headers: { 'content-type': 'application/json; charset=utf-8', ...headers },
  body: JSON.stringify(value),
});

/** /graphql: GraphQL's error body, with extensions.code. */
export const GRAPHQL_REFUSALS: Refusals = {
  // anything else is no client's doing: thrown on, to the 500
  error: (error, req) => (error instanceof GatewayError ? graphqlAnswer(httpStatusOf[error.code], gatewayErrorBody(error), errorHeaders(error, req.headers)) : null),
  // Apollo's CSRF prevention and its own parsing judge the content type
  contentType: () => null,
  encoded: (message, headers) => graphqlAnswer(415, graphqlError(message, ErrorCode.BAD_REQUEST), headers),
  busy: () => {
    const busy = rateLimited(1);
    return graphqlAnswer(httpStatusOf[busy.code], gatewayErrorBody(busy, 'Too many large request bodies at once: try again shortly'), { ...errorHeaders(busy, {}), connection: 'close' });
  },
  tooLarge: (_limit, message) => graphqlAnswer(413, graphqlError(message, ErrorCode.BAD_REQUEST), { connection: 'close' }),
  badBody: (message) => graphqlAnswer(400, graphqlError(message, ErrorCode.BAD_REQUEST)),
};

/** The REST interfaces' refusals (src/rest/*): api keys, the ingestion twins, recommendations. */
export function restRefusals(log: Logger): { keys: Refusals; events: Refusals; items: Refusals; recs: Refusals } {
  const keys: Refusals = {
    error: (error, req) => apiKeyErrorResponse(error, req.headers.authorization, undefined, log),
    contentType: (type) => (isApiKeyJson(type) ? null : apiKeyNotJson()),
    encoded: apiKeyEncoded,
    busy: () => apiKeyErrorResponse(rateLimited(1), undefined),
    tooLarge: (_limit, message) => apiKeyBodyTooLarge(message),
    badBody: (message, req) => apiKeyErrorResponse(badUserInput(message), req.headers.authorization),
  };
  const ingest = (field: 'events' | 'items'): Refusals => ({
    error: (error, req) => ingestErrorResponse(error, req.headers.authorization, log),
    contentType: (type) => (isJsonContentType(type) ? null : ingestNotJson()),
    encoded: ingestUnsupportedEncoding,
    busy: () => ingestErrorResponse(rateLimited(1), undefined),
    tooLarge: (limit) => ingestBodyTooLarge(limit),
    badBody: (message, req) => ingestErrorResponse(badUserInput(message, field), req.headers.authorization),
  });
  // the recommendations take no body: only `error` is ever asked
  const recs: Refusals = { ...ingest('items'), error: (error) => recsErrorResponse(error, log) };
  return { keys, events: ingest('events'), items: ingest('items'), recs };
}
