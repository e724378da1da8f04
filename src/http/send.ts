import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import { ErrorCode, isTooMany, type GatewayError } from '../errors.js';

/** A JSON answer, sent with its length. */
export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

/** A request-level error in the GraphQL response shape, for failures before Apollo sees the request. */
export const graphqlError = (message: string, code: ErrorCode) => ({ errors: [{ message, extensions: { code } }] });

/** A GatewayError in the GraphQL response shape with the extensions a resolver's error shows (`retryAfter` too). */
export function gatewayErrorBody(error: GatewayError, message = error.message): { errors: [{ message: string; extensions: Record<string, unknown> }] } {
  const extensions: Record<string, unknown> = { code: error.code };
  const { field, service } = error.extensions as { field?: unknown; service?: unknown };
  if (field !== undefined) extensions.field = field;
  if (service !== undefined) extensions.service = service;
  if (error.retryAfter !== undefined) extensions.retryAfter = Math.ceil(error.retryAfter);
  return { errors: [{ message, extensions }] };
}

/** 405 for a method a route does not take, with the methods it does. */
export function sendMethodNotAllowed(res: ServerResponse, method: string, allow: string): void {
  sendJson(res, 405, graphqlError(`Method ${method} not allowed`, ErrorCode.BAD_REQUEST), { allow });
}

/** The challenge of a 401 for anything but a page's script (see challengeFor). */
export const BASIC_CHALLENGE = 'Basic realm="recs-gateway"';
/** The challenge of a 401 to a page's script. */
export const BEARER_CHALLENGE = 'Bearer realm="recs-gateway"';

/** A 401's WWW-Authenticate. Bearer to a page's script (`Sec-Fetch-Dest: empty`): a Basic challenge there makes the
 * browser prompt for credentials and then send them unasked with every request to the gateway's origin. */
export function challengeFor(headers: IncomingHttpHeaders): string {
  return headers['sec-fetch-dest']?.toLowerCase() === 'empty' ? BEARER_CHALLENGE : BASIC_CHALLENGE;
}

/** The headers a request-level error carries: the challenge with a 401, Retry-After with a 429. */
export function errorHeaders(error: GatewayError, request: IncomingHttpHeaders): Record<string, string> {
  if (error.code === ErrorCode.UNAUTHENTICATED) return { 'www-authenticate': challengeFor(request) };
  if (isTooMany(error.code)) return { 'retry-after': String(Math.ceil(error.retryAfter ?? 1)) };
  return {};
}
