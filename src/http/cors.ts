import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * Cross-origin requests (CORS_ORIGINS): what lets a page on another origin call /graphql and the
 * served REST interfaces from a browser. Off by default, and then nothing here runs.
 *
 * The request headers a page may send: the credential, the body's type, Apollo's CSRF-prevention
 * headers and client awareness, and the request id the gateway takes from a caller.
 */
export const CORS_ALLOW_HEADERS =
  'authorization, content-type, apollo-require-preflight, x-apollo-operation-name, apollographql-client-name, apollographql-client-version, x-request-id';
/** The response headers a page may read beyond the safelisted ones: the request id, and what a 429 or a 401 tells. */
export const CORS_EXPOSE_HEADERS = 'x-request-id, retry-after, www-authenticate';
/** How long a browser may keep a preflight's answer: ten minutes (Chromium keeps one at most two hours). */
export const CORS_MAX_AGE_SECONDS = 600;

/**
 * The origins allowed, and the answers they get. A request reaches it only when CORS_ORIGINS is
 * set, on a route the route table (routeTable.ts) opens to CORS; without an Origin header it only gets `*` where that is set.
 *
 * An allowed origin's answers carry Access-Control-Allow-Origin (the origin itself, with
 * Vary: Origin; `*` when CORS_ORIGINS is `*`): set on the response before any route runs, so that
 * every answer has it, errors (401, 429, 413...) and the response cache's answers included. The
 * cache never stores it: it keeps the headers of the answer, not those set on the response.
 */
export class Cors {
  private readonly any: boolean;
  private readonly origins: ReadonlySet<string>;
  /** Whether Access-Control-Allow-Origin depends on the Origin sent (a list, not `*`): answers then vary by it. */
  readonly variesByOrigin: boolean;

  constructor(origins: readonly string[] | '*') {
    this.any = origins === '*';
    this.origins = new Set(origins === '*' ? [] : origins);
    this.variesByOrigin = !this.any;
  }

  allows(origin: string): boolean {
    return this.any || this.origins.has(origin);
  }

  /**
   * For a request with Origin `origin` to a route answering `methods`: answers a preflight (an
   * OPTIONS with Access-Control-Request-Method) and returns true; otherwise sets the headers an
   * allowed origin's answer carries and returns false (the route answers).
   *
   * A preflight is answered here, before authentication and the rate limits: it carries no
   * credentials, and it is not a request of the caller's own. From an origin not allowed it gets
   * 204 without any Access-Control-* header, as Apollo Router answers it (with its 200): the
   * browser then refuses the request itself, and nothing about the routes is told.
   */
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

  /**
   * Sets the headers an allowed origin's answer carries, for an answer that is no preflight. With
   * `*` every answer says so, Origin or not: a shared cache that kept one answered without Origin
   * would otherwise serve it to pages, whose browsers then refuse it.
   */
  allowFor(res: ServerResponse, origin: string | undefined): void {
    if (origin === undefined ? this.any : this.allows(origin)) this.allowOn(res, this.any ? '*' : origin!);
  }

  private allowOn(res: ServerResponse, origin: string): void {
    res.setHeader('access-control-allow-origin', origin);
    if (this.variesByOrigin) res.setHeader('vary', 'origin');
    res.setHeader('access-control-expose-headers', CORS_EXPOSE_HEADERS);
  }
}
