import { createHash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { GraphQLError, Kind, type GraphQLErrorOptions, type GraphQLFormattedError } from 'graphql';
import { ErrorCode } from '../errors.js';

/**
 * The GraphQL request envelope, checked once, exactly as Apollo Server 5 checks it
 * (@apollo/server's executeHTTPGraphQLRequest, runPotentiallyBatchedHttpQuery, runHttpQuery and
 * the start of processGraphQLRequest), so that a path in front of Apollo refuses what Apollo
 * refuses, with Apollo's own status and body, and answers nothing Apollo would not.
 */

/** The parts of a well-formed request, as Apollo reads them (a field of the wrong type is refused, never dropped). */
export interface GraphQLRequestParts {
  query?: string;
  operationName?: string;
  variables?: Record<string, unknown>;
  extensions?: Record<string, unknown>;
}

/**
 * Where the refusal comes from, which decides its headers:
 * - `http`: Apollo refuses it before its request pipeline (errorResponse): no Cache-Control,
 *   and the content type falls back to JSON when Accept allows none of Apollo's;
 * - `pipeline`: Apollo refuses it in its request pipeline: Cache-Control `no-store` (the
 *   cache-control plugin), and a 406 instead when Accept allows none of Apollo's types;
 * - `gateway`: a rule of the gateway's own that Apollo lacks (variables nested too deep), answered
 *   like an `http` refusal. Apollo would answer such a request; the gateway must not hand it over.
 */
export type RefusalStage = 'http' | 'pipeline' | 'gateway';

export type Envelope = { ok: true; request: GraphQLRequestParts } | { ok: false; stage: RefusalStage; error: GraphQLError };

/** An answer as Apollo would give it: status, headers (lower-case names) and the serialised body. */
export interface GraphQLAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** The first error's code after formatting, or null for an answer without errors. */
  firstErrorCode: unknown;
}

export type FormatError = (formatted: GraphQLFormattedError, error: unknown) => GraphQLFormattedError;

/**
 * JSON in `variables` or `extensions` may nest this deep at most. The schema's deepest input is
 * a list of ids (depth 2); a client sending more is not a client of this schema, and walking
 * values nested 200,000 deep recursively (a cache key's JSON.stringify) overflows the stack.
 */
export const MAX_JSON_DEPTH = 32;

/** Apollo's csrfPrevention: true. */
const CSRF_HEADERS = ['x-apollo-operation-name', 'apollo-require-preflight'];
const NON_PREFLIGHTED_CONTENT_TYPES = ['application/x-www-form-urlencoded', 'multipart/form-data', 'text/plain'];

/** The HTTP part Apollo's errors carry (extensions.http), taken out of the body into the response. */
interface HttpHead {
  status?: number;
  headers: Map<string, string>;
}

const head = (status?: number, headers: [string, string][] = []): HttpHead => ({ status, headers: new Map(headers) });

function withCode(message: string, code: string, options: GraphQLErrorOptions = {}): GraphQLError {
  return new GraphQLError(message, { ...options, extensions: { ...options.extensions, code } });
}

/** Extensions carrying an http head, as Apollo's errors do (graphql-js types extensions.http otherwise). */
const withHttp = (http: HttpHead): GraphQLErrorOptions['extensions'] => ({ http });

const httpError = (message: string, http: HttpHead): GraphQLError => new GraphQLError(message, { extensions: withHttp(http) });

/** Apollo's BadRequestError. */
export const badRequestError = (message: string, http: HttpHead = head(400)): GraphQLError =>
  withCode(message, ErrorCode.BAD_REQUEST, { extensions: withHttp(http) });

/** Apollo's SyntaxError, for what parse threw. */
export function syntaxError(thrown: unknown): GraphQLError {
  const error = toGraphQLError(thrown);
  return withCode(error.message, ErrorCode.GRAPHQL_PARSE_FAILED, {
    source: error.source,
    positions: error.positions,
    extensions: { http: head(400), ...error.extensions },
    originalError: error,
  });
}

/** Apollo's ValidationError, for one error validate gave. */
export const validationError = (error: GraphQLError): GraphQLError =>
  withCode(error.message, ErrorCode.GRAPHQL_VALIDATION_FAILED, {
    nodes: error.nodes,
    extensions: { http: head(400), ...error.extensions },
    originalError: error.originalError ?? error,
  });

/** Apollo's answer to a GET whose operation is not a query (a pipeline refusal). */
export const getNotQueryError = (operation: string): GraphQLError =>
  badRequestError(`GET requests only support query operations, not ${operation} operations`, head(405, [['allow', 'POST']]));

/** Apollo's ensureGraphQLError. */
function toGraphQLError(thrown: unknown): GraphQLError {
  const error = thrown instanceof Error ? thrown : new GraphQLError(`Unexpected error value: ${String(thrown)}`);
  return error instanceof GraphQLError ? error : new GraphQLError(error.message, { originalError: error });
}

/**
 * Checks a request's envelope as Apollo does, in Apollo's order: CSRF prevention, batching,
 * the method, the body's or the query string's shape, then the persisted-query extension and
 * the presence of a query. `headers` as node gives them; `search` the URL's query string ('' or
 * '?...'); `body` the parsed JSON body of a POST (a string for a body of another content type,
 * undefined for none). A request it passes is one Apollo would parse and validate. `bodyDepth`
 * bounds how deep the body nests, when known: variables and extensions, one level below it, are
 * then walked for their depth only when they could pass MAX_JSON_DEPTH (a batch of events never).
 */
export function checkEnvelope(method: string, headers: IncomingHttpHeaders, search: string, body: unknown, bodyDepth = Infinity): Envelope {
  const refuse = (stage: RefusalStage, error: GraphQLError): Envelope => ({ ok: false, stage, error });
  const contentType = headerValue(headers, 'content-type');
  if (blockedAsCsrf(headers, contentType)) {
    return refuse('http', badRequestError(
      'This operation has been blocked as a potential Cross-Site Request Forgery (CSRF). Please either specify a ' +
        `'content-type' header (with a type that is not one of ${NON_PREFLIGHTED_CONTENT_TYPES.join(', ')}) or provide ` +
        `a non-empty value for one of the following headers: ${CSRF_HEADERS.join(', ')}\n`,
    ));
  }
  let request: GraphQLRequestParts;
  if (method === 'POST') {
    if (Array.isArray(body)) return refuse('http', badRequestError('Operation batching disabled.'));
    const refusal = postBodyRefusal(body);
    if (refusal !== null) return refuse('http', badRequestError(refusal));
    const fields = body as Record<string, unknown>;
    request = {
      query: typeof fields.query === 'string' ? fields.query : undefined,
      operationName: typeof fields.operationName === 'string' ? fields.operationName : undefined,
      variables: isStringRecord(fields.variables) ? fields.variables : undefined,
      extensions: isStringRecord(fields.extensions) ? fields.extensions : undefined,
    };
  } else if (method === 'GET') {
    if (contentType !== undefined && mimeEssence(contentType) !== 'application/json') {
      return refuse('http', badRequestError('GET requests may not have a content-type header other than application/json.', head(415)));
    }
    const params = new URLSearchParams(search);
    try {
      request = {
        query: paramOnce(params, 'query'),
        operationName: paramOnce(params, 'operationName'),
        variables: jsonParamOnce(params, 'variables'),
        extensions: jsonParamOnce(params, 'extensions'),
      };
    } catch (error) {
      return refuse('http', error as GraphQLError);
    }
  } else {
    return refuse('http', badRequestError('Apollo Server supports only GET/POST requests.', head(405, [['allow', 'GET, POST']])));
  }

  const mayNestTooDeep = method !== 'POST' || bodyDepth - 1 > MAX_JSON_DEPTH;
  for (const name of ['variables', 'extensions'] as const) {
    if (mayNestTooDeep && request[name] !== undefined && nestedDeeperThan(request[name], MAX_JSON_DEPTH)) {
      return refuse('gateway', badRequestError(`\`${name}\` nests deeper than ${MAX_JSON_DEPTH} levels.`));
    }
  }

  const { query, extensions } = request;
  const persistedQuery = extensions?.persistedQuery as PersistedQueryExtension | undefined;
  if (persistedQuery) {
    const problem = persistedQueryProblem(query, persistedQuery);
    if (problem === 'version') return refuse('pipeline', httpError('Unsupported persisted query version', head(400)));
    if (problem === 'hash') return refuse('pipeline', httpError('provided sha does not match query', head(400)));
  } else if (!query) {
    return refuse('pipeline', badRequestError('GraphQL operations must contain a non-empty `query` or a `persistedQuery` extension.'));
  }
  return { ok: true, request };
}

/** A persisted query's extension as sent. */
export interface PersistedQueryExtension {
  version?: unknown;
  sha256Hash?: unknown;
}

/**
 * What Apollo refuses in a persisted query's extension, before it looks anything up or registers
 * a query: a version other than 1, or a query sent along whose SHA-256 is not the hash; null when
 * it takes it (and, with a query, registers it under the hash).
 */
export function persistedQueryProblem(query: string | undefined, persisted: PersistedQueryExtension): 'version' | 'hash' | null {
  if (persisted.version !== 1) return 'version';
  if (query !== undefined && persisted.sha256Hash !== createHash('sha256').update(query).digest('hex')) return 'hash';
  return null;
}

function headerValue(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}

function blockedAsCsrf(headers: IncomingHttpHeaders, contentType: string | undefined): boolean {
  if (contentType !== undefined) {
    const essence = mimeEssence(contentType);
    // a type the browser would preflight, or one that does not parse: not a simple request
    if (essence === null || !NON_PREFLIGHTED_CONTENT_TYPES.includes(essence)) return false;
  }
  return !CSRF_HEADERS.some((name) => {
    const value = headerValue(headers, name);
    return value !== undefined && value.length > 0;
  });
}

/** Apollo's message for a POST body it refuses, or null when the body's shape is right. */
function postBodyRefusal(body: unknown): string | null {
  if (!isStringRecord(body) || Object.keys(body).length === 0) {
    return 'POST body missing, invalid Content-Type, or JSON object has no keys.';
  }
  const { query } = body;
  if (query && typeof query !== 'string') {
    return (query as { kind?: unknown }).kind === Kind.DOCUMENT
      ? "GraphQL queries must be strings. It looks like you're sending the internal graphql-js representation of a " +
          'parsed query in your request instead of a request in the GraphQL query language. You can convert an AST ' +
          'to a string using the `print` function from `graphql`, or use a client like `apollo-client` which ' +
          'converts the internal representation to a string for you.'
      : 'GraphQL queries must be strings.';
  }
  if (typeof body.variables === 'string') {
    return '`variables` in a POST body should be provided as an object, not a recursively JSON-encoded string.';
  }
  if (typeof body.extensions === 'string') {
    return '`extensions` in a POST body should be provided as an object, not a recursively JSON-encoded string.';
  }
  if ('extensions' in body && body.extensions !== null && !isStringRecord(body.extensions)) {
    return '`extensions` in a POST body must be an object if provided.';
  }
  if ('variables' in body && body.variables !== null && !isStringRecord(body.variables)) {
    return '`variables` in a POST body must be an object if provided.';
  }
  if ('operationName' in body && body.operationName !== null && typeof body.operationName !== 'string') {
    return '`operationName` in a POST body must be a string if provided.';
  }
  return null;
}

function paramOnce(params: URLSearchParams, name: string): string | undefined {
  const values = params.getAll(name);
  if (values.length > 1) throw badRequestError(`The '${name}' search parameter may only be specified once.`);
  return values[0];
}

function jsonParamOnce(params: URLSearchParams, name: string): Record<string, unknown> | undefined {
  const value = paramOnce(params, name);
  if (value === undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    throw badRequestError(`The ${name} search parameter contains invalid JSON.`);
  }
  if (!isStringRecord(parsed)) throw badRequestError(`The ${name} search parameter should contain a JSON-encoded object.`);
  return parsed;
}

/** Apollo's isStringRecord: an object that is neither an array nor a Buffer. */
export const isStringRecord = (value: unknown): value is Record<string, unknown> =>
  !!value && typeof value === 'object' && !Buffer.isBuffer(value) && !Array.isArray(value);

/** Without recursion: the value may nest far deeper than the stack. */
function nestedDeeperThan(value: unknown, max: number): boolean {
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [current, depth] = stack.pop()!;
    if (typeof current !== 'object' || current === null) continue;
    if (depth > max) return true;
    for (const child of Array.isArray(current) ? current : Object.values(current)) {
      if (typeof child === 'object' && child !== null) stack.push([child, depth + 1]);
    }
  }
  return false;
}

const TOKEN = /^[-!#$%&'*+.^_`|~A-Za-z0-9]+$/;

/**
 * A Content-Type's essence (`type/subtype`, lower case) as whatwg-mimetype parses it for Apollo,
 * or null where it does not parse (parameters never make it fail).
 */
export function mimeEssence(value: string): string | null {
  const text = value.replace(/^[ \t\n\r]+|[ \t\n\r]+$/g, '');
  const slash = text.indexOf('/');
  if (slash === -1) return null;
  const type = text.slice(0, slash);
  const semicolon = text.indexOf(';', slash + 1);
  const subtype = text.slice(slash + 1, semicolon === -1 ? undefined : semicolon).replace(/[ \t\n\r]+$/, '');
  if (!TOKEN.test(type) || !TOKEN.test(subtype)) return null;
  return `${type}/${subtype}`.toLowerCase();
}

/**
 * Errors formatted as Apollo's normalizeAndFormatErrors does: a code for every error, the
 * extensions.http of each taken out into the response's status and headers, then formatError
 * (an error formatError throws on becomes a masked internal error).
 */
export function formatErrors(errors: readonly GraphQLError[], formatError: FormatError): { errors: GraphQLFormattedError[]; status: number | undefined; headers: Record<string, string> } {
  let status: number | undefined;
  const headers: Record<string, string> = {};
  const formatted = errors.map((error) => {
    try {
      const extensions: Record<string, unknown> = { ...error.extensions, code: error.extensions?.code ?? ErrorCode.INTERNAL_SERVER_ERROR };
      if (isHttpHead(extensions.http)) {
        if (extensions.http.status) status = extensions.http.status;
        for (const [name, value] of extensions.http.headers ?? []) headers[name.toLowerCase()] = value;
        delete extensions.http;
      }
      return formatError({ ...error.toJSON(), extensions }, error);
    } catch {
      return { message: 'Internal server error', extensions: { code: ErrorCode.INTERNAL_SERVER_ERROR } };
    }
  });
  return { errors: formatted, status, headers };
}

/** Apollo's isPartialHTTPGraphQLHead. */
function isHttpHead(value: unknown): value is { status?: number; headers?: Map<string, string> } {
  if (typeof value !== 'object' || value === null) return false;
  return (!('status' in value) || typeof value.status === 'number') && (!('headers' in value) || value.headers instanceof Map);
}

/** Apollo's cache-control plugin keeps a Cache-Control it cannot read, and makes any other `no-store` on an answer with errors. */
const READABLE_CACHE_CONTROL = /^max-age=(\d+), (public|private)$/;

/**
 * The answer Apollo gives a request refused with `errors` at `stage`, for a response of
 * `contentType` (the one Apollo chooses for the request's Accept; pass only one Apollo has
 * chosen for it, never a guess: for an Accept Apollo allows none of its types for, it answers
 * otherwise).
 */
export function refusalAnswer(stage: RefusalStage, errors: readonly GraphQLError[], contentType: string, formatError: FormatError): GraphQLAnswer {
  const formatted = formatErrors(errors, formatError);
  const headers = formatted.headers;
  if (stage === 'pipeline') {
    const existing = headers['cache-control'];
    if (existing === undefined || existing === 'no-store' || READABLE_CACHE_CONTROL.test(existing)) headers['cache-control'] = 'no-store';
    // a header from the errors stands (runHttpQuery sets the content type only where none is)
    headers['content-type'] ??= contentType;
  } else {
    headers['content-type'] = contentType;
  }
  return {
    status: formatted.status || 500,
    headers,
    body: `${JSON.stringify({ errors: formatted.errors })}\n`,
    firstErrorCode: formatted.errors[0]?.extensions?.code,
  };
}
