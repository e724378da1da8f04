import { ErrorCode, isGatewayError, upstreamRejected } from '../errors.js';
import { toShopper } from '../model/shopper.js';
import { ITEM_ID_RANGE, toItemId, toItemRecord } from '../model/itemRecord.js';
import { checkListFirst, listsLacking, parseCategoryPath } from '../model/itemLists.js';
import { MAX_BRAND_NAMES, MAX_EXCLUDED_ITEMS, toRecommendationFilter } from '../model/recommendationFilter.js';
import { RECS_SERVICE } from '../ports/backend.js';
import type { CallOptions, ItemModel, ItemRankingModel, KeyService, RecommendationFilterModel, RecommendationKind, RecsService } from '../ports/backend.js';
import { json } from './types.js';
import type { RestRequest, RestResponse } from './types.js';
import type { Logger } from '../logger.js';
import { CallerGone } from '../shared/callSignal.js';

/** Error codes in the bodies served. 4002, 4022 and 403 are the upstream's own; 4000 is ours for
 * a request that is malformed before any item is looked up (missing or non-numeric itemId, too
 * many ids), which the upstream's documentation leaves unnamed. */
export const RecsErrorCode = {
  BAD_REQUEST: 4000,
  INVALID_ITEM: 4002,
  NO_RECOMMENDATIONS: 4022,
  ACCOUNT_INACTIVE: 403,
} as const;

const KINDS: Record<string, RecommendationKind> = {
  '/v1/postbrowse': 'POST_BROWSE',
  '/v1/nbp': 'NEXT_BEST_PRODUCT',
};
const MAX_RECOMMENDATIONS = 10;
/** The product lookup takes at most this many ids, as upstream. */
export const MAX_LOOKUP_IDS = 20;

const errorBody = (code: number, message: string): { errors: { code: number; message: string }[] } => ({
  errors: [{ code, message }],
});

class Reply extends Error {
  constructor(readonly response: RestResponse) {
    super('reply');
  }
}

const badRequest = (message: string): Reply => new Reply(json(400, errorBody(RecsErrorCode.BAD_REQUEST, message)));
const invalidItem = (): RestResponse => json(400, errorBody(RecsErrorCode.INVALID_ITEM, 'Invalid itemId'));

/** The one place an error becomes a recommendations response. */
export function recsErrorResponse(error: unknown, log?: Logger): RestResponse {
  if (error instanceof Reply) return error.response;
  // nobody is there to read it: no failure of ours to log
  if (error instanceof CallerGone) return json(503, errorBody(503, error.message));
  if (!isGatewayError(error)) {
    log?.error({ err: error }, 'recommendations request failed');
    return json(500, errorBody(500, 'Internal server error'));
  }
  switch (error.code) {
    case ErrorCode.UNAUTHENTICATED:
    case ErrorCode.FORBIDDEN:
      // a key without the scope is told which, as the other interfaces tell it
      return error.scope !== undefined
        ? json(403, { errors: [{ code: RecsErrorCode.ACCOUNT_INACTIVE, message: error.message, scope: error.scope }] })
        : json(403, errorBody(RecsErrorCode.ACCOUNT_INACTIVE, 'Account Inactive'));
    case ErrorCode.NOT_FOUND:
      return invalidItem();
    case ErrorCode.BAD_USER_INPUT:
    case ErrorCode.BAD_REQUEST:
      return json(400, errorBody(RecsErrorCode.BAD_REQUEST, error.message));
    case ErrorCode.RATE_LIMITED:
      return json(429, errorBody(429, 'Too Many Requests'), { 'retry-after': String(Math.ceil(error.retryAfter ?? 1)) });
    case ErrorCode.QUOTA_EXCEEDED:
      return json(429, { errors: [{ code: 429, message: error.message, reason: error.code }] }, { 'retry-after': String(Math.ceil(error.retryAfter ?? 1)) });
    case ErrorCode.UPSTREAM_UNAVAILABLE:
      return json(503, errorBody(503, 'Service Unavailable'), error.retryAfter ? { 'retry-after': String(Math.ceil(error.retryAfter)) } : {});
    case ErrorCode.UPSTREAM_REJECTED:
      return json(502, errorBody(502, 'Bad Gateway'));
    default:
      return json(500, errorBody(500, 'Internal server error'));
  }
}

/** Exactly one value of a query parameter; a repeated one is ambiguous, so refused. */
function single(query: URLSearchParams, name: string): string | undefined {
  const values = query.getAll(name);
  if (values.length > 1) throw badRequest(`${name} must be given once`);
  return values[0];
}

/** The query string's `apiKey` when it is one value shaped like a key; null otherwise (absent,
 * repeated, empty, or credentials: Basic ... has no business in a query string). A request
 * without one is a request without credentials, limited by its address. */
export function queryApiKey(query: URLSearchParams): string | null {
  const apiKey = query.getAll('apiKey');
  const [value] = apiKey;
  return apiKey.length === 1 && value !== undefined && /^[A-Za-z0-9+/]+={0,2}$/.test(value) ? value : null;
}

async function checkKey(query: URLSearchParams, keys: KeyService, options: CallOptions): Promise<void> {
  const value = queryApiKey(query);
  // Any doubt about the key is an inactive account, as upstream: no hint what was wrong.
  if (value === null) throw new Reply(json(403, errorBody(RecsErrorCode.ACCOUNT_INACTIVE, 'Account Inactive')));
  await keys.authenticate(value, options);
}

/** The ids of a lookup's `ids` as openapi.ts documents them: spaces (U+0020) next to a comma only, each id then
 * toItemId's to check; trimming parts would accept a space, tab or newline around an id (`ids=%2012`). No regular
 * expression splits it: ` *, *` backtracks over a long run of spaces without a comma. */
function idsOf(raw: string): string[] {
  const parts = raw.split(',');
  const last = parts.length - 1;
  return parts.map((part, i) => {
    let start = 0;
    let end = part.length;
    if (i > 0) while (part.charCodeAt(start) === 0x20) start++;
    if (i < last) while (end > start && part.charCodeAt(end - 1) === 0x20) end--;
    return part.slice(start, end);
  });
}

/** A price parameter: digits with an optional fraction (no sign, exponent or Infinity); absent is null. */
function priceOf(query: URLSearchParams, name: string): number | null {
  const raw = single(query, name);
  if (raw === undefined) return null;
  if (!/^[0-9]{1,30}(\.[0-9]{1,30})?$/.test(raw)) throw badRequest(`${name} must be a number of at least 0, e.g. 19.99`);
  return Number(raw);
}

/** The filter of a postbrowse or nbp request (exclude, inStock, minPrice, maxPrice, category, brand);
 * exclude and brand may be repeated, the others given once. Checked as GraphQL's RecommendationFilter is. */
export function filterOfQuery(query: URLSearchParams): RecommendationFilterModel | null {
  const excludeItemIds: number[] = [];
  for (const raw of query.getAll('exclude')) {
    if (raw === '') continue;
    const parts = idsOf(raw);
    if (excludeItemIds.length + parts.length > MAX_EXCLUDED_ITEMS) throw badRequest(`at most ${MAX_EXCLUDED_ITEMS} ids in exclude`);
    for (const part of parts) {
      const id = toItemId(part);
      if (id === null) throw badRequest(`exclude must be comma-separated item ids, each ${ITEM_ID_RANGE}`);
      excludeItemIds.push(id);
    }
  }
  const inStock = single(query, 'inStock');
  if (inStock !== undefined && inStock !== 'true' && inStock !== 'false') throw badRequest('inStock must be true or false');
  // checked here to name the REST parameter; toRecommendationFilter takes the path as it is
  const category = parseCategoryPath(single(query, 'category'), 'category');
  const brandNames = query.getAll('brand');
  if (brandNames.length > MAX_BRAND_NAMES) throw badRequest(`at most ${MAX_BRAND_NAMES} brand parameters`);
  if (brandNames.some((brand) => brand.trim() === '')) throw badRequest('brand must not be empty');
  return toRecommendationFilter({
    excludeItemIds, inStockOnly: inStock === 'true', minPrice: priceOf(query, 'minPrice'), maxPrice: priceOf(query, 'maxPrice'),
    categoryPath: category, brandNames,
  });
}

/** Items in the order of ids, unknown ones left out; records the list carried are not asked for again. */
async function itemsFor(ids: number[], recs: RecsService, known: ItemModel[], options: CallOptions): Promise<ItemModel[]> {
  const byId = new Map(known.map((item) => [item.itemId, item]));
  const missing = ids.filter((id) => !byId.has(id));
  if (missing.length > 0) {
    const fetched = await recs.getItems(missing, options);
    fetched.forEach((item) => item && byId.set(item.itemId, item));
  }
  return ids.map((id) => byId.get(id)).filter((item): item is ItemModel => item !== undefined);
}

/** A list's size parameter, given once: 1 to MAX_LIST_ITEMS, DEFAULT_LIST_ITEMS without it. */
function listSize(query: URLSearchParams, name: 'first' | 'count'): number {
  const raw = single(query, name);
  return checkListFirst(raw === undefined ? undefined : /^[0-9]{1,6}$/.test(raw) ? Number(raw) : NaN, name);
}

/** The lists anchored on no item: GraphQL's trendingItems and popularItems. */
const RANKINGS = new Set(['/v1/trending', '/v1/popular']);
const RANKING_KINDS: readonly RecommendationKind[] = ['POST_BROWSE', 'NEXT_BEST_PRODUCT'];

/** /v1/trending and /v1/popular: item records, best first; `[]` where the list is empty. */
async function ranking(path: string, query: URLSearchParams, recs: RecsService, options: CallOptions): Promise<RestResponse> {
  const category = parseCategoryPath(single(query, 'category'), 'category');
  if (query.has('count')) throw badRequest('count is not a parameter here: the list\'s size is first');
  const first = listSize(query, 'first');
  let list: ItemRankingModel;
  if (path === '/v1/trending') {
    if (recs.trending === undefined) throw listsLacking('trending');
    list = await recs.trending(category, first, options);
  } else {
    const rawKind = single(query, 'kind') ?? 'NEXT_BEST_PRODUCT';
    const kind = RANKING_KINDS.find((k) => k === rawKind);
    if (kind === undefined) throw badRequest(`kind must be ${RANKING_KINDS.join(' or ')}`);
    if (recs.popular === undefined) throw listsLacking('popular');
    list = await recs.popular(kind, category, first, options);
  }
  const items = await itemsFor(list.entries.map((e) => e.itemId), recs, list.items ?? [], options);
  return json(200, items.map(toItemRecord));
}

/** /v1/foryou: `{ entries: [{ rank, itemId, score, source, because }], items: [records] }`, an object so that fields
 * naming the list can join it; empty arrays where nothing passes the filter. */
async function forYouList(query: URLSearchParams, recs: RecsService, options: CallOptions): Promise<RestResponse> {
  const shopper = toShopper(single(query, 'sessionId'), single(query, 'userId'));
  // first, as on /v1/trending and /v1/popular; count is the older spelling, which a REST-mode front sends its upstream
  if (query.has('count') && query.has('first')) throw badRequest('Give first or count (its older spelling), not both');
  const count = listSize(query, query.has('count') ? 'count' : 'first');
  const filter = filterOfQuery(query);
  if (recs.forYou === undefined) throw upstreamRejected(RECS_SERVICE, 'the recommendations backend lacks lists for one shopper');
  const list = await recs.forYou(shopper, count, options, filter);
  const items = await itemsFor(list.entries.map((e) => e.itemId), recs, list.items ?? [], options);
  const known = new Set(items.map((item) => item.itemId));
  const entries = list.entries.filter((e) => known.has(e.itemId)).map((e, i) => ({ rank: i + 1, itemId: e.itemId, score: e.score, source: e.source, because: e.because }));
  return json(200, { entries, items: items.map(toItemRecord) });
}

/** The recommendations interface of recommendations.md (postbrowse, nbp, trending, popular, and the
 * product lookup of upstream-facts.md); null when the path is not one of its routes. */
export function serveRecommendations(req: RestRequest, keys: KeyService, recs: RecsService): Promise<RestResponse> | null {
  const path = req.path.length > 1 ? req.path.replace(/\/+$/, '') : req.path;
  const kind = KINDS[path];
  const isLookup = path === '/v1/items' || path.startsWith('/v1/items/');
  if (kind === undefined && !isLookup && !RANKINGS.has(path) && path !== '/v1/foryou') return null;
  return handle(req, path, kind, keys, recs);
}

async function handle(
  req: RestRequest, path: string, kind: RecommendationKind | undefined, keys: KeyService, recs: RecsService,
): Promise<RestResponse> {
  if (req.method !== 'GET') {
    // PUT /v1/items is the live recommender's (src/rest/ingest.ts)
    return json(405, errorBody(405, `Method ${req.method} not allowed`), { allow: path === '/v1/items' ? 'GET, PUT' : 'GET' });
  }
  const options: CallOptions = req.signal ? { signal: req.signal } : {};
  try {
    await checkKey(req.query, keys, options);
    if (RANKINGS.has(path)) return await ranking(path, req.query, recs, options);
    if (path === '/v1/foryou') return await forYouList(req.query, recs, options);
    if (kind !== undefined) {
      const raw = single(req.query, 'itemId');
      const anchor = toItemId(raw);
      if (anchor === null) throw badRequest(raw === undefined ? 'itemId is required' : `itemId must be ${ITEM_ID_RANGE}`);
      const list = await recs.recommend(kind, anchor, options, filterOfQuery(req.query));
      const entries = [...list.entries].sort((a, b) => a.rank - b.rank).slice(0, MAX_RECOMMENDATIONS);
      const items = await itemsFor(entries.map((e) => e.itemId), recs, list.items ?? [], options);
      if (items.length === 0) {
        // upstream's way of saying "nothing": a 200 with an error body
        return json(200, errorBody(RecsErrorCode.NO_RECOMMENDATIONS, `No recommendations found for item ${anchor}`));
      }
      return json(200, items.map(toItemRecord));
    }
    if (path === '/v1/items') {
      const raw = single(req.query, 'ids');
      if (raw === undefined || raw === '') throw badRequest('ids is required');
      const parts = idsOf(raw);
      if (parts.length > MAX_LOOKUP_IDS) throw badRequest(`at most ${MAX_LOOKUP_IDS} ids a call`);
      const ids = parts.map(toItemId);
      if (ids.some((id) => id === null)) throw badRequest(`ids must be comma-separated item ids, each ${ITEM_ID_RANGE}`);
      const unique = [...new Set(ids as number[])];
      return json(200, { items: (await itemsFor(unique, recs, [], options)).map(toItemRecord) });
    }
    let segment: string;
    try {
      segment = decodeURIComponent(path.slice('/v1/items/'.length));
    } catch {
      return invalidItem();
    }
    const id = toItemId(segment);
    if (id === null) return invalidItem();
    const [item] = await recs.getItems([id], options);
    return item ? json(200, toItemRecord(item)) : invalidItem();
  } catch (error) {
    return recsErrorResponse(error, req.log);
  }
}
