import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import { Lexer, Source, stripIgnoredCharacters, TokenKind } from 'graphql';
import { LRUCache } from 'lru-cache';
import { DEFAULT_LIMITS, DEFAULT_RESPONSE_CACHE_ENTRIES } from '../config/defaults.js';
import { isJsonContentType } from './contentType.js';

/** Options of ResponseCache; every one has a default. */
export interface ResponseCacheOptions {
  /** Responses kept at most; default DEFAULT_RESPONSE_CACHE_ENTRIES (10,000). */
  maxEntries?: number;
  /** Bytes of response bodies kept at most; default 64 MiB. */
  maxBytes?: number;
  /** Longest time a response is kept, in seconds, whatever its maxAge; default 300. */
  maxTtlSeconds?: number;
  /** Distinct query texts whose normalised form is remembered; default 1,000. */
  maxQueries?: number;
  /** Distinct request bodies (as sent) whose key is remembered, so a repeat needs no parsing; default 10,000. */
  maxBodies?: number;
  /** The clock, for tests; default Date.now. */
  now?: () => number;
  /** The parser's token limit (MAX_TOKENS): a longer text gets no key and costs no more lexing; default 2000. */
  maxTokens?: number;
}

/** Whether a query text has at most `max` tokens, lexing no further than that. */
function withinTokens(query: string, max: number): boolean {
  const lexer = new Lexer(new Source(query));
  for (let count = 0; lexer.advance().kind !== TokenKind.EOF; count++) if (count >= max) return false;
  return true;
}

interface Entry {
  /** The operation's metrics label, so a hit is counted like the miss that stored it. */
  operation: string;
  body: Buffer;
  /** As writeHead takes them: name, value, name, value. */
  headers: string[];
  storedAt: number;
  expiresAt: number;
}

/** The response counters since start, for tests and metrics. */
export interface ResponseCacheStats {
  hits: number;
  misses: number;
  stored: number;
}

/** Bodies longer than this are not remembered as sent (their key is still cached by normalised query). */
const MAX_REMEMBERED_BODY = 8 * 1024;
/** Query texts longer than this are normalised afresh each time rather than remembered. */
const MAX_REMEMBERED_QUERY = 16 * 1024;
/** Characters the remembered query texts, and the remembered bodies, may hold each at most. */
const REMEMBERED_TEXT_CHARS = 8 * 1024 * 1024;
/** The keyword of a mutation, wherever it stands in a query text. */
const MUTATION_WORD = /\bmutation\b/;
/** Apollo's own Cache-Control for an answer whose every field is PUBLIC with a maxAge. */
const PUBLIC_MAX_AGE = /^max-age=(\d+), public$/;

/**
 * Serialised GraphQL responses of PUBLIC data, answered before the GraphQL pipeline.
 *
 * What it keeps: only 200 answers without errors that Apollo's cache-control plugin marked
 * `max-age=N, public` (so every field resolved is PUBLIC: Viewer and ApiKey are PRIVATE and make
 * an answer uncacheable), for at most N seconds. Keyed by the query text with ignored characters
 * stripped, the operation name and the variables; requests with extensions (persisted queries)
 * are not cached.
 *
 * Why the key holds no credential: the caller asks only after authentication (the server hands
 * it authenticated requests only), and PUBLIC fields are the same for every authenticated caller
 * (items and recommendations do not depend on who asks; in REST mode they are fetched with the
 * gateway's own key). A request without a valid credential never reaches the cache.
 */
export class ResponseCache {
  readonly stats: ResponseCacheStats = { hits: 0, misses: 0, stored: 0 };
  private readonly entries: LRUCache<string, Entry>;
  /** Query text as sent -> its normalised form; null when it does not even lex. */
  private readonly normalised: LRUCache<string, { text: string | null }>;
  /** Accept and request body as sent -> the key keyOf gave them: a repeat skips JSON parsing. */
  private readonly bodies: LRUCache<string, string>;
  private readonly maxTtlSeconds: number;
  private readonly now: () => number;
  private readonly maxTokens: number;

  constructor(options: ResponseCacheOptions = {}) {
    this.now = options.now ?? Date.now;
    this.maxTokens = options.maxTokens ?? DEFAULT_LIMITS.maxTokens;
    this.maxTtlSeconds = options.maxTtlSeconds ?? 300;
    this.entries = new LRUCache<string, Entry>({
      max: options.maxEntries ?? DEFAULT_RESPONSE_CACHE_ENTRIES,
      maxSize: options.maxBytes ?? 64 * 1024 * 1024,
      sizeCalculation: (entry, key) => entry.body.length + key.length,
    });
    // Both are filled before authentication, so both are bounded in bytes too, not only in
    // entries: a stranger sending large distinct bodies evicts old ones, never grows the heap.
    this.normalised = new LRUCache({
      max: options.maxQueries ?? 1_000,
      maxSize: REMEMBERED_TEXT_CHARS,
      sizeCalculation: (value, key) => 1 + key.length + (value.text?.length ?? 0),
    });
    this.bodies = new LRUCache({
      max: options.maxBodies ?? 10_000,
      maxSize: REMEMBERED_TEXT_CHARS,
      sizeCalculation: (value, key) => 1 + key.length + value.length,
    });
  }

  /**
   * The key of a POST whose JSON body is exactly `text`, when keyOf gave one for the same text
   * and Accept before; undefined when it has not (then parse the body and ask keyOf). What the
   * hot path asks first: a repeated request needs neither JSON parsing nor a normalised query.
   */
  knownKey(headers: IncomingHttpHeaders, text: string): string | undefined {
    if (!isJsonContentType(headers['content-type'])) return undefined;
    return this.bodies.get(bodyKey(headers.accept, text));
  }

  /**
   * The cache key of a request, or null when the cache must not answer it: only POSTs of a JSON
   * body with a query text and no extensions qualify.
   */
  keyOf(method: string, headers: IncomingHttpHeaders, body: unknown, text?: string): string | null {
    if (method !== 'POST' || typeof body !== 'object' || body === null || Array.isArray(body)) return null;
    if (!isJsonContentType(headers['content-type'])) return null;
    const { query, variables, operationName, extensions } = body as Record<string, unknown>;
    if (typeof query !== 'string' || extensions !== undefined) return null;
    // a mutation is never answered from here, and its text and variables (events' session ids)
    // are not remembered; the word anywhere (a field of that name too) only costs the caching
    if (MUTATION_WORD.test(query)) return null;
    if (variables !== undefined && variables !== null && (typeof variables !== 'object' || Array.isArray(variables))) return null;
    if (operationName !== undefined && operationName !== null && typeof operationName !== 'string') return null;
    const normalised = this.normalise(query);
    if (normalised === null) return null;
    // Accept decides the response's content type, so it is part of what the answer depends on
    let key: string;
    try {
      key = JSON.stringify([normalised, operationName ?? null, variables ?? null, headers.accept ?? null]);
    } catch {
      // variables nested deeper than the stack (the GraphQL path refuses them): not cached
      return null;
    }
    if (text !== undefined && text.length <= MAX_REMEMBERED_BODY) this.bodies.set(bodyKey(headers.accept, text), key);
    return key;
  }

  private normalise(query: string): string | null {
    let known = this.normalised.get(query);
    if (known === undefined) {
      try {
        // a text over the token limit is refused by the parser after that many tokens; here too,
        // rather than after lexing the whole of it
        known = { text: withinTokens(query, this.maxTokens) ? stripIgnoredCharacters(query) : null };
      } catch {
        // Apollo answers it with GRAPHQL_PARSE_FAILED, never cached
        known = { text: null };
      }
      if (query.length <= MAX_REMEMBERED_QUERY) this.normalised.set(query, known);
    }
    return known.text;
  }

  /**
   * Answers the request from the cache, with `requestId` as its x-request-id, and returns the
   * operation's label; null when there is nothing fresh for key. The headers go to writeHead in
   * one array, so node stores them without a setHeader each.
   */
  serve(key: string, res: ServerResponse, requestId: string): string | null {
    const entry = this.entries.get(key);
    const now = this.now();
    if (entry === undefined || entry.expiresAt <= now) {
      if (entry !== undefined) this.entries.delete(key);
      this.stats.misses += 1;
      return null;
    }
    this.stats.hits += 1;
    // how long it has been kept, so a shared cache downstream does not keep it past its maxAge
    const headers = entry.headers.slice();
    headers.push('age', String(Math.floor((now - entry.storedAt) / 1000)), 'x-request-id', requestId);
    res.writeHead(200, headers);
    res.end(entry.body);
    return entry.operation;
  }

  /**
   * Offers the answer Apollo gave for key. It is kept only if it is a 200 without errors whose
   * Cache-Control Apollo computed as `max-age=N, public` with N > 0; for min(N, maxTtlSeconds).
   */
  offer(key: string, status: number, headers: Record<string, string>, body: string | Buffer, operation = 'anonymous'): void {
    if (status !== 200) return;
    const match = PUBLIC_MAX_AGE.exec(headers['cache-control'] ?? '');
    if (!match) return;
    const maxAge = Math.min(Number(match[1]), this.maxTtlSeconds);
    // Apollo never marks an answer with errors public; this guards against a future change
    if (maxAge <= 0 || body.includes('"errors"')) return;
    const kept: string[] = [];
    for (const [name, value] of Object.entries(headers)) {
      if (name !== 'age' && name !== 'x-request-id' && name !== 'content-length') kept.push(name, value);
    }
    const bytes = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
    kept.push('content-length', String(bytes.length));
    const now = this.now();
    this.entries.set(key, { operation, body: bytes, headers: kept, storedAt: now, expiresAt: now + maxAge * 1000 });
    this.stats.stored += 1;
  }

  get size(): number {
    return this.entries.size;
  }

  clear(): void {
    this.entries.clear();
    this.bodies.clear();
  }

  private dropping: NodeJS.Timeout | null = null;

  /**
   * The data behind the answers changed (events or item records applied): every answer is dropped
   * within `withinMs`. Changes that come meanwhile are dropped by the same clearing, so a steady
   * stream of events clears the cache at most once per `withinMs` instead of at every batch, and
   * an answer is never served more than `withinMs` after the change that made it stale.
   */
  dropSoon(withinMs: number): void {
    if (this.dropping !== null) return;
    this.dropping = setTimeout(() => {
      this.dropping = null;
      this.clear();
    }, withinMs);
    this.dropping.unref();
  }
}

const bodyKey = (accept: string | undefined, text: string): string => `${accept ?? ''}\n${text}`;
