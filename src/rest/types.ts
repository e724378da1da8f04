import type { Logger } from '../logger.js';
/** A request as the HTTP layer hands it to the REST handlers; no framework types leak in. */
export interface RestRequest {
  method: string;
  /** The path without the query string, still percent-encoded. */
  path: string;
  query: URLSearchParams;
  /** Node's lower-cased header names. */
  headers: Record<string, string | string[] | undefined>;
  /** The parsed JSON body; undefined when there is none or it is not JSON. */
  body: unknown;
  /** Aborted at the request's deadline or when the client goes away. */
  signal?: AbortSignal;
  /** Where an unexpected failure is logged (whole, never shown); default: nowhere. */
  log?: Logger;
  /** The caller's address as the gateway trusts it, forwarded where the backend forwards credentials. */
  clientAddress?: string;
}

/** What the HTTP layer writes back. */
export interface RestResponse {
  status: number;
  headers: Record<string, string>;
  /** JSON text. */
  body: string;
}

export function json(status: number, value: unknown, headers: Record<string, string> = {}): RestResponse {
  return {
    status,
    headers: { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', ...headers },
    body: JSON.stringify(value),
  };
}

export function header(req: RestRequest, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}
