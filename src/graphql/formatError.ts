import { GraphQLError, type GraphQLFormattedError } from 'graphql';
import { ErrorCode, isErrorCode } from '../errors.js';
import type { Logger } from '../logger.js';
import { tokenLimitOf } from './limits.js';

const TOO_MANY_VARIABLE_ERRORS = /^Too many errors processing variables/;

/**
 * Apollo's refusal of __schema and __type where introspection is off ends "pass introspection:
 * true to ApolloServer in production", advice for Apollo's own users: a gateway's turn it on with
 * a setting.
 */
export const INTROSPECTION_OFF_MESSAGE =
  'GraphQL introspection (__schema, __type) is off on this gateway: set INTROSPECTION=true to turn it on (NODE_ENV=production turns it off by default)';
const VARIABLE_VALUE_REFUSED = /^Variable "\$[_A-Za-z][_0-9A-Za-z]*" got invalid value /;

/**
 * A variable's value refused by coercion, without the value: graphql-js quotes it whole (an
 * event's session, user and order ids, a megabyte of text) between the variable and the path.
 * The path and the reason say what is wrong; a scalar's reason loses its quoted value too.
 * Null when the message is not one of those, or its reason cannot be told apart from the value.
 */
export function variableErrorWithoutValue(message: string, error: unknown): string | null {
  const head = VARIABLE_VALUE_REFUSED.exec(message);
  if (head === null) return null;
  // graphql-js builds it as `<head><value>[ at "<path>"]; <reason>`, the reason being the message
  // of an error down the originalError chain
  for (let cause = error as { message?: unknown; originalError?: unknown } | undefined; cause; cause = cause.originalError as typeof cause) {
    const reason = cause.message;
    if (typeof reason !== 'string' || reason === message || !message.endsWith(`; ${reason}`)) continue;
    const prefix = message.slice(0, message.length - reason.length - 2);
    const at = / at "[\w.[\]$]*"$/.exec(prefix)?.[0] ?? '';
    return `${head[0].trimEnd()}${at}; ${reason.replace(/( cannot represent [^:]*): [\s\S]*$/, '$1')}`;
  }
  return null;
}

/**
 * Apollo's formatError: codes from the closed
 * set pass without a stack trace, a limit gets QUERY_TOO_COMPLEX, anything else is logged whole
 * and shown as INTERNAL_SERVER_ERROR with nothing of it.
 */
export function gatewayFormatError(log: Logger): (formatted: GraphQLFormattedError, error: unknown) => GraphQLFormattedError {
  return (formatted, error) => {
    const code = formatted.extensions?.code;
    if (formatted.extensions?.limit !== undefined) {
      // Apollo files every validation failure under one code; a limit gets its own
      return { ...formatted, extensions: { ...formatted.extensions, code: ErrorCode.QUERY_TOO_COMPLEX } };
    }
    const tokens = code === ErrorCode.GRAPHQL_PARSE_FAILED ? tokenLimitOf(formatted.message) : null;
    if (tokens !== null) {
      // graphql-js words it as a syntax error ("Syntax Error: Document contains more that 2000
      // tokens"): said as the other limits are, a probe found the two read as a contradiction
      return {
        ...formatted,
        message: `Query too complex: the document has more than ${tokens} tokens, the limit (MAX_TOKENS)`,
        extensions: { ...formatted.extensions, code: ErrorCode.QUERY_TOO_COMPLEX, limit: 'tokens', max: tokens },
      };
    }
    // Apollo refuses a few requests with an error of no code and a 4xx status of its own (a
    // persisted query whose hash does not match its text, an unknown persisted-query version):
    // the client's mistake, not a fault of ours
    const http = error instanceof GraphQLError && error.extensions?.code === undefined && !error.originalError ? (error.extensions?.http as { status?: unknown } | undefined) : undefined;
    if (code === ErrorCode.INTERNAL_SERVER_ERROR && typeof http?.status === 'number' && http.status >= 400 && http.status < 500) {
      return { ...formatted, extensions: { ...formatted.extensions, code: ErrorCode.BAD_REQUEST } };
    }
    if (code === ErrorCode.INTERNAL_SERVER_ERROR && error instanceof GraphQLError && !error.originalError && TOO_MANY_VARIABLE_ERRORS.test(error.message)) {
      // graphql-js stops coercing variables at 50 bad values (a batch of events with a bad field):
      // the client's mistake too, though Apollo gives it no code
      return { message: error.message, extensions: { code: ErrorCode.BAD_USER_INPUT } };
    }
    if (isErrorCode(code) && code !== ErrorCode.INTERNAL_SERVER_ERROR) {
      const { stacktrace: _stacktrace, ...extensions } = formatted.extensions ?? {};
      const message = code === ErrorCode.BAD_USER_INPUT
        ? (variableErrorWithoutValue(formatted.message, error) ?? formatted.message)
        : extensions.validationErrorCode === 'INTROSPECTION_DISABLED' ? INTROSPECTION_OFF_MESSAGE : formatted.message;
      return { ...formatted, message, extensions };
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
