import { GraphQLError } from 'graphql';
import { ApolloServerErrorCode } from '@apollo/server/errors';

/** The closed set of `extensions.code` values a client can see; formatError masks anything else as INTERNAL_SERVER_ERROR. */
export const ErrorCode = {
  UNAUTHENTICATED: 'UNAUTHENTICATED',
  FORBIDDEN: 'FORBIDDEN',
  NOT_FOUND: 'NOT_FOUND',
  BAD_USER_INPUT: 'BAD_USER_INPUT',
  RATE_LIMITED: 'RATE_LIMITED',
  /** The API key made its dailyQuota of requests this UTC day. */
  QUOTA_EXCEEDED: 'QUOTA_EXCEEDED',
  QUERY_TOO_COMPLEX: 'QUERY_TOO_COMPLEX',
  UPSTREAM_UNAVAILABLE: 'UPSTREAM_UNAVAILABLE',
  UPSTREAM_REJECTED: 'UPSTREAM_REJECTED',
  /** Not among the trusted documents where only they run (Apollo Router's code). */
  PERSISTED_QUERY_NOT_IN_LIST: 'PERSISTED_QUERY_NOT_IN_LIST',
  INTERNAL_SERVER_ERROR: 'INTERNAL_SERVER_ERROR',
  GRAPHQL_PARSE_FAILED: ApolloServerErrorCode.GRAPHQL_PARSE_FAILED,
  GRAPHQL_VALIDATION_FAILED: ApolloServerErrorCode.GRAPHQL_VALIDATION_FAILED,
  PERSISTED_QUERY_NOT_FOUND: ApolloServerErrorCode.PERSISTED_QUERY_NOT_FOUND,
  PERSISTED_QUERY_NOT_SUPPORTED: ApolloServerErrorCode.PERSISTED_QUERY_NOT_SUPPORTED,
  OPERATION_RESOLUTION_FAILURE: ApolloServerErrorCode.OPERATION_RESOLUTION_FAILURE,
  BAD_REQUEST: ApolloServerErrorCode.BAD_REQUEST,
} as const;

export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

const codes = new Set<string>(Object.values(ErrorCode));

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && codes.has(value);
}

/** The HTTP status when this is the only error, and the REST status served. */
export const httpStatusOf: Record<ErrorCode, number> = {
  UNAUTHENTICATED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  BAD_USER_INPUT: 400,
  RATE_LIMITED: 429,
  QUOTA_EXCEEDED: 429,
  QUERY_TOO_COMPLEX: 400,
  UPSTREAM_UNAVAILABLE: 502,
  UPSTREAM_REJECTED: 502,
  PERSISTED_QUERY_NOT_IN_LIST: 400,
  INTERNAL_SERVER_ERROR: 500,
  GRAPHQL_PARSE_FAILED: 400,
  GRAPHQL_VALIDATION_FAILED: 400,
  PERSISTED_QUERY_NOT_FOUND: 200,
  PERSISTED_QUERY_NOT_SUPPORTED: 200,
  OPERATION_RESOLUTION_FAILURE: 400,
  BAD_REQUEST: 400,
};

export interface GatewayErrorOptions {
  /** The input field at fault, for BAD_USER_INPUT (`*` when it is the request as a whole). */
  field?: string;
  /** Seconds to wait, for RATE_LIMITED, QUOTA_EXCEEDED and UPSTREAM_UNAVAILABLE. */
  retryAfter?: number;
  service?: string;
  /** The API key scope a FORBIDDEN request lacks. */
  scope?: string;
  /** Kept for logs only, never shown to clients. */
  cause?: unknown;
}

export class GatewayError extends GraphQLError {
  readonly code: ErrorCode;
  readonly field: string | undefined;
  readonly retryAfter: number | undefined;
  readonly scope: string | undefined;

  constructor(code: ErrorCode, message: string, options: GatewayErrorOptions = {}) {
    const extensions: Record<string, unknown> = { code };
    if (options.field !== undefined) extensions.field = options.field;
    if (options.service !== undefined) extensions.service = options.service;
    if (options.retryAfter !== undefined) extensions.retryAfter = options.retryAfter;
    if (options.scope !== undefined) extensions.scope = options.scope;
    // Only a request-level failure decides the HTTP status; a field error in a partial
    // result keeps the 200 GraphQL over HTTP expects.
    if (code === ErrorCode.UNAUTHENTICATED) {
      // a browser page's script gets Bearer instead (src/http/send.ts challengeFor)
      extensions.http = { status: 401, headers: new Map([['www-authenticate', 'Basic realm="recs-gateway"']]) };
    } else if (isTooMany(code)) {
      const headers = new Map<string, string>();
      if (options.retryAfter !== undefined) headers.set('retry-after', String(Math.ceil(options.retryAfter)));
      extensions.http = { status: 429, headers };
    }
    // An answer to the client, not a fault: no stack is captured, since graphql-js reads the stack
    // of every resolver error. A cause keeps its own stack for the logs.
    const stackTraceLimit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    try {
      super(message, { extensions, originalError: options.cause instanceof Error ? options.cause : undefined });
    } finally {
      Error.stackTraceLimit = stackTraceLimit;
    }
    this.name = 'GatewayError';
    // a plain value, so reading it formats nothing
    if (!(options.cause instanceof Error)) Object.defineProperty(this, 'stack', { value: `GatewayError: ${message}`, writable: true, configurable: true });
    this.code = code;
    this.field = options.field;
    this.retryAfter = options.retryAfter;
    this.scope = options.scope;
  }
}

export const unauthenticated = (): GatewayError =>
  new GatewayError(ErrorCode.UNAUTHENTICATED, 'Authentication required: send a valid API key or credentials in the Authorization header');

export const forbidden = (message = 'Operation is not permitted'): GatewayError =>
  new GatewayError(ErrorCode.FORBIDDEN, message);

export const notFound = (message: string): GatewayError => new GatewayError(ErrorCode.NOT_FOUND, message);

export const badUserInput = (message: string, field = '*'): GatewayError =>
  new GatewayError(ErrorCode.BAD_USER_INPUT, message, { field });

export const rateLimited = (retryAfter: number): GatewayError =>
  new GatewayError(ErrorCode.RATE_LIMITED, `Too many requests: retry in ${Math.ceil(retryAfter)} s`, { retryAfter });

/** The key's daily quota is spent: retry at the next UTC midnight, `retryAfter` seconds away. */
export const quotaExceeded = (retryAfter: number): GatewayError =>
  new GatewayError(ErrorCode.QUOTA_EXCEEDED, `This API key's daily quota is used up: retry after midnight UTC, in ${Math.ceil(retryAfter)} s`, { retryAfter });

/** The refusals answered 429 with Retry-After. */
export function isTooMany(code: ErrorCode): boolean {
  return code === ErrorCode.RATE_LIMITED || code === ErrorCode.QUOTA_EXCEEDED;
}

export const upstreamUnavailable = (service: string, detail: string, cause?: unknown): GatewayError =>
  new GatewayError(ErrorCode.UPSTREAM_UNAVAILABLE, `The ${service} service is unavailable: ${detail}`, { service, cause });

/** The answer for a request that waited for a service past its own deadline. */
export const pastDeadline = (service: string, cause?: unknown): GatewayError =>
  upstreamUnavailable(service, 'no answer before the request deadline', cause);

/** The upstream refused the gateway's own key: an operator's problem, not the client's. */
export const upstreamRejected = (service: string, detail: string): GatewayError =>
  new GatewayError(ErrorCode.UPSTREAM_REJECTED, `The ${service} service refused the gateway's request: ${detail}`, { service });

export function isGatewayError(error: unknown): error is GatewayError {
  return error instanceof GatewayError;
}
