import { badUserInput } from '../errors.js';
import { parseIsoTime } from '../model/ingest.js';
import { IMPRESSIONS_PATH, MAX_IMPRESSION_ROWS, MAX_IMPRESSIONS_PER_ROW, TRACKED_KINDS } from '../model/trackingId.js';
import type { ListCountsModel, RecommendationStatsModel, TrackedKind } from '../ports/attribution.js';
import type { CallOptions, KeyService, PrincipalModel } from '../ports/backend.js';
import { asCaller, errorBody } from './ingest.js';
import { json } from './types.js';
import type { RestRequest, RestResponse } from './types.js';
import { unknownField } from './unknownField.js';

/** What answers recommendationStats for a caller (src/observability/attribution.ts readStats). */
export type StatsReader = (principal: PrincipalModel, since: number, until: number | null, options: CallOptions) => Promise<RecommendationStatsModel[]>;
/** What takes a front's impressions for a caller, reading them once the caller may send them; how many rows
 * (src/observability/attribution.ts takeImpressions). */
export type ImpressionsTaker = (principal: PrincipalModel, rows: () => readonly ListCountsModel[]) => number;

const STATS = '/v1/stats';
const HOUR_MS = 3_600_000;
/** How far back an hour may be: a front cut off from its upstream keeps its counts until it is back. */
const OLDEST_HOURS = 24 * 366;
const ROW_FIELDS = ['kind', 'variant', 'hour', 'impressions'] as const;
const ROW_FIELD_SET: ReadonlySet<string> = new Set(ROW_FIELDS);

const refuseMethod = (req: RestRequest, allow: string): RestResponse => json(405, errorBody(405, `Method ${req.method} not allowed`), { allow });

/** A time parameter: ISO 8601 with an offset, or whole milliseconds since 1970. */
function timeOf(query: URLSearchParams, name: 'since' | 'until'): number | null {
  const values = query.getAll(name);
  if (values.length > 1) throw badUserInput(`${name} must be given once`, name);
  const raw = values[0] ?? null;
  if (raw === null || raw === '') {
    if (name === 'since') throw badUserInput('since is required: an ISO 8601 date with an offset (2026-11-29T00:00:00Z) or milliseconds since 1970', 'since');
    return null;
  }
  const ms = /^\d{1,16}$/.test(raw) ? Number(raw) : parseIsoTime(raw);
  if (ms === null) throw badUserInput(`${name} must be an ISO 8601 date with an offset (2026-11-29T00:00:00Z) or whole milliseconds since 1970`, name);
  return ms;
}

const refuse = (i: number, field: string, message: string): never => {
  throw badUserInput(`impressions[${i}].${field}: ${message}`, `impressions[${i}].${field}`);
};

/** The rows of a POST /v1/stats/impressions body: a JSON array of `{"kind","variant","hour","impressions"}`
 * (hour: ms since 1970 / 3,600,000, from a year back to the next hour; impressions a whole number from 1). */
export function parseImpressions(body: unknown, now: number = Date.now()): ListCountsModel[] {
  if (!Array.isArray(body)) throw badUserInput('The request body must be a JSON array of {kind, variant, hour, impressions}', 'impressions');
  if (body.length > MAX_IMPRESSION_ROWS) throw badUserInput(`At most ${MAX_IMPRESSION_ROWS} rows a call, got ${body.length}`, 'impressions');
  const current = Math.floor(now / HOUR_MS);
  return body.map((raw: unknown, i): ListCountsModel => {
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw badUserInput(`impressions[${i}]: must be a JSON object`, `impressions[${i}]`);
    const row = raw as Record<string, unknown>;
    for (const name in row) {
      if (ROW_FIELD_SET.has(name)) continue;
      const unknown = unknownField(name, ROW_FIELDS, `a row has only ${ROW_FIELDS.join(', ')}`);
      refuse(i, unknown.field, unknown.message);
    }
    if (!TRACKED_KINDS.includes(row.kind as TrackedKind)) refuse(i, 'kind', `must be one of ${TRACKED_KINDS.join(', ')}`);
    if (row.variant !== 'A' && row.variant !== 'B') refuse(i, 'variant', 'must be "A" or "B"');
    const { hour, impressions } = row;
    if (!Number.isInteger(hour) || (hour as number) < current - OLDEST_HOURS || (hour as number) > current + 1) {
      refuse(i, 'hour', `must be a whole number of hours since 1970 (Date.now() / 3600000), from ${current - OLDEST_HOURS} to ${current + 1}`);
    }
    if (!Number.isInteger(impressions) || (impressions as number) < 1 || (impressions as number) > MAX_IMPRESSIONS_PER_ROW) {
      refuse(i, 'impressions', `must be a whole number from 1 to ${MAX_IMPRESSIONS_PER_ROW}`);
    }
    return { kind: row.kind as TrackedKind, variant: row.variant as 'A' | 'B', hour: hour as number, impressions: impressions as number, clicks: 0, purchases: 0 };
  });
}

/** GET /v1/stats?since=&until=: recommendationStats' REST twin, and POST /v1/stats/impressions, where a
 * REST-mode front sends the impressions it counted; authenticated by the Authorization header and answered
 * in the ingestion twins' error body; null for another path. */
export function serveStats(req: RestRequest, keys: KeyService, read: StatsReader, take: ImpressionsTaker): Promise<RestResponse> | null {
  const path = req.path.length > 1 ? req.path.replace(/\/+$/, '') : req.path;
  if (path === IMPRESSIONS_PATH) {
    if (req.method !== 'POST') return Promise.resolve(refuseMethod(req, 'POST'));
    return asCaller(req, keys, (principal) => Promise.resolve(json(200, { taken: take(principal, () => parseImpressions(req.body)) })));
  }
  if (path !== STATS) return null;
  if (req.method !== 'GET') return Promise.resolve(refuseMethod(req, 'GET'));
  return asCaller(req, keys, async (principal, options) => json(200, await read(principal, timeOf(req.query, 'since')!, timeOf(req.query, 'until'), options)));
}
