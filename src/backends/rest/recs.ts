import {
  badUserInput, notFound, rateLimited, upstreamRejected, upstreamUnavailable,
} from '../../errors.js';
import type { GatewayError } from '../../errors.js';
import { ITEM_ID_RANGE, ItemRecordError, parseItemRecord } from '../../model/itemRecord.js';
import { filterParameters, passesFilter } from '../../model/recommendationFilter.js';
import { shopperParameters } from '../../model/shopper.js';
import {
  RECS_SERVICE, type CallOptions, type ForYouEntryModel, type ForYouListModel, type ItemModel, type RecommendationSource, type ShopperModel, type ItemRankingModel, type RecommendationFilterModel, type RecommendationKind, type RecommendationListModel,
  type RecsService,
} from '../../ports/backend.js';
import { checkListFirst } from '../../model/itemLists.js';
import { errorEntries, numericCode, parseJson } from './errorBody.js';
import type { UpstreamErrorEntry } from './errorBody.js';
import { parseRetryAfter } from './upstream.js';
import type { Upstream, UpstreamResponse } from './upstream.js';

const SERVICE = RECS_SERVICE;
/** The upstream takes at most this many ids per product lookup. */
export const ITEMS_PER_CALL = 20;
const MAX_RECOMMENDATIONS = 10;

const PATHS: Record<RecommendationKind, string> = {
  POST_BROWSE: '/v1/postbrowse',
  NEXT_BEST_PRODUCT: '/v1/nbp',
};

/** What a response turned out to be, once its quirks are out of the way. */
type Outcome =
  | { kind: 'data'; body: unknown }
  | { kind: 'empty' } // 4022: nothing to recommend
  | { kind: 'unknownItem' }; // 4002, or 404 on a lookup

/** Ids are typed as numbers but arrive from JavaScript callers: check before any byte is sent. */
function checkItemId(value: unknown, field = 'itemId'): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
    throw badUserInput(`${field} must be ${ITEM_ID_RANGE}`, field);
  }
  return value;
}

function isUnknownItem(entries: UpstreamErrorEntry[]): boolean {
  return entries.some((e) => numericCode(e) === 4002 || /invalid item ?id/i.test(e.message));
}

function isKeyRefused(entries: UpstreamErrorEntry[]): boolean {
  return entries.some((e) => numericCode(e) === 403 || /account inactive|api ?key|developer inactive/i.test(e.message));
}

function parseRecords(raw: unknown[]): ItemModel[] {
  const items: ItemModel[] = [];
  for (const record of raw) {
    try {
      items.push(parseItemRecord(record));
    } catch (error) {
      // One broken record must not cost the caller the other nine.
      if (!(error instanceof ItemRecordError)) throw error;
    }
  }
  return items;
}

const SOURCES: readonly RecommendationSource[] = ['CO_VIEW', 'CO_PURCHASE', 'CATEGORY', 'DEPARTMENT', 'POPULAR', 'UPSTREAM'];

/** One entry of an upstream's /v1/foryou; null for one that is not (left out, as a broken record is). */
function forYouEntry(raw: unknown): ForYouEntryModel | null {
  if (typeof raw !== 'object' || raw === null) return null;
  const { itemId, score, source, because } = raw as Record<string, unknown>;
  const isId = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v > 0;
  if (!isId(itemId)) return null;
  return {
    rank: 0, itemId, evidence: 0,
    score: typeof score === 'number' && Number.isFinite(score) ? score : null,
    source: SOURCES.find((s) => s === source) ?? 'UPSTREAM',
    because: isId(because) ? because : null,
  };
}

/** The recommendations interface over HTTP (Walmart Open API), with its quirks absorbed. */
export class RestRecsService implements RecsService {
  /** `apiKey=...`, encoded once rather than on every call. */
  private readonly keyParameter: string;

  constructor(
    private readonly upstream: Upstream,
    apiKey: string,
  ) {
    this.keyParameter = new URLSearchParams({ apiKey }).toString();
  }

  /** A filter goes to the upstream as the REST twins' parameters (a recs-gateway honours them) and is
   * applied again to the list that arrives: an upstream without filters sends an unfiltered list. */
  async recommend(kind: RecommendationKind, anchorId: number, options: CallOptions = {}, filter: RecommendationFilterModel | null = null): Promise<RecommendationListModel> {
    const id = checkItemId(anchorId);
    const path = PATHS[kind];
    if (path === undefined) throw badUserInput(`unknown recommendation kind ${String(kind)}`, 'kind');
    const filtered = filter === null ? '' : `&${new URLSearchParams(filterParameters(filter)).toString()}`;
    const outcome = this.interpret(await this.get(`${path}?${this.keyParameter}&itemId=${id}${filtered}`, options));
    const list: RecommendationListModel = { anchorId: id, kind, entries: [], items: [], ...(filter === null ? {} : { filter }) };
    if (outcome.kind === 'empty') return list;
    if (outcome.kind === 'unknownItem') throw notFound(`No item with itemId ${id}`);
    const body = outcome.body;
    // postbrowse was seen answering a single record instead of an array of one
    const raw = Array.isArray(body) ? body : typeof body === 'object' && body !== null ? [body] : null;
    if (raw === null) throw upstreamUnavailable(SERVICE, 'unexpected response shape');
    const seen = new Set<number>([id]);
    const items = parseRecords(raw)
      .filter((item) => !seen.has(item.itemId) && seen.add(item.itemId) && (filter === null || passesFilter(filter, item.itemId, item)))
      .slice(0, MAX_RECOMMENDATIONS);
    list.items = items;
    list.entries = items.map((item, index) => ({
      rank: index + 1, itemId: item.itemId, score: null, evidence: 0, source: 'UPSTREAM',
    }));
    return list;
  }

  async trending(categoryPath: string | null, first: number, options: CallOptions = {}): Promise<ItemRankingModel> {
    return this.ranking('/v1/trending', { category: categoryPath, first: String(checkListFirst(first)) }, options);
  }

  async popular(kind: RecommendationKind, categoryPath: string | null, first: number, options: CallOptions = {}): Promise<ItemRankingModel> {
    return this.ranking('/v1/popular', { category: categoryPath, kind, first: String(checkListFirst(first)) }, options);
  }

  /** The upstream's /v1/foryou, the shopper and the filter as its parameters; its entries are checked and applied the
   * filter again, as an anchored list's are. A 404 says the upstream lacks the route. */
  async forYou(shopper: ShopperModel, first: number, options: CallOptions = {}, filter: RecommendationFilterModel | null = null): Promise<ForYouListModel> {
    const query = new URLSearchParams([...shopperParameters(shopper), ['count', String(checkListFirst(first))], ...(filter === null ? [] : filterParameters(filter))]);
    const response = await this.get(`/v1/foryou?${this.keyParameter}&${query.toString()}`, options);
    if (response.status === 404) throw upstreamRejected(SERVICE, 'the upstream lacks /v1/foryou (an upstream older than lists for one shopper)');
    const outcome = this.interpret(response);
    if (outcome.kind === 'empty') return { entries: [], items: [] };
    const body = outcome.kind === 'data' ? outcome.body as { entries?: unknown; items?: unknown } : null;
    if (body === null || typeof body !== 'object' || !Array.isArray(body.entries) || !Array.isArray(body.items)) throw upstreamUnavailable(SERVICE, 'unexpected response shape');
    const byId = new Map(parseRecords(body.items).map((item) => [item.itemId, item]));
    const entries: ForYouEntryModel[] = [];
    const items: ItemModel[] = [];
    for (const raw of body.entries as unknown[]) {
      const entry = forYouEntry(raw);
      const item = entry === null ? undefined : byId.get(entry.itemId);
      if (entry === null || item === undefined || items.includes(item) || (filter !== null && !passesFilter(filter, item.itemId, item))) continue;
      entries.push({ ...entry, rank: entries.length + 1 });
      items.push(item);
    }
    return { entries, items };
  }

  /** A list the upstream's REST twin answers as an array of item records; a 404 says the upstream lacks the route. */
  private async ranking(path: string, parameters: Record<string, string | null>, options: CallOptions): Promise<ItemRankingModel> {
    const query = new URLSearchParams();
    for (const [name, value] of Object.entries(parameters)) if (value !== null) query.set(name, value);
    const response = await this.get(`${path}?${this.keyParameter}&${query.toString()}`, options);
    if (response.status === 404) throw upstreamRejected(SERVICE, `the upstream lacks ${path} (an upstream older than trending and popular lists)`);
    const outcome = this.interpret(response);
    if (outcome.kind !== 'data' || !Array.isArray(outcome.body)) {
      if (outcome.kind === 'empty') return { entries: [], items: [] };
      throw upstreamUnavailable(SERVICE, 'unexpected response shape');
    }
    const items = parseRecords(outcome.body);
    return { entries: items.map((item) => ({ itemId: item.itemId, score: null })), items };
  }

  async getItems(ids: readonly number[], options: CallOptions = {}): Promise<(ItemModel | null)[]> {
    const valid = [...new Set(ids.filter((id) => typeof id === 'number' && Number.isSafeInteger(id) && id > 0))];
    const chunks: number[][] = [];
    for (let i = 0; i < valid.length; i += ITEMS_PER_CALL) chunks.push(valid.slice(i, i + ITEMS_PER_CALL));
    const found = new Map<number, ItemModel>();
    const results = await Promise.all(chunks.map((chunk) => this.lookup(chunk, options)));
    for (const items of results) for (const item of items) found.set(item.itemId, item);
    return ids.map((id) => found.get(id) ?? null);
  }

  /** One product lookup of at most 20 ids; items the upstream does not know are simply absent. */
  private async lookup(ids: number[], options: CallOptions): Promise<ItemModel[]> {
    // ids are validated digits; the comma stays literal, as the upstream's own examples write it
    const path = ids.length === 1 ? `/v1/items/${ids[0]}?${this.keyParameter}` : `/v1/items?ids=${ids.join(',')}&${this.keyParameter}`;
    const outcome = this.interpret(await this.get(path, options), true);
    if (outcome.kind === 'unknownItem') {
      // One unknown id can fail a whole batch: ask for each id alone to save the others.
      if (ids.length === 1) return [];
      return (await Promise.all(ids.map((id) => this.lookup([id], options)))).flat();
    }
    if (outcome.kind === 'empty') return [];
    const body = outcome.body;
    let raw: unknown[];
    if (Array.isArray(body)) raw = body;
    else if (typeof body === 'object' && body !== null && Array.isArray((body as { items?: unknown }).items)) {
      raw = (body as { items: unknown[] }).items;
    } else if (typeof body === 'object' && body !== null) raw = [body];
    else throw upstreamUnavailable(SERVICE, 'unexpected response shape');
    const wanted = new Set(ids);
    return parseRecords(raw).filter((item) => wanted.has(item.itemId));
  }

  private get(path: string, options: CallOptions): Promise<UpstreamResponse> {
    return this.upstream.request({ method: 'GET', path, signal: options.signal });
  }

  /** The one place a recommendations status or error body becomes an outcome or an error. */
  private interpret(response: UpstreamResponse, lookup = false): Outcome {
    const { status, text } = response;
    const body = parseJson(text);
    const entries = errorEntries(body, text);
    if (status === 200) {
      if (body === undefined) throw upstreamUnavailable(SERVICE, 'unreadable response (not JSON)');
      if (entries === null) return { kind: 'data', body };
      // a 200 whose body is an error object
      if (entries.some((e) => numericCode(e) === 4022)) return { kind: 'empty' };
      if (entries.length === 0 && !Array.isArray(body)) return { kind: 'data', body };
      return this.failure(response, entries);
    }
    if (status === 404 && lookup) return { kind: 'unknownItem' };
    return this.failure(response, entries ?? []);
  }

  private failure(response: UpstreamResponse, entries: UpstreamErrorEntry[]): Outcome {
    const { status } = response;
    if (isUnknownItem(entries) && (status === 200 || status === 400 || status === 404)) return { kind: 'unknownItem' };
    if (entries.some((e) => numericCode(e) === 4022)) return { kind: 'empty' };
    throw this.error(response, entries);
  }

  private error({ status, headers }: UpstreamResponse, entries: UpstreamErrorEntry[]): GatewayError {
    const detail = entries[0]?.message ?? `HTTP ${status}`;
    if (status === 401 || status === 403 || isKeyRefused(entries)) {
      return upstreamRejected(SERVICE, 'the gateway key (RECS_API_KEY) was refused');
    }
    if (status === 429) return rateLimited((parseRetryAfter(headers['retry-after']) ?? 1000) / 1000);
    if (status >= 500) return upstreamUnavailable(SERVICE, `HTTP ${status}${entries[0] ? `: ${detail}` : ''}`);
    return upstreamRejected(SERVICE, `HTTP ${status}: ${detail}`);
  }
}
