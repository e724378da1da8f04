import { createHash } from 'node:crypto';

/** A persisted query's extension as sent. */
interface PersistedQueryExtension {
  version?: unknown;
  sha256Hash?: unknown;
}

/** Whether a request sends a persisted query's extension (to look one up, or to register one). */
export function asksPersistedQuery(method: string, body: unknown, search: string): boolean {
  if (method === 'GET') {
    // read as Apollo reads it: JSON, where `persisted\u0051uery` is the same key
    const parsed = parsedOr(new URLSearchParams(search).get('extensions'));
    return typeof parsed === 'object' && parsed !== null && 'persistedQuery' in parsed;
  }
  if (typeof body !== 'object' || body === null) return false;
  const { extensions } = body as { extensions?: unknown };
  return typeof extensions === 'object' && extensions !== null && 'persistedQuery' in extensions;
}

/**
 * A stranger's request as it may run: persisted queries live in a cache every replica shares, so a
 * query sent with an extension that would register it (version 1, its own SHA-256) runs without
 * the extension. A hash alone is only looked up; Apollo refuses a wrong hash or version itself.
 */
export function withoutRegistration(method: string, body: unknown, search: string): { body: unknown; search: string } {
  if (method === 'GET') {
    const params = new URLSearchParams(search);
    const query = params.get('query');
    if (query === null || !registers(query, parsedOr(params.get('extensions')))) return { body, search };
    params.delete('extensions');
    return { body, search: `?${params.toString()}` };
  }
  const { extensions, ...rest } = body as { query?: unknown; extensions: Record<string, unknown> };
  if (!registers(rest.query, extensions)) return { body, search };
  const { persistedQuery: _dropped, ...others } = extensions;
  return { body: Object.keys(others).length === 0 ? rest : { ...rest, extensions: others }, search };
}

function parsedOr(text: string | null): unknown {
  try {
    return text === null ? null : JSON.parse(text);
  } catch {
    return null;
  }
}

/** Whether Apollo would register `query` under these extensions: version 1 and the query's own hash. */
function registers(query: unknown, extensions: unknown): boolean {
  if (typeof query !== 'string' || typeof extensions !== 'object' || extensions === null) return false;
  const persisted = (extensions as { persistedQuery?: PersistedQueryExtension }).persistedQuery;
  return (
    typeof persisted === 'object' && persisted !== null && persisted.version === 1 &&
    persisted.sha256Hash === createHash('sha256').update(query).digest('hex')
  );
}
