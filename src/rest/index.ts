export { serveApiKeys, apiKeyBodyTooLarge, apiKeyEncoded, apiKeyErrorResponse, apiKeyNotJson, isApiKeyJson } from './apiKeys.js';
export { serveIngest, ingestErrorResponse, ingestBodyTooLarge, ingestNotJson, ingestUnsupportedEncoding } from './ingest.js';
export { serveStats, type ImpressionsTaker, type StatsReader } from './stats.js';
export { serveRecommendations, recsErrorResponse, queryApiKey, RecsErrorCode, MAX_LOOKUP_IDS } from './recommendations.js';
export type { RestRequest, RestResponse } from './types.js';
