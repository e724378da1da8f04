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
import { requireAccess, routeAccess, type Access } from '../../model/scopes.js';
import type { PrincipalModel } from '../../ports/backend.js';

/**
 * The key a key request came with, for a REST-mode gateway in front: its id and scopes (none sent:
 * every scope), on its refusals too, so that a key without KEYS_MANAGE is still known for a key.
 */
function describeKey(principal: PrincipalModel): Record<string, string> {
  if (principal.authenticatedBy !== 'API_KEY' || principal.keyId === null) return {};
  const headers: Record<string, string> = { 'x-api-key-id': principal.keyId };
  if (principal.scopes !== undefined) headers['x-api-key-scopes'] = principal.scopes.join(',');
  return headers;
}

const withAccess = (principal: PrincipalModel, access: Access): PrincipalModel => {
  requireAccess(principal, access);
  return principal;
};
import { challengeFor } from '../send.js';

// a class for the lazy `signal` getter (see RequestDeadline)
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

/** What the served REST interfaces' route needs. */
export interface ServedRestDeps extends BodyRouteDeps {
  log: Logger;
}

/** The served REST interfaces' route: resolves false for a path none of their handlers knows. */
export function servedRestRoute({ config, backend, limiter, addresses, anonymousBodyLimit, ingestRightOf, largeBodies, log, ingestBodyLimit }: ServedRestDeps): (req: IncomingMessage, res: ServerResponse, url: URL, route: Route) => Promise<boolean> {
  // as /graphql: credentials are checked from the headers before a byte of a body is read
  async function handleRest(req: IncomingMessage, res: ServerResponse, url: URL, route: Route): Promise<boolean> {
    const { speaks, body: bodyKind } = intakeOf(route, req.method);
    const isKeys = speaks === 'rest-keys';
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
    // the route's scope, checked where every handler authenticates (src/model/scopes.ts decides)
    const access = routeAccess(route.name, req.method ?? 'GET') ?? 'KEYS_MANAGE';
    let described: Record<string, string> = {};
    const scoped: KeyService = {
      ...guarded,
      authenticate: (value, options) => guarded.authenticate(value, options).then((principal) => {
        if (isKeys) described = describeKey(principal);
        return withAccess(principal, access);
      }),
    };
    let keys: KeyService = scoped;
    let raw: Buffer = Buffer.alloc(0);
    let read = false;
    if ((isKeys && bodyKind === 'ordinary' && (req.method === 'POST' || req.method === 'PATCH')) || (ingest === 'events' && req.method === 'POST') || ingest === 'items') {
      let limit = 0;
      if (!anonymous && authorization !== undefined) {
        const deadline = new RequestDeadline(res, config.requestDeadlineMs);
        const answer = scoped.authenticate(authorization, deadline);
        const outcome = await answer.then(
          (principal) => ({ principal }),
          (error: unknown) => ({ error }),
        );
        // the handler authenticates again: it gets this very answer, counted once
        keys = {
          ...guarded,
          authenticate: (value, options) =>
            value !== authorization ? scoped.authenticate(value, options) : answer,
        };
        limit = 'error' in outcome ? 0 : config.bodyLimitBytes;
        if (isKeys && !('error' in outcome)) {
          if (!isApiKeyJson(req.headers['content-type'])) return writeRest(req, res, apiKeyNotJson(), false);
          const encoded = encodingRefusal(req);
          if (encoded !== null) return writeRest(req, res, apiKeyEncoded(encoded.message, encoded.headers), false);
        }
        if (ingest !== null && !('error' in outcome)) {
          // who may not send events is told so before a byte of the batch is read
          let right = ingestRightOf(outcome.principal, mayBeLonger(req, limit) ? { signal: deadline.signal, clientAddress: address } : null);
          if (typeof right !== 'string') {
            try {
              right = await right;
            } catch (error) {
              if (!(error instanceof GatewayError)) throw error;
              return writeRest(req, res, refusal(error), false);
            }
          }
          // a refused batch is discarded as it comes, not cut off: a forwarding client would meet EPIPE
          if (right === 'refused') {
            const declared = Number(req.headers['content-length']);
            return writeRest(req, res, refusal(ingestForbidden()), Number.isSafeInteger(declared) && declared <= ingestBodyLimit);
          }
          if (right === 'allowed') limit = ingestBodyLimit;
          // Security: a form or text/plain POST is what a browser sends cross-site, with remembered Basic credentials
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
      if (!(error instanceof HttpError)) throw error;
      return writeRest(req, res, refusal(badUserInput(error.message, ingest ?? '*')), true);
    }
    const restRequest = new ServedRestRequest(req, url, body, new RequestDeadline(res, config.requestDeadlineMs), log, address);
    const answer = isKeys ? serveApiKeys(restRequest, keys) : (serveIngest(restRequest, keys, backend.ingest) ?? serveRecommendations(restRequest, keys, backend.recs));
    if (answer === null) return false;
    const response = await answer;
    return writeRest(req, res, { ...response, headers: { ...response.headers, ...described } }, read);
  }

  /** A REST answer; a large body left unread closes the connection after lingering (linger.ts). */
  function writeRest(req: IncomingMessage, res: ServerResponse, response: RestResponse, bodyRead: boolean): true {
    const closing = !bodyRead && (Number(req.headers['content-length'] ?? 0) > anonymousBodyLimit || req.headers['transfer-encoding'] !== undefined);
    if (closing || response.headers.connection === 'close') lingerAfterAnswer(req, res);
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
