import type { ServerResponse } from 'node:http';
import { ErrorCode, type GatewayError } from '../errors.js';

/** A JSON answer, sent with its length. */
export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

/** A request-level error in the GraphQL response shape, for failures before Apollo sees the request. */
export const graphqlError = (message: string, code: ErrorCode) => ({ errors: [{ message, extensions: { code } }] });

/** 405 for a method a route does not take, with the methods it does (BAD_REQUEST, as Apollo files a wrong method). */
export function sendMethodNotAllowed(res: ServerResponse, method: string, allow: string): void {
  sendJson(res, 405, graphqlError(`Method ${method} not allowed`, ErrorCode.BAD_REQUEST), { allow });
}

/** The headers a request-level error carries: the challenge with a 401, Retry-After with a 429. */
export function errorHeaders(error: GatewayError): Record<string, string> {
  if (error.code === ErrorCode.UNAUTHENTICATED) return { 'www-authenticate': 'Basic realm="recs-gateway"' };
  if (error.code === ErrorCode.RATE_LIMITED) return { 'retry-after': String(Math.ceil(error.retryAfter ?? 1)) };
  return {};
}
