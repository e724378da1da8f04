import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '../../logger.js';
import type { RequestRecord } from '../../observability/requestScope.js';
import type { KeyService } from '../../ports/backend.js';
import { queryApiKey, serveApiKeys, serveIngest, serveRecommendations, serveStats, type ImpressionsTaker, type RestRequest, type StatsReader } from '../../rest/index.js';
import { openApiResponse } from '../../rest/openapi.js';
import { ANSWERED, Prelude, type PreludeDeps } from '../prelude.js';
import { restRefusals } from '../refusals.js';
import { RequestDeadline } from '../requestSignal.js';
import { intakeOf, type Route } from '../routeTable.js';
import { requireAccess, routeAccess } from '../../model/scopes.js';
import type { PrincipalModel } from '../../ports/backend.js';

/** The key a key request came with, for a REST-mode gateway in front: its id and scopes (none sent:
 * every scope), on its refusals too, so that a key without KEYS_MANAGE is still known for a key;
 * and whether it has limits of its own, which need every request of the key checked here. */
function describeKey(principal: PrincipalModel): Record<string, string> {
  if (principal.authenticatedBy !== 'API_KEY' || principal.keyId === null) return {};
  const headers: Record<string, string> = { 'x-api-key-id': principal.keyId };
  if (principal.scopes !== undefined) headers['x-api-key-scopes'] = principal.scopes.join(',');
  if (principal.limits) headers['x-api-key-limited'] = 'true';
  return headers;
}

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
export interface ServedRestDeps extends PreludeDeps {
  log: Logger;
  /** GET /v1/stats' answers. */
  readStats: StatsReader;
  /** POST /v1/stats/impressions' rows. */
  takeImpressions: ImpressionsTaker;
}

/** The served REST interfaces' route: resolves false for a path none of their handlers knows. */
export function servedRestRoute(deps: ServedRestDeps): (req: IncomingMessage, res: ServerResponse, url: URL, route: Route, record: RequestRecord) => Promise<boolean> {
  const { config, backend, limiter, addresses, log } = deps;
  // strangers' bodies are not read: the handlers refuse them for want of credentials
  const refusals = restRefusals(log);
  const preludes = {
    keys: new Prelude(deps, refusals.keys, false),
    events: new Prelude(deps, refusals.events, false),
    items: new Prelude(deps, refusals.items, false),
    recs: new Prelude(deps, refusals.recs, false),
  };

  // the handlers authenticate; the prelude does first where a body follows, so that none is read for whoever may not send it
  async function handleRest(req: IncomingMessage, res: ServerResponse, url: URL, route: Route, record: RequestRecord): Promise<boolean> {
    const { speaks, body: kind } = intakeOf(route, req.method);
    const prelude = speaks === 'rest-keys' ? preludes.keys : speaks === 'rest-recs' ? preludes.recs : route.name === 'events' ? preludes.events : preludes.items;
    const address = addresses.of(req);
    const guarded = limiter.guard(backend.keys, address);
    const authorization = req.headers.authorization;
    // the route's scope, checked where every handler authenticates (src/model/scopes.ts decides)
    const access = routeAccess(route.name, req.method ?? 'GET') ?? 'KEYS_MANAGE';
    let described: Record<string, string> = {};
    const scoped = (principal: PrincipalModel): PrincipalModel => {
      if (speaks === 'rest-keys') described = describeKey(principal);
      requireAccess(principal, access);
      return principal;
    };
    let keys: KeyService = { ...guarded, authenticate: (value, options) => guarded.authenticate(value, options).then(scoped) };
    // a blank Authorization, or an apiKey no key could match, is no credential: the address pays
    const credential = speaks === 'rest-recs' ? (queryApiKey(url.searchParams) ?? undefined) : authorization === undefined || authorization.trim() === '' ? undefined : authorization;
    let raw: Buffer | undefined;
    if (credential === undefined || kind !== 'none') {
      let caller = prelude.caller(req, res, record, credential, address);
      if (caller instanceof Promise) caller = await caller;
      if (caller === ANSWERED) return true;
      const principal = caller;
      let inScope = true;
      if (principal !== null) {
        // the handler authenticates again: it gets this very answer, counted once
        let checked: Promise<PrincipalModel>;
        try {
          checked = Promise.resolve(scoped(principal));
        } catch (error) {
          inScope = false;
          checked = Promise.reject(error);
          checked.catch(() => undefined);
        }
        const scopedKeys = keys;
        keys = { ...guarded, authenticate: (value, options) => (value !== credential ? scopedKeys.authenticate(value, options) : checked) };
      }
      // a key outside the route's scope is refused before a byte of its body is read
      if (inScope) {
        const read = await prelude.read(req, res, record, kind, principal, address);
        if (read === ANSWERED) return true;
        raw = read;
      }
    }
    const body = raw === undefined ? undefined : prelude.parse(req, res, record, raw.toString('utf8'));
    if (body === ANSWERED) return true;
    const restRequest = new ServedRestRequest(req, url, body, new RequestDeadline(res, config.requestDeadlineMs), log, address);
    const answer = serveApiKeys(restRequest, keys) ?? serveIngest(restRequest, keys, backend.ingest) ?? serveStats(restRequest, keys, deps.readStats, deps.takeImpressions) ?? serveRecommendations(restRequest, keys, backend.recs);
    if (answer === null) return false;
    const response = await answer;
    prelude.answer(req, res, record, { ...response, headers: { ...response.headers, ...described } }, raw !== undefined);
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
