import { LRUCache } from 'lru-cache';
import {
  badUserInput, forbidden, rateLimited, unauthenticated, upstreamRejected, upstreamUnavailable, type GatewayError,
} from '../../errors.js';
import { checkCallSize, ingestForbidden } from '../../model/ingest.js';
import { toItemRecord } from '../../model/itemRecord.js';
import type {
  CallOptions, EventInputModel, IngestService, ItemModel, PrincipalModel, RecordEventsResultModel, UpsertItemsResultModel,
} from '../../ports/backend.js';
import type { RecommendationStatsModel } from '../../ports/attribution.js';
import { errorEntries, forClient, parseJson } from './errorBody.js';
import { DEFAULT_AUTH_CACHE_MAX_ENTRIES, DEFAULT_AUTH_CACHE_TTL_MS } from './options.js';
import { parseRetryAfter, type Upstream, type UpstreamResponse } from './upstream.js';

const SERVICE = 'recommendations';
/** What may be sent as X-Forwarded-For (as the key service's calls send it). */
const FORWARDED_FOR = /^[\x20-\x7e]{1,512}$/;
/** The field an upstream's message names first (`events[3].sessionId: ...`), as checkEvents words it. */
const FIELD_PREFIX = /^((?:events|items)(?:\[\d+\])?(?:\.[A-Za-z]+)?):/;

/** An upstream's count, if it is one: a whole number from 0 to `most` (GraphQL's Int holds no more than 2^31 - 1). */
function countOf(value: unknown, most = 2 ** 31 - 1): number | undefined {
  return Number.isInteger(value) && (value as number) >= 0 && (value as number) <= most ? value as number : undefined;
}

const TRACKED = new Set(['POST_BROWSE', 'NEXT_BEST_PRODUCT', 'FOR_YOU']);
const isRate = (value: unknown): boolean =>
  value === null || (typeof value === 'object' && ['value', 'low', 'high'].every((f) => typeof (value as Record<string, unknown>)[f] === 'number'));

/** A row of GET /v1/stats as recommendationStats answers it; anything else is no answer. */
function isStatsRow(value: unknown): value is RecommendationStatsModel {
  if (typeof value !== 'object' || value === null) return false;
  const row = value as Record<string, unknown>;
  return TRACKED.has(row.kind as string) && (row.variant === 'A' || row.variant === 'B') &&
    ['impressions', 'clicks', 'purchases'].every((f) => countOf(row[f]) !== undefined) && isRate(row.clickThroughRate) && isRate(row.conversionRate);
}

/** What an upstream twin's answer says of whether the caller may send: refused (403), or past that
 * check, which a twin makes before it reads the body (taken, 200; read and found wrong, 400). */
const mayIngestBy = (status: number): boolean | undefined => (status === 403 ? false : status === 200 || status === 400 ? true : undefined);

/** Events and records forwarded to the upstream's twins with the caller's Authorization, so that
 * the upstream decides; never retried, as a batch that timed out may have been kept. */
export class RestIngestService implements IngestService {
  /** By credentialId: whether the upstream lets the credential send; null when nothing is remembered. */
  private readonly mayIngest: LRUCache<string, boolean> | null;

  constructor(
    private readonly upstream: Upstream,
    /** How long an answer is remembered (AUTH_CACHE_TTL_MS); 0: never. */
    ttlMs = DEFAULT_AUTH_CACHE_TTL_MS,
    maxEntries = DEFAULT_AUTH_CACHE_MAX_ENTRIES,
  ) {
    this.mayIngest = ttlMs > 0 && maxEntries > 0 ? new LRUCache({ max: maxEntries, ttl: ttlMs }) : null;
  }

  knownMayIngest(principal: PrincipalModel): boolean | undefined {
    return this.mayIngest?.get(principal.credentialId);
  }

  /** An empty PUT /v1/items: it tells who may send, and stores nothing. */
  async askMayIngest(principal: PrincipalModel, options: CallOptions = {}): Promise<boolean> {
    const response = await this.send('PUT', '/v1/items', principal, [], options);
    const may = this.learn(principal, response.status);
    if (may === undefined) throw this.error(response, 'either', principal);
    return may;
  }

  private learn(principal: PrincipalModel, status: number): boolean | undefined {
    const may = mayIngestBy(status);
    if (may !== undefined) this.mayIngest?.set(principal.credentialId, may);
    return may;
  }

  /** A caller the upstream refused lately is refused here, its call not sent. */
  private refuseKnown(principal: PrincipalModel): void {
    if (this.knownMayIngest(principal) === false) throw ingestForbidden();
  }

  async recordEvents(principal: PrincipalModel, events: readonly EventInputModel[], options: CallOptions = {}): Promise<RecordEventsResultModel> {
    checkCallSize('events', events.length);
    this.refuseKnown(principal);
    const body = events.map((e) => {
      const event: Record<string, unknown> = { kind: e.kind === 'PURCHASE' ? 'purchase' : 'view', itemId: e.itemId };
      if (e.sessionId !== null) event.sessionId = e.sessionId;
      if (e.userId !== null) event.userId = e.userId;
      if (e.orderId !== null) event.orderId = e.orderId;
      if (e.eventId != null) event.eventId = e.eventId;
      if (e.trackingId != null) event.trackingId = e.trackingId;
      event.time = e.time;
      return event;
    });
    const response = await this.send('POST', '/v1/events', principal, body, options);
    this.learn(principal, response.status);
    const answer = parseJson(response.text) as { accepted?: unknown; duplicates?: unknown; itemsWithoutRecord?: unknown } | undefined;
    if (response.status !== 200) throw this.error(response, 'events', principal);
    // no more taken than sent, and no count GraphQL's Int cannot serialize (that was an INTERNAL_SERVER_ERROR)
    const accepted = countOf(answer?.accepted, events.length);
    if (accepted === undefined) throw upstreamUnavailable(SERVICE, 'unexpected answer to POST /v1/events');
    return { accepted, duplicates: countOf(answer?.duplicates, accepted) ?? null, itemsWithoutRecord: countOf(answer?.itemsWithoutRecord) ?? null };
  }

  async upsertItems(principal: PrincipalModel, items: readonly ItemModel[], options: CallOptions = {}): Promise<UpsertItemsResultModel> {
    checkCallSize('items', items.length);
    this.refuseKnown(principal);
    const response = await this.send('PUT', '/v1/items', principal, items.map(toItemRecord), options);
    this.learn(principal, response.status);
    if (response.status !== 200) throw this.error(response, 'items', principal);
    const answer = parseJson(response.text) as { upserted?: unknown } | undefined;
    const upserted = countOf(answer?.upserted, items.length);
    if (upserted === undefined) throw upstreamUnavailable(SERVICE, 'unexpected answer to PUT /v1/items');
    return { upserted };
  }

  /** GET /v1/stats of an upstream recs-gateway, with the caller's credentials: the upstream decides who may read. */
  async recommendationStats(principal: PrincipalModel, since: number, until: number | null, options: CallOptions = {}): Promise<RecommendationStatsModel[]> {
    const query = new URLSearchParams({ since: new Date(since).toISOString() });
    if (until !== null) query.set('until', new Date(until).toISOString());
    const headers: Record<string, string> = { authorization: principal.authorization };
    const response = await this.upstream.request({ method: 'GET', path: `/v1/stats?${query.toString()}`, headers, signal: options.signal });
    if (response.status === 404 || response.status === 405) {
      throw upstreamRejected(SERVICE, 'the upstream has no recommendation statistics (GET /v1/stats is not one of its routes)');
    }
    if (response.status !== 200) throw this.error(response, 'stats', principal);
    const rows = parseJson(response.text);
    if (!Array.isArray(rows) || !rows.every(isStatsRow)) throw upstreamUnavailable(SERVICE, 'unexpected answer to GET /v1/stats');
    return rows;
  }

  private send(method: 'POST' | 'PUT', path: string, principal: PrincipalModel, body: unknown, options: CallOptions): Promise<UpstreamResponse> {
    const headers: Record<string, string> = { authorization: principal.authorization, 'content-type': 'application/json' };
    if (options.clientAddress !== undefined && FORWARDED_FOR.test(options.clientAddress)) headers['x-forwarded-for'] = options.clientAddress;
    return this.upstream.request({ method, path, headers, body: JSON.stringify(body), signal: options.signal });
  }

  /** The one place an upstream twin's status becomes an error. */
  private error({ status, text, headers }: UpstreamResponse, what: 'events' | 'items' | 'either' | 'stats', principal: PrincipalModel): GatewayError {
    const given = (errorEntries(parseJson(text), text) ?? [])[0]?.message;
    const said = given === undefined ? undefined : forClient(given, principal.authorization);
    if (status === 400 || status === 413) {
      const message = said ?? `The upstream refused the ${what === 'events' ? 'events' : what === 'stats' ? 'period' : 'item records'}`;
      return badUserInput(message, FIELD_PREFIX.exec(message)?.[1] ?? (what === 'stats' ? 'since' : what));
    }
    if (status === 401) return unauthenticated();
    if (status === 403) return forbidden(said ?? 'Only administrators may send events and item records');
    if (status === 404 || status === 405) {
      return upstreamRejected(SERVICE, what === 'events'
        ? 'the upstream takes no events (POST /v1/events is not one of its routes)'
        : `the upstream takes no ${what === 'items' ? 'item records' : 'events or item records'} (PUT /v1/items is not one of its routes)`);
    }
    if (status === 429) return rateLimited((parseRetryAfter(headers['retry-after']) ?? 1000) / 1000);
    if (status >= 500) return upstreamUnavailable(SERVICE, `HTTP ${status}`);
    return upstreamRejected(SERVICE, `unexpected HTTP ${status}`);
  }
}
