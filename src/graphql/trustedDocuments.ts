import type { TrustedDocumentsSettings, TrustedOperation } from '../config/manifest.js';
import { ErrorCode, GatewayError } from '../errors.js';

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Trusted documents (TRUSTED_DOCUMENTS, TRUSTED_DOCUMENTS_ONLY): the operations a team's apps
 * send, listed in a manifest at start-up. A request may send only the SHA-256 of a listed
 * operation (extensions.persistedQuery.sha256Hash, as Apollo's persisted-query clients do); with
 * TRUSTED_DOCUMENTS_ONLY nothing else runs.
 *
 * The manifest is Apollo's persisted-query manifest, as @apollo/generate-persisted-query-manifest
 * writes it: {"format":"apollo-persisted-query-manifest","version":1,"operations":[{"id","name",
 * "type","body"}]}, each id the SHA-256 (hex) of its body. GraphQL Code Generator's client preset
 * writes its persisted documents as {"<sha256>": "<body>"} (with hashAlgorithm: 'sha256'); that
 * is taken too.
 */

/** A request's parts, as the GraphQL paths read them: the POST body (parsed JSON) and the URL's query string. */
export interface TrustedRequest {
  body: unknown;
  search: string;
}

/** The refusal of an operation that is not listed, where only listed ones run. */
const notInList = (message: string): GatewayError => new GatewayError(ErrorCode.PERSISTED_QUERY_NOT_IN_LIST, message);

/**
 * Applies the trusted documents to requests. Where it must run: after authentication, on the
 * request's parsed JSON body (or its query string, for a GET), before anything reads the body
 * as GraphQL (the response cache's key, the takeover, Apollo).
 */
export class TrustedDocuments {
  private readonly byId: ReadonlyMap<string, TrustedOperation>;
  private readonly bodies: ReadonlySet<string>;
  private readonly only: boolean;

  constructor(settings: Pick<TrustedDocumentsSettings, 'operations' | 'only'>) {
    this.byId = settings.operations;
    this.bodies = new Set([...settings.operations.values()].map((operation) => operation.body));
    this.only = settings.only;
  }

  /**
   * What becomes of a request (`method` upper-case; `body` the parsed POST body; `search` the
   * URL's query string, '' or '?...'):
   * - it names a listed operation by hash (with no query, or the listed body itself): the request
   *   with the listed body as its query and the persistedQuery extension taken out, so both
   *   GraphQL paths run it as any query, and Apollo's automatic persisted queries neither look it
   *   up (which would answer PERSISTED_QUERY_NOT_FOUND) nor register it in the shared cache;
   * - with TRUSTED_DOCUMENTS_ONLY, any other operation (a query text that is not a listed body,
   *   or a hash that is not listed): a PERSISTED_QUERY_NOT_IN_LIST error, to send as it is (400);
   * - anything else: null, the request as it is (automatic persisted queries work as before
   *   where only is off; a malformed request is refused by the GraphQL paths as before).
   */
  resolve(method: string, search: string, body: unknown): TrustedRequest | GatewayError | null {
    if (method === 'GET') {
      const params = new URLSearchParams(search);
      let extensions: unknown;
      const sent = params.get('extensions');
      if (sent !== null) {
        try {
          extensions = JSON.parse(sent);
        } catch {
          return null; // Apollo refuses it
        }
      }
      const outcome = this.decide(params.get('query') ?? undefined, extensions);
      if (outcome === null || outcome instanceof GatewayError) return outcome;
      params.set('query', outcome.query);
      if (outcome.extensions === undefined) params.delete('extensions');
      else params.set('extensions', JSON.stringify(outcome.extensions));
      return { body, search: `?${params.toString()}` };
    }
    if (!isRecord(body)) return null;
    const outcome = this.decide(body.query, body.extensions);
    if (outcome === null || outcome instanceof GatewayError) return outcome;
    const { extensions: _extensions, ...rest } = body;
    return { body: { ...rest, query: outcome.query, ...(outcome.extensions ? { extensions: outcome.extensions } : {}) }, search };
  }

  private decide(query: unknown, extensions: unknown): { query: string; extensions: Record<string, unknown> | undefined } | GatewayError | null {
    const persisted = isRecord(extensions) ? extensions.persistedQuery : undefined;
    const hash = isRecord(persisted) && typeof persisted.sha256Hash === 'string' ? persisted.sha256Hash : undefined;
    const listed = hash === undefined ? undefined : this.byId.get(hash);
    if (listed !== undefined && (query === undefined || query === null || query === listed.body)) {
      const { persistedQuery: _persisted, ...others } = extensions as Record<string, unknown>;
      return { query: listed.body, extensions: Object.keys(others).length > 0 ? others : undefined };
    }
    if (!this.only) return null;
    if (typeof query === 'string') {
      // a listed body with a hash that is not its own is Apollo's to refuse (the hash does not match)
      return this.bodies.has(query) ? null : notInList('This gateway runs only its trusted documents: the operation is not one of them');
    }
    if (persisted !== undefined) return notInList('This gateway runs only its trusted documents: no listed operation has this sha256Hash');
    return null;
  }
}
