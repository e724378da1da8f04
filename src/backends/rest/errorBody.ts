/** Reads the error bodies of both upstreams defensively: JSON of several shapes, or plain text. */

export interface UpstreamErrorEntry {
  /** Walmart's numeric code, or Concord's field id. */
  code: number | string | null;
  message: string;
}

const MAX_MESSAGE = 300;

function clip(text: string): string {
  const t = text.trim();
  return t.length > MAX_MESSAGE ? `${t.slice(0, MAX_MESSAGE)}…` : t;
}

export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function entry(raw: unknown): UpstreamErrorEntry | null {
  if (typeof raw !== 'object' || raw === null) return null;
  const r = raw as Record<string, unknown>;
  const message = typeof r.message === 'string' ? r.message : typeof r.error === 'string' ? r.error : null;
  if (message === null) return null;
  const code = typeof r.code === 'number' || typeof r.code === 'string' ? r.code : typeof r.id === 'string' ? r.id : null;
  return { code, message: clip(message) };
}

/** `{"errors":[{code,message}]}` (Walmart), `[{id,message}]` (Concord validation),
 * `{message}` and plain text (proxies) all become a list of entries; null when the parsed JSON
 * is not an error body at all (a 200 with data). */
export function errorEntries(body: unknown, text: string): UpstreamErrorEntry[] | null {
  if (body === undefined) return text.trim() === '' ? [] : [{ code: null, message: clip(text) }];
  if (Array.isArray(body)) {
    const entries = body.map(entry);
    return entries.length > 0 && entries.every((e) => e !== null) ? entries : null;
  }
  if (typeof body === 'object' && body !== null) {
    const r = body as Record<string, unknown>;
    if (Array.isArray(r.errors)) return r.errors.map(entry).filter((e): e is UpstreamErrorEntry => e !== null);
    const single = entry(body);
    if (single !== null && !('itemId' in r)) return [single];
  }
  return null;
}

/** An upstream's message as a client may be told it: its first line, without the caller's
 * credentials, as another server may add a stack or echo the Authorization header. */
export function forClient(message: string, authorization: string): string {
  let text = message.split(/\r?\n/, 1)[0]!.trim();
  const secrets = [authorization, authorization.replace(/^\S+\s+/, '')].filter((secret) => secret.length >= 8);
  for (const secret of secrets) text = text.split(secret).join('[credentials]');
  return text;
}

export function numericCode(entry: UpstreamErrorEntry | undefined): number | null {
  if (entry === undefined || entry.code === null) return null;
  const n = typeof entry.code === 'number' ? entry.code : Number(entry.code);
  return Number.isInteger(n) ? n : null;
}
