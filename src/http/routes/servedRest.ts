import type { IncomingMessage, ServerResponse } from 'node:http';
import { GatewayError, badUserInput, rateLimited } from '../../errors.js';
import { isJsonContentType } from '../../graphql/pipeline/contentType.js';
import { ingestForbidden } from '../../model/ingest.js';
import type { Logger } from '../../logger.js';
import type { KeyService } from '../../ports/backend.js';
import {
  apiKeyBodyTooLarge, apiKeyEncoded, apiKeyErrorResponse, apiKeyNotJson, ingestBodyTooLarge, ingestErrorResponse, ingestNotJson, ingestUnsupportedEncoding, isApiKeyJson, queryApiKey, recsErrorResponse, serveApiKeys, serveIngest, serveRecommendations,
  type RestRequest, type RestResponse,
} from '../../rest/index.js';
import { openApiResponse } from '../../rest/openapi.js';
import { encodingRefusal, HttpError, mayBeLonger, parseJson, readBody, type BodyRouteDeps } from '../body.js';
import { lingerAfterAnswer, lingerBudgetFor } from '../linger.js';
import { RequestDeadline } from '../requestSignal.js';
import { intakeOf, type Route } from '../routeTable.js';
import { challengeFor } from '../send.js';

/** A request to the REST interfaces; a class for the lazy `signal` getter (see RequestDeadline). */
class ServedRestRequest implements RestRequest {
  readonly method: string;
  readonly path: string;
  readonly query: URLSearchParams;
  readonly headers: IncomingMessage['headers'];

  constructor(
    req: IncomingMessage,
    url: URL,
    readonly body: unknown,
    private readonly deadline: RequestDeadline,
    readonly log: Logger,
    readonly clientAddress?: string,
  ) {
    this.method = (req.method ?? 'GET').toUpperCase();
    this.path = url.pathname;
    this.query = url.searchParams;
    this.headers = req.headers;
  }

  get signal(): AbortSignal {
    return this.deadline.signal;
  }
}

/** What the served REST interfaces' route needs (a refused batch up to ingestBodyLimit is discarded as it comes after the 403, not cut off). */
export interface ServedRestDeps extends BodyRouteDeps {
  log: Logger;
}

/**
 * The served REST interfaces (/api/v1/apikey…, /v1/…): a function that answers a request on one
 * of their routes and resolves true, or resolves false for a path none of their handlers knows.
 */
export function servedRestRoute({ config, backend, limiter, addresses, anonymousBodyLimit, ingestRightOf, largeBodies, log, ingestBodyLimit }: ServedRestDeps): (req: IncomingMessage, res: ServerResponse, url: URL, route: Route) => Promise<boolean> {
  /**
   * The REST interfaces, in the order /graphql keeps: a request without credentials spends a token
   * of its address's bucket; credentials are checked from the headers before a byte of a body is
   * read; only the creation of a key (up to BODY_LIMIT_BYTES) and the live recommender's twins (up to
   * INGEST_BODY_LIMIT_BYTES for who may send events) take a body, with valid credentials; every
   * other body is left unread.
   */
  async function handleRest(req: IncomingMessage, res: ServerResponse, url: URL, route: Route): Promise<boolean> {
    const { speaks } = intakeOf(route, req.method);
    const isKeys = speaks === 'rest-keys';
    // the live recommender's twins (POST /v1/events, PUT /v1/items): credentials in the header
    const ingest = speaks !== 'rest-ingest' ? null : route.name === 'events' ? 'events' : 'items';
    const address = addresses.of(req);
    const guarded = limiter.guard(backend.keys, address);
    const authorization = req.headers.authorization;
    const refusal = (error: unknown): RestResponse =>
      isKeys ? apiKeyErrorResponse(error, authorization) : ingest !== null ? ingestErrorResponse(error, authorization) : recsErrorResponse(error);
    // a blank Authorization, or an apiKey no key could match, is no credential: the address pays
    const anonymous = isKeys || ingest !== null ? authorization === undefined || authorization.trim() === '' : queryApiKey(url.searchParams) === null;
    if (anonymous) {
      try {
        await limiter.admit(null, address);
      } catch (error) {
        if (!(error instanceof GatewayError)) throw error;
        return writeRest(req, res, refusal(error), false);
      }
    }
    let keys: KeyService = guarded;
    let raw: Buffer = Buffer.alloc(0);
    let read = false;
    if ((req.method === 'POST' && isKeys && url.pathname.replace(/\/+$/, '') === '/api/v1/apikey') || (ingest === 'events' && req.method === 'POST') || ingest === 'items') {
      // without credentials the handler answers 401 whatever the body says: it is not read
      let limit = 0;
      if (!anonymous && authorization !== undefined) {
        // with the request's signal: a sign-in still queued when its client has gone is skipped
        const deadline = new RequestDeadline(res, config.requestDeadlineMs);
        const answer = guarded.authenticate(authorization, deadline);
        const outcome = await answer.then(
          (principal) => ({ principal }),
          (error: unknown) => ({ error }),
        );
        // the handler authenticates again: it gets this very answer, counted once
        keys = {
          ...guarded,
          authenticate: (value, options) =>
            value !== authorization ? guarded.authenticate(value, options) : answer,
        };
        limit = 'error' in outcome ? 0 : config.bodyLimitBytes;
        // a key's creation: JSON only, unread otherwise (a cross-site form or text/plain POST; see apiKeyNotJson)
        if (isKeys && !('error' in outcome)) {
          if (!isApiKeyJson(req.headers['content-type'])) return writeRest(req, res, apiKeyNotJson(), false);
          const encoded = encodingRefusal(req);
          if (encoded !== null) return writeRest(req, res, apiKeyEncoded(encoded.message, encoded.headers), false);
        }
        if (ingest !== null && !('error' in outcome)) {
          // who may not send events is told so before a byte of the batch is read or checked (in
          // REST mode once the upstream said so, which it is asked before a large body is read)
          let right = ingestRightOf(outcome.principal, mayBeLonger(req, limit) ? { signal: deadline.signal, clientAddress: address } : null);
          if (typeof right !== 'string') {
            try {
              right = await right;
            } catch (error) {
              if (!(error instanceof GatewayError)) throw error;
              return writeRest(req, res, refusal(error), false);
            }
          }
          // A batch up to INGEST_BODY_LIMIT_BYTES is then discarded as it comes, not cut off: a
          // REST-mode gateway forwarding a non-administrator's batch met the closed connection while
          // still sending (EPIPE), and answered 503 UPSTREAM_UNAVAILABLE, a failure against its breaker
          if (right === 'refused') {
            const declared = Number(req.headers['content-length']);
            return writeRest(req, res, refusal(ingestForbidden()), Number.isSafeInteger(declared) && declared <= ingestBodyLimit);
          }
          if (right === 'allowed') limit = ingestBodyLimit;
          // JSON only: a form or text/plain POST is what a browser sends cross-site, with the Basic
          // credentials it remembers, and no preflight (Apollo's CSRF prevention, for the twins)
          if (!isJsonContentType(req.headers['content-type'])) return writeRest(req, res, ingestNotJson(), false);
          const encoded = encodingRefusal(req);
          if (encoded !== null) return writeRest(req, res, ingestUnsupportedEncoding(encoded.message, encoded.headers), false);
        }
      }
      if (limit > 0) {
        if (!largeBodies.admit(req, res, limit)) return writeRest(req, res, refusal(rateLimited(1)), false);
        try {
          raw = await readBody(req, limit);
        } catch (error) {
          if (!(error instanceof HttpError) || error.status !== 413) throw error;
          // in the route's own error body (a key's creation got GraphQL's shape), lingering for twice the limit
          lingerAfterAnswer(req, res, lingerBudgetFor(limit));
          return writeRest(req, res, ingest !== null ? ingestBodyTooLarge(limit) : apiKeyBodyTooLarge(error.message), false);
        }
        read = true;
      }
    }
    let body: unknown;
    try {
      body = raw.length > 0 ? parseJson(raw.toString('utf8')) : undefined;
    } catch (error) {
      // a body read that is not JSON, or nests too deep, is told which, in the interface's 400: an
      // administrator's batch, or a key's creation (which said "must be a JSON object" of both)
      if (!(error instanceof HttpError)) throw error;
      return writeRest(req, res, refusal(badUserInput(error.message, ingest ?? '*')), true);
    }
    const restRequest = new ServedRestRequest(req, url, body, new RequestDeadline(res, config.requestDeadlineMs), log, address);
    const answer = isKeys ? serveApiKeys(restRequest, keys) : (serveIngest(restRequest, keys, backend.ingest) ?? serveRecommendations(restRequest, keys, backend.recs));
    if (answer === null) return false;
    return writeRest(req, res, await answer, read);
  }

  /**
   * A REST answer; a body left unread that is large is not read to its end either: the connection
   * goes, once what is still coming is drained for a bounded while (linger.ts), as it does after
   * an answer that closes it itself (413, 415). `bodyRead` true: read, or to be discarded as it
   * comes (node does once the answer is sent).
   */
  function writeRest(req: IncomingMessage, res: ServerResponse, response: RestResponse, bodyRead: boolean): true {
    const closing = !bodyRead && (Number(req.headers['content-length'] ?? 0) > anonymousBodyLimit || req.headers['transfer-encoding'] !== undefined);
    if (closing || response.headers.connection === 'close') lingerAfterAnswer(req, res);
    // the interfaces' Basic challenge, as upstream-facts.md has it, but to a page's script (challengeFor)
    const challenge = response.status === 401 && response.headers['www-authenticate'] !== undefined ? { 'www-authenticate': challengeFor(req.headers) } : {};
    res.writeHead(response.status, {
      ...response.headers,
      ...challenge,
      'content-length': Buffer.byteLength(response.body),
      ...(closing ? { connection: 'close' } : {}),
    });
    res.end(response.body);
    return true;
  }
  return handleRest;
}

/** GET /openapi.json: the served interfaces' description. */
export function serveOpenApi(req: IncomingMessage, res: ServerResponse): void {
  const answer = openApiResponse(req.headers['if-none-match']);
  res.writeHead(answer.status, answer.headers);
  res.end(answer.body);
}
