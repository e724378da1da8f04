import { createHash } from 'node:crypto';

interface PersistedQueryExtension {
  version?: unknown;
  sha256Hash?: unknown;
}

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

/** A stranger's request as it may run: persisted queries are shared by every replica, so a would-be
 * registration runs without its extension. A hash alone is only looked up. */
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

function registers(query: unknown, extensions: unknown): boolean {
  if (typeof query !== 'string' || typeof extensions !== 'object' || extensions === null) return false;
  const persisted = (extensions as { persistedQuery?: PersistedQueryExtension }).persistedQuery;
  return (
    typeof persisted === 'object' && persisted !== null && persisted.version === 1 &&
    persisted.sha256Hash === createHash('sha256').update(query).digest('hex')
  );
}
