import { GraphQLError, type GraphQLFormattedError } from 'graphql';
import { ErrorCode, isErrorCode } from '../../errors.js';
import type { Logger } from '../../logger.js';
import { tokenLimitOf } from './limits.js';

const TOO_MANY_VARIABLE_ERRORS = /^Too many errors processing variables/;

/** Apollo's refusal ends with advice for Apollo's users; here introspection is a setting. */
export const INTROSPECTION_OFF_MESSAGE =
  'GraphQL introspection (__schema, __type) is off on this gateway: set INTROSPECTION=true to turn it on (NODE_ENV=production turns it off by default)';
const VARIABLE_VALUE_REFUSED = /^Variable "\$[_A-Za-z][_0-9A-Za-z]*" got invalid value /;

/** A coercion error without the value graphql-js quotes whole (opaque ids, megabytes of text); the
 * path and reason say what is wrong. Null when the reason cannot be told apart from the value. */
export function variableErrorWithoutValue(message: string, error: unknown): string | null {
  const head = VARIABLE_VALUE_REFUSED.exec(message);
  if (head === null) return null;
  // graphql-js builds `<head><value>[ at "<path>"]; <reason>`, the reason from the originalError chain
  for (let cause = error as { message?: unknown; originalError?: unknown } | undefined; cause; cause = cause.originalError as typeof cause) {
    const reason = cause.message;
    if (typeof reason !== 'string' || reason === message || !message.endsWith(`; ${reason}`)) continue;
    const prefix = message.slice(0, message.length - reason.length - 2);
    const at = / at "[\w.[\]$]*"$/.exec(prefix)?.[0] ?? '';
    return `${head[0].trimEnd()}${at}; ${reason.replace(/( cannot represent [^:]*): [\s\S]*$/, '$1')}`;
  }
  return null;
}

/** Codes from the closed set pass without a stack, a limit gets QUERY_TOO_COMPLEX, anything else
 * is logged whole and shown as INTERNAL_SERVER_ERROR with nothing of it. */
export function gatewayFormatError(log: Logger): (formatted: GraphQLFormattedError, error: unknown) => GraphQLFormattedError {
  return (formatted, error) => {
    const code = formatted.extensions?.code;
    if (formatted.extensions?.limit !== undefined) {
      // Apollo files every validation failure under one code; a limit gets its own
      return { ...formatted, extensions: { ...formatted.extensions, code: ErrorCode.QUERY_TOO_COMPLEX } };
    }
    const tokens = code === ErrorCode.GRAPHQL_PARSE_FAILED ? tokenLimitOf(formatted.message) : null;
    if (tokens !== null) {
      // graphql-js words the token limit as a syntax error; said as the other limits are
      return {
        ...formatted,
        message: `Query too complex: the document has more than ${tokens} tokens, the limit (MAX_TOKENS)`,
        extensions: { ...formatted.extensions, code: ErrorCode.QUERY_TOO_COMPLEX, limit: 'tokens', max: tokens },
      };
    }
    // Apollo refuses a few client mistakes with no code and a 4xx status of its own
    const http = error instanceof GraphQLError && error.extensions?.code === undefined && !error.originalError ? (error.extensions?.http as { status?: unknown } | undefined) : undefined;
    if (code === ErrorCode.INTERNAL_SERVER_ERROR && typeof http?.status === 'number' && http.status >= 400 && http.status < 500) {
      return { ...formatted, extensions: { ...formatted.extensions, code: ErrorCode.BAD_REQUEST } };
    }
    if (code === ErrorCode.INTERNAL_SERVER_ERROR && error instanceof GraphQLError && !error.originalError && TOO_MANY_VARIABLE_ERRORS.test(error.message)) {
      // graphql-js stops coercing variables at 50 bad values: a client mistake, with no code from Apollo
      return { message: error.message, extensions: { code: ErrorCode.BAD_USER_INPUT } };
    }
    if (isErrorCode(code) && code !== ErrorCode.INTERNAL_SERVER_ERROR) {
      const { stacktrace: _stacktrace, ...extensions } = formatted.extensions ?? {};
      const message = code === ErrorCode.BAD_USER_INPUT
        ? (variableErrorWithoutValue(formatted.message, error) ?? formatted.message)
        : extensions.validationErrorCode === 'INTROSPECTION_DISABLED' ? INTROSPECTION_OFF_MESSAGE : formatted.message;
      return { ...formatted, message, extensions };
    }
    log.error({ err: error }, 'unexpected error in a GraphQL request');
    return {
      message: 'Internal server error',
      ...(formatted.path ? { path: formatted.path } : {}),
      ...(formatted.locations ? { locations: formatted.locations } : {}),
      extensions: { code: ErrorCode.INTERNAL_SERVER_ERROR },
    };
  };
}
