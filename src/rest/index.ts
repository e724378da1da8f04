export { serveApiKeys, apiKeyErrorResponse } from './apiKeys.js';
export { serveRecommendations, recsErrorResponse, RecsErrorCode, MAX_LOOKUP_IDS } from './recommendations.js';
export type { RestRequest, RestResponse } from './types.js';
