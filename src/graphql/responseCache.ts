import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import { Lexer, Source, stripIgnoredCharacters, TokenKind } from 'graphql';
import { LRUCache } from 'lru-cache';
import { DEFAULT_LIMITS, DEFAULT_RESPONSE_CACHE_BYTES, DEFAULT_RESPONSE_CACHE_ENTRIES, RESPONSE_CACHE_SHARE } from '../config/defaults.js';
import type { ItemModel, RecommendationListModel, RecsNow } from '../ports/backend.js';
import { isJsonContentType } from './contentType.js';

/** Options of ResponseCache; every one has a default. */
export interface ResponseCacheOptions {
  /** Responses kept at most; default DEFAULT_RESPONSE_CACHE_ENTRIES (10,000). */
  maxEntries?: number;
  /** Bytes of response bodies kept at most (RESPONSE_CACHE_MAX_BYTES); an answer over a RESPONSE_CACHE_SHARE-th of it is not kept; default 64 MiB. */
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

/**
 * What one answer was computed from, as its request's loaders fetched it (their onList and onItems
 * hooks): every recommendation list and item record it read, and the data version when the
 * request began, before any of them was read. Resolvers read the data through the loaders only,
 * and an answer is a function of what they read and of the request (its key): when every list
 * and record is still the same now, the answer computed now would be the same too.
 */
export class AnswerSources {
  private readonly lists: RecommendationListModel[] = [];
  private readonly itemIds: number[] = [];
  private readonly items: (ItemModel | null)[] = [];
  /** Set when a load failed: such an answer has errors and is not kept, but never check it. */
  private failed = false;

  /**
   * `version`: the cache's data version when the request began. `detailed`: whether the answer
   * may show the entries' score, evidence or source; when not, a list whose items and their order
   * are the same gives the same answer, whatever its scores (which a rebuild of next-best-product
   * moves for many anchors whose lists it leaves as they were).
   */
  constructor(readonly version: number, private readonly detailed = true) {}

  readonly onList = (list: RecommendationListModel): void => {
    this.lists.push(list);
  };

  readonly onItems = (ids: readonly number[], found: readonly (ItemModel | null | Error)[]): void => {
    for (let i = 0; i < ids.length; i++) {
      const item = found[i];
      if (item === undefined || item instanceof Error) this.failed = true;
      else {
        this.itemIds.push(ids[i]!);
        this.items.push(item);
      }
    }
  };

  /**
   * Whether every source is the same now: each record the same object (a record replaced is a new
   * one), each list the same entries, field by field, with the same records. Throws what `now`
   * throws (an anchor gone: NOT_FOUND).
   */
  unchanged(now: RecsNow): boolean {
    if (this.failed) return false;
    for (let i = 0; i < this.itemIds.length; i++) if (now.item(this.itemIds[i]!) !== this.items[i]) return false;
    for (const list of this.lists) if (!sameList(list, now.recommend(list.kind, list.anchorId), this.detailed)) return false;
    return true;
  }
}

function sameList(was: RecommendationListModel, is: RecommendationListModel, detailed: boolean): boolean {
  const a = was.entries;
  const b = is.entries;
  if (a.length !== b.length || (was.items?.length ?? -1) !== (is.items?.length ?? -1)) return false;
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!;
    const y = b[i]!;
    if (x.itemId !== y.itemId || x.rank !== y.rank) return false;
    if (detailed && (x.score !== y.score || x.evidence !== y.evidence || x.source !== y.source)) return false;
    // the records a list came with are the ones its items resolve to (Loaders.itemsOf): the answer may show them
    if (was.items !== undefined && was.items[i] !== is.items![i]) return false;
  }
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
  /** The data version the answer is known to hold for; behind the cache's, it is checked first. */
  version: number;
  /** What it was computed from; null where the data is not followed (then version never changes). */
  sources: AnswerSources | null;
}

/** The response counters since start, for tests and metrics. */
export interface ResponseCacheStats {
  hits: number;
  misses: number;
  stored: number;
  /** Hits on an answer kept from before a data change, served after its sources were found unchanged. */
  rechecked: number;
  /** Answers dropped because a data change changed one of their sources. */
  changed: number;
  /** Answers not kept because they were over a RESPONSE_CACHE_SHARE-th of the cache's bytes. */
  oversized: number;
}

/** Bodies longer than this are not remembered as sent (their key is still cached by normalised query). */
const MAX_REMEMBERED_BODY = 8 * 1024;
/** Query texts longer than this are normalised afresh each time rather than remembered. */
const MAX_REMEMBERED_QUERY = 16 * 1024;
/** Characters the remembered query texts, and the remembered bodies, may hold each at most. */
const REMEMBERED_TEXT_CHARS = 8 * 1024 * 1024;
/** The keyword of a mutation, wherever it stands in a query text. */
const MUTATION_WORD = /\bmutation\b/;
/**
 * The fields of a RecommendationEdge that show more of an entry than its item and rank. A query
 * can select them only by writing their names; the key holds the query text, so a key without
 * these words (as names, variables or anything else) has an answer that cannot show them.
 */
const ENTRY_DETAIL = /\b(?:score|evidence|source)\b/;
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
 * When the data changes (the embedded recommender's events and records, followData), nothing is
 * dropped at once: each answer kept from before is checked against the data when next asked for
 * (its AnswerSources: the lists and records it was computed from), served if they are unchanged,
 * dropped if not. Under a steady stream of events, the answers of anchors the events did not
 * touch stay cached, and an answer is never served after a change that changed it.
 *
 * Why the key holds no credential: the caller asks only after authentication (the server hands
 * it authenticated requests only), and PUBLIC fields are the same for every authenticated caller
 * (items and recommendations do not depend on who asks; in REST mode they are fetched with the
 * gateway's own key). A request without a valid credential never reaches the cache.
 */
export class ResponseCache {
  readonly stats: ResponseCacheStats = { hits: 0, misses: 0, stored: 0, rechecked: 0, changed: 0, oversized: 0 };
  /** Data changes seen (dataChanged); an answer computed before the last one is checked before it is served. */
  private version = 0;
  /** Whether dataChanged is called (followData): answers then record their sources. */
  private following = false;
  private dataNow: RecsNow | null = null;
  private readonly entries: LRUCache<string, Entry>;
  /** Query text as sent -> its normalised form; null when it does not even lex. */
  private readonly normalised: LRUCache<string, { text: string | null }>;
  /** Accept and request body as sent -> the key keyOf gave them: a repeat skips JSON parsing. */
  private readonly bodies: LRUCache<string, string>;
  private readonly maxTtlSeconds: number;
  private readonly now: () => number;
  private readonly maxTokens: number;
  /** The largest answer kept: one larger would evict many others. */
  private readonly maxAnswerBytes: number;

  constructor(options: ResponseCacheOptions = {}) {
    this.now = options.now ?? Date.now;
    this.maxTokens = options.maxTokens ?? DEFAULT_LIMITS.maxTokens;
    this.maxTtlSeconds = options.maxTtlSeconds ?? 300;
    const maxBytes = options.maxBytes ?? DEFAULT_RESPONSE_CACHE_BYTES;
    this.maxAnswerBytes = Math.floor(maxBytes / RESPONSE_CACHE_SHARE);
    this.entries = new LRUCache<string, Entry>({
      max: options.maxEntries ?? DEFAULT_RESPONSE_CACHE_ENTRIES,
      maxSize: maxBytes,
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
    if (entry === undefined || entry.expiresAt <= now || (entry.version !== this.version && !this.stillHolds(entry))) {
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
   * Where the data is followed (followData), only with `sources`, what it was computed from.
   */
  offer(key: string, status: number, headers: Record<string, string>, body: string | Buffer, operation = 'anonymous', sources: AnswerSources | null = null): void {
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
    if (bytes.length + key.length > this.maxAnswerBytes) {
      this.stats.oversized += 1;
      return;
    }
    kept.push('content-length', String(bytes.length));
    const now = this.now();
    // followed data: an answer whose sources are unknown could never be checked, nor trusted
    if (this.following && sources === null) return;
    const version = sources?.version ?? this.version;
    this.entries.set(key, { operation, body: bytes, headers: kept, storedAt: now, expiresAt: now + maxAge * 1000, version, sources });
    this.stats.stored += 1;
  }

  get size(): number {
    return this.entries.size;
  }

  clear(): void {
    this.entries.clear();
    this.bodies.clear();
  }

  /**
   * From now on the data behind the answers is followed: dataChanged is called after every change
   * of it (Backend.onDataChange), and `now` reads it as it is (Backend.recsNow; null where there is
   * no such reader: every answer is then dropped at the first change after it was computed).
   */
  followData(now: RecsNow | null): void {
    this.following = true;
    this.dataNow = now;
  }

  /**
   * The data behind the answers changed (events or item records applied). Nothing is dropped
   * here: an answer computed before is checked against the data when it is next asked for
   * (stillHolds), so a batch drops only the answers whose lists or records it changed, and an
   * answer a change made stale is never served after that change, not even for a moment.
   */
  dataChanged(): void {
    this.version++;
  }

  /** A new request's recorder of its sources, for offer; null when the data is not followed. */
  sourcesOfNewAnswer(key: string): AnswerSources | null {
    return this.following ? new AnswerSources(this.version, ENTRY_DETAIL.test(key)) : null;
  }

  /** Whether an answer from an older data version still holds; then it is good for this one. */
  private stillHolds(entry: Entry): boolean {
    let holds = false;
    if (this.dataNow !== null && entry.sources !== null) {
      try {
        holds = entry.sources.unchanged(this.dataNow);
      } catch {
        holds = false; // an anchor gone: the answer now is an error
      }
    }
    if (!holds) {
      this.stats.changed += 1;
      return false;
    }
    entry.version = this.version;
    this.stats.rechecked += 1;
    return true;
  }
}

const bodyKey = (accept: string | undefined, text: string): string => `${accept ?? ''}\n${text}`;
