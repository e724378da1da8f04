import { LRUCache } from 'lru-cache';

/** Characters of the texts remembered, at most. */
const REMEMBERED_CHARS = 8 * 1024 * 1024;
/** Texts longer than this are never remembered: each is looked at (NEW_DOCUMENTS_RPS) each time it comes. */
const MAX_REMEMBERED_TEXT = 16 * 1024;

/**
 * The query texts this gateway has parsed and validated, so that a request with one of them
 * skips the new-document limit (RateLimiter.mayValidate). Parsing and validating a new dense
 * document costs milliseconds, a known one a lookup. Which of them a request was is only known
 * once it has run (Resolved.validated): a text not known here is let through while its
 * caller's bucket holds a token, and charged one if it was validated, and only then remembered.
 */
export class NewDocuments {
  private readonly known = new LRUCache<string, true>({
    max: 100_000,
    maxSize: REMEMBERED_CHARS,
    sizeCalculation: (_value, key) => 1 + key.length,
  });

  /** The query text of a request (a POST's body, a GET's `query`) unless it is known; null when known or absent. */
  unknownText(method: string, body: unknown, search: string): string | null {
    const text: unknown = method === 'POST' ? (typeof body === 'object' && body !== null ? (body as { query?: unknown }).query : undefined) : new URLSearchParams(search).get('query');
    return typeof text === 'string' && text !== '' && !this.known.has(text) ? text : null;
  }

  /** Remembers a text that was parsed and validated. */
  remember(text: string): void {
    if (text.length <= MAX_REMEMBERED_TEXT) this.known.set(text, true);
  }
}
