import type { TrustedDocumentsSettings, TrustedOperation } from '../../config/manifest.js';
import { ErrorCode, GatewayError } from '../../errors.js';

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Trusted documents: operations listed in a manifest at start, sent by SHA-256 alone; with
 * TRUSTED_DOCUMENTS_ONLY nothing else runs. */

export interface TrustedRequest {
  body: unknown;
  search: string;
}

const notInList = (message: string): GatewayError => new GatewayError(ErrorCode.PERSISTED_QUERY_NOT_IN_LIST, message);

/** Runs after authentication and before anything reads the body as GraphQL (response cache, takeover, Apollo). */
export class TrustedDocuments {
  private readonly byId: ReadonlyMap<string, TrustedOperation>;
  private readonly bodies: ReadonlySet<string>;
  private readonly only: boolean;

  constructor(settings: Pick<TrustedDocumentsSettings, 'operations' | 'only'>) {
    this.byId = settings.operations;
    this.bodies = new Set([...settings.operations.values()].map((operation) => operation.body));
    this.only = settings.only;
  }

  /** A listed hash becomes its body with the persistedQuery extension taken out, so APQ neither looks it
   * up nor registers it; with only, an unlisted operation is PERSISTED_QUERY_NOT_IN_LIST; else null. */
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
      // a listed body with a hash not its own is Apollo's to refuse
      return this.bodies.has(query) ? null : notInList('This gateway runs only its trusted documents: the operation is not one of them');
    }
    if (persisted !== undefined) return notInList('This gateway runs only its trusted documents: no listed operation has this sha256Hash');
    return null;
  }
}
