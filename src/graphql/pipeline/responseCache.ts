import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import { Lexer, Source, stripIgnoredCharacters, TokenKind } from 'graphql';
import { LRUCache } from 'lru-cache';
import { DEFAULT_LIMITS, DEFAULT_RESPONSE_CACHE_BYTES, DEFAULT_RESPONSE_CACHE_ENTRIES, RESPONSE_CACHE_SHARE } from '../../config/defaults.js';
import type { ItemModel, RecommendationListModel, RecsNow } from '../../ports/backend.js';
import { isJsonContentType } from './contentType.js';

export interface ResponseCacheOptions {
  /** Responses kept at most; default 10,000. */
  maxEntries?: number;
  /** RESPONSE_CACHE_MAX_BYTES; an answer over a RESPONSE_CACHE_SHARE-th is not kept; default 64 MiB. */
  maxBytes?: number;
  /** Longest a response is kept, seconds, whatever its maxAge; default 300. */
  maxTtlSeconds?: number;
  /** Query texts whose normalised form is remembered; default 1,000. */
  maxQueries?: number;
  /** Bodies as sent whose key is remembered, so a repeat needs no parsing; default 10,000. */
  maxBodies?: number;
  now?: () => number;
  /** MAX_TOKENS: a longer text gets no key and costs no more lexing; default 2000. */
  maxTokens?: number;
}

function withinTokens(query: string, max: number): boolean {
  const lexer = new Lexer(new Source(query));
  for (let count = 0; lexer.advance().kind !== TokenKind.EOF; count++) if (count >= max) return false;
  return true;
}

/** The lists and records an answer was computed from, and the data version before any was read.
 * Resolvers read only through the loaders, so unchanged sources mean an unchanged answer. */
export class AnswerSources {
  private readonly lists: RecommendationListModel[] = [];
  private readonly itemIds: number[] = [];
  private readonly items: (ItemModel | null)[] = [];
  private failed = false;

  /** `detailed`: whether the answer may show scores; if not, a rebuild that only moves scores changes nothing. */
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

  /** Whether every source is the same now (a replaced record is a new object); throws what `now` throws. */
  unchanged(now: RecsNow): boolean {
    if (this.failed) return false;
    for (let i = 0; i < this.itemIds.length; i++) if (now.item(this.itemIds[i]!) !== this.items[i]) return false;
    for (const list of this.lists) if (!sameList(list, now.recommend(list.kind, list.anchorId, list.filter ?? null), this.detailed)) return false;
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
    // a list's records are what its items resolve to (Loaders.itemsOf): the answer may show them
    if (was.items !== undefined && was.items[i] !== is.items![i]) return false;
  }
  return true;
}

interface Entry {
  /** The operation's metrics label, so a hit counts like the miss that stored it. */
  operation: string;
  body: Buffer;
  headers: string[];
  storedAt: number;
  expiresAt: number;
  version: number;
  /** What it was computed from; null where the data is not followed. */
  sources: AnswerSources | null;
  /** The lists it holds, an impression each time it is served (src/model/trackingId.ts ListCode). */
  impressions: readonly number[];
}

export interface ResponseCacheStats {
  hits: number;
  misses: number;
  stored: number;
  rechecked: number;
  changed: number;
  oversized: number;
}

/** Longer bodies are not remembered as sent; their key is still cached by normalised query. */
const MAX_REMEMBERED_BODY = 8 * 1024;
const MAX_REMEMBERED_QUERY = 16 * 1024;
const REMEMBERED_TEXT_CHARS = 8 * 1024 * 1024;
const MUTATION_WORD = /\bmutation\b/;
/** Edge fields showing more than item and rank; the key holds the query text, so a text without them cannot show them. */
const ENTRY_DETAIL = /\b(?:score|evidence|source)\b/;
/** Never in a key otherwise: JSON.stringify escapes control characters. */
const VARIANT_MARK = '\u0000';
const PUBLIC_MAX_AGE = /^max-age=(\d+), public$/;

/** Serialised 200 answers that Apollo marked `max-age=N, public`, answered before the pipeline and
 * rechecked against their sources after a data change. The key holds no credential: only authenticated
 * requests reach it, and PUBLIC fields are the same for every authenticated caller. */
export class ResponseCache {
  readonly stats: ResponseCacheStats = { hits: 0, misses: 0, stored: 0, rechecked: 0, changed: 0, oversized: 0 };
  private version = 0;
  private following = false;
  private dataNow: RecsNow | null = null;
  private readonly entries: LRUCache<string, Entry>;
  private readonly normalised: LRUCache<string, { text: string | null }>;
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
    // Both fill before authentication, so are bounded in bytes too: a stranger's large distinct
    // bodies evict old ones, never grow the heap.
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

  /** The key of a POST whose body text and Accept gave one before, so a repeat needs no JSON parse. */
  knownKey(headers: IncomingHttpHeaders, text: string): string | undefined {
    if (!isJsonContentType(headers['content-type'])) return undefined;
    return this.bodies.get(bodyKey(headers.accept, text));
  }

  /** The cache key, or null: only POSTs of a JSON body with a query and no extensions qualify. */
  keyOf(method: string, headers: IncomingHttpHeaders, body: unknown, text?: string): string | null {
    if (method !== 'POST' || typeof body !== 'object' || body === null || Array.isArray(body)) return null;
    if (!isJsonContentType(headers['content-type'])) return null;
    const { query, variables, operationName, extensions } = body as Record<string, unknown>;
    if (typeof query !== 'string' || extensions !== undefined) return null;
    // a mutation is never answered from here, nor its text and variables remembered
    if (MUTATION_WORD.test(query)) return null;
    // a shopper's list is never public, and its variables name the shopper: not even remembered
    if (query.includes('recommendedForYou')) return null;
    if (variables !== undefined && variables !== null && (typeof variables !== 'object' || Array.isArray(variables))) return null;
    if (operationName !== undefined && operationName !== null && typeof operationName !== 'string') return null;
    const normalised = this.normalise(query);
    if (normalised === null) return null;
    // Accept decides the content type, so it is part of the key
    let key: string;
    try {
      key = JSON.stringify([normalised, operationName ?? null, variables ?? null, headers.accept ?? null]);
    } catch {
      // nested deeper than the stack (the GraphQL path refuses them)
      return null;
    }
    if (text !== undefined && text.length <= MAX_REMEMBERED_BODY) this.bodies.set(bodyKey(headers.accept, text), key);
    return key;
  }

  private normalise(query: string): string | null {
    let known = this.normalised.get(query);
    if (known === undefined) {
      try {
        // stop lexing at the token limit, as the parser does
        known = { text: withinTokens(query, this.maxTokens) ? stripIgnoredCharacters(query) : null };
      } catch {
        // Apollo answers it with GRAPHQL_PARSE_FAILED, never cached
        known = { text: null };
      }
      if (query.length <= MAX_REMEMBERED_QUERY) this.normalised.set(query, known);
    }
    return known.text;
  }

  /** Answers from the cache and returns the operation's label; null when nothing fresh. */
  serve(key: string, res: ServerResponse, requestId: string, countImpressions?: (codes: readonly number[]) => void): string | null {
    const entry = this.entries.get(key);
    const now = this.now();
    if (entry === undefined || entry.expiresAt <= now || (entry.version !== this.version && !this.stillHolds(entry))) {
      if (entry !== undefined) this.entries.delete(key);
      this.stats.misses += 1;
      return null;
    }
    this.stats.hits += 1;
    // with its age, so a shared cache downstream does not keep it past its maxAge
    const headers = entry.headers.slice();
    headers.push('age', String(Math.floor((now - entry.storedAt) / 1000)), 'x-request-id', requestId);
    res.writeHead(200, headers);
    res.end(entry.body);
    if (entry.impressions.length > 0) countImpressions?.(entry.impressions);
    return entry.operation;
  }

  /** Offers Apollo's answer: kept only as a 200 without errors marked `max-age=N, public`, N > 0. */
  offer(key: string, status: number, headers: Record<string, string>, body: string | Buffer, operation = 'anonymous', sources: AnswerSources | null = null, impressions: readonly number[] = []): void {
    if (status !== 200) return;
    const match = PUBLIC_MAX_AGE.exec(headers['cache-control'] ?? '');
    if (!match) return;
    const maxAge = Math.min(Number(match[1]), this.maxTtlSeconds);
    // Apollo never marks an answer with errors public; this guards a future change
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
    // followed data: an answer with unknown sources could never be checked, nor trusted
    if (this.following && sources === null) return;
    const version = sources?.version ?? this.version;
    this.entries.set(key, { operation, body: bytes, headers: kept, storedAt: now, expiresAt: now + maxAge * 1000, version, sources, impressions });
    this.stats.stored += 1;
  }

  get size(): number {
    return this.entries.size;
  }

  clear(): void {
    this.entries.clear();
    this.bodies.clear();
  }

  /** Follows the data: dataChanged after every change, `now` reads it (null: every answer drops at the first change). */
  followData(now: RecsNow | null): void {
    this.following = true;
    this.dataNow = now;
  }

  /** Drops nothing at once: an older answer is checked on its next hit, so a batch drops only the
   * answers it changed, and a stale one is never served. */
  dataChanged(): void {
    this.version++;
  }

  sourcesOfNewAnswer(key: string): AnswerSources | null {
    // variant B orders a list by its scores and evidence: a change to them may reorder it
    return this.following ? new AnswerSources(this.version, ENTRY_DETAIL.test(key) || key.includes(VARIANT_MARK)) : null;
  }

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

/** A key for one variant's answers: a list ranked for B is never served to A's shopper, nor the reverse. A's keys are as without an experiment. */
export const variantKey = (key: string | null, variant: string): string | null => (key === null || variant === 'A' ? key : `${key}${VARIANT_MARK}${variant}`);

const bodyKey = (accept: string | undefined, text: string): string => `${accept ?? ''}\n${text}`;
