import type { IncomingMessage, ServerResponse } from 'node:http';

/** The request headers a page may send cross-origin (CORS_ORIGINS). */
export const CORS_ALLOW_HEADERS =
  'authorization, content-type, apollo-require-preflight, x-apollo-operation-name, apollographql-client-name, apollographql-client-version, x-request-id, x-recs-shopper';
/** The response headers a page may read beyond the safelisted ones. */
export const CORS_EXPOSE_HEADERS = 'x-request-id, retry-after, www-authenticate';
/** How long a browser may keep a preflight's answer, in seconds. */
export const CORS_MAX_AGE_SECONDS = 600;

/** The origins allowed, and the answers they get. Headers are set on the response before any route runs, so every
 * answer has them; the response cache never stores them. */
export class Cors {
  private readonly any: boolean;
  private readonly origins: ReadonlySet<string>;
  readonly variesByOrigin: boolean;

  constructor(origins: readonly string[] | '*') {
    this.any = origins === '*';
    this.origins = new Set(origins === '*' ? [] : origins);
    this.variesByOrigin = !this.any;
  }

  allows(origin: string): boolean {
    return this.any || this.origins.has(origin);
  }

  /** Answers a preflight and returns true, else sets an allowed origin's headers and returns false. A preflight from an
   * origin not allowed gets 204 without Access-Control-* headers: nothing about the routes is told. */
  apply(req: IncomingMessage, res: ServerResponse, origin: string | undefined, methods: string, requestId?: string): boolean {
    if (origin === undefined) {
      this.allowFor(res, undefined);
      return false;
    }
    const allowed = this.allows(origin);
    if (req.method === 'OPTIONS' && req.headers['access-control-request-method'] !== undefined) {
      const headers: Record<string, string> = requestId === undefined ? {} : { 'x-request-id': requestId };
      if (this.variesByOrigin) headers.vary = 'origin';
      if (allowed) {
        headers['access-control-allow-origin'] = this.any ? '*' : origin;
        headers['access-control-allow-methods'] = methods;
        headers['access-control-allow-headers'] = CORS_ALLOW_HEADERS;
        headers['access-control-max-age'] = String(CORS_MAX_AGE_SECONDS);
      }
      res.writeHead(204, headers);
      res.end();
      return true;
    }
    if (allowed) this.allowOn(res, this.any ? '*' : origin);
    return false;
  }

  // with `*`, every answer says so: a shared cache would otherwise serve an answer without it to pages
  allowFor(res: ServerResponse, origin: string | undefined): void {
    if (origin === undefined ? this.any : this.allows(origin)) this.allowOn(res, this.any ? '*' : origin!);
  }

  private allowOn(res: ServerResponse, origin: string): void {
    res.setHeader('access-control-allow-origin', origin);
    if (this.variesByOrigin) res.setHeader('vary', 'origin');
    res.setHeader('access-control-expose-headers', CORS_EXPOSE_HEADERS);
  }
}
