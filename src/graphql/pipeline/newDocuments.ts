import { LRUCache } from 'lru-cache';

const REMEMBERED_CHARS = 8 * 1024 * 1024;
/** Longer texts are never remembered: each counts against NEW_DOCUMENTS_RPS every time. */
const MAX_REMEMBERED_TEXT = 16 * 1024;

/** Query texts already parsed and validated, which skip the new-document limit. Whether a request
 * validated is known only after it runs, so an unknown text needs a token, and is charged then. */
export class NewDocuments {
  private readonly known = new LRUCache<string, true>({
    max: 100_000,
    maxSize: REMEMBERED_CHARS,
    sizeCalculation: (_value, key) => 1 + key.length,
  });

  /** The request's query text unless known; null when known or absent. */
  unknownText(method: string, body: unknown, search: string): string | null {
    const text: unknown = method === 'POST' ? (typeof body === 'object' && body !== null ? (body as { query?: unknown }).query : undefined) : new URLSearchParams(search).get('query');
    return typeof text === 'string' && text !== '' && !this.known.has(text) ? text : null;
  }

  remember(text: string): void {
    if (text.length <= MAX_REMEMBERED_TEXT) this.known.set(text, true);
  }
}
