import { badUserInput } from '../errors.js';
import { parseIsoTime } from '../model/ingest.js';
import type { RecommendationStatsModel } from '../ports/attribution.js';
import type { CallOptions, KeyService, PrincipalModel } from '../ports/backend.js';
import { asCaller, errorBody } from './ingest.js';
import { json } from './types.js';
import type { RestRequest, RestResponse } from './types.js';

/** What answers recommendationStats for a caller (src/observability/attribution.ts readStats). */
export type StatsReader = (principal: PrincipalModel, since: number, until: number | null, options: CallOptions) => Promise<RecommendationStatsModel[]>;

const STATS = '/v1/stats';

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

/** GET /v1/stats?since=&until=: recommendationStats' REST twin, authenticated by the Authorization header
 * and answered in the ingestion twins' error body; null for another path. */
export function serveStats(req: RestRequest, keys: KeyService, read: StatsReader): Promise<RestResponse> | null {
  const path = req.path.length > 1 ? req.path.replace(/\/+$/, '') : req.path;
  if (path !== STATS) return null;
  return handle(req, keys, read);
}

async function handle(req: RestRequest, keys: KeyService, read: StatsReader): Promise<RestResponse> {
  if (req.method !== 'GET') return json(405, errorBody(405, `Method ${req.method} not allowed`), { allow: 'GET' });
  return asCaller(req, keys, async (principal, options) => json(200, await read(principal, timeOf(req.query, 'since')!, timeOf(req.query, 'until'), options)));
}
