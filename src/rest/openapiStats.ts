import { IMPRESSIONS_PATH, MAX_IMPRESSION_ROWS, MAX_IMPRESSIONS_PER_ROW, TRACKED_KINDS } from '../model/trackingId.js';
import { ingestFailures, keySecurity, recsResponse, type PathItem } from './openapiPaths.js';
import { jsonContent } from './openapiSchemas.js';
import { RecsErrorCode } from './recommendations.js';

/* The attribution counts' operations of the OpenAPI description (docs/attribution.md). */

export const statsPaths: Record<string, PathItem> = {
  '/v1/stats': {
    get: {
      operationId: 'recommendationStats',
      summary: 'Impressions, clicks and purchases per kind of recommendation list and variant, with 95% Wilson intervals.',
      description: 'Administrators only (a password or a key of theirs in the Authorization header). The same as GraphQL\'s recommendationStats: ' +
        'the whole UTC hours that overlap [since, until), until now when absent; docs/attribution.md.',
      tags: ['ingestion'],
      security: keySecurity,
      parameters: [
        { name: 'since', in: 'query', required: true, schema: { type: 'string' }, description: 'ISO 8601 with an offset, or milliseconds since 1970.' },
        { name: 'until', in: 'query', required: false, schema: { type: 'string' }, description: 'The same; now when absent; after since.' },
      ],
      responses: {
        '200': {
          description: 'One entry per kind and variant.',
          content: jsonContent({ type: 'array', items: { type: 'object' } }, [{
            kind: 'NEXT_BEST_PRODUCT', variant: 'A', impressions: 10, clicks: 2, purchases: 0,
            clickThroughRate: { value: 0.2, low: 0.0567, high: 0.5098 }, conversionRate: { value: 0, low: 0, high: 0.2775 },
          }]),
        },
        ...ingestFailures,
      },
    },
  },
  [IMPRESSIONS_PATH]: {
    post: {
      operationId: 'addImpressions',
      summary: 'Adds a REST-mode front\'s impressions to this gateway\'s counts.',
      description: 'Administrators only (a key of theirs, holding EVENTS_WRITE, in the Authorization header): what a recs-gateway in REST mode ' +
        'in front of this one sends every 2 seconds and when it stops, so that recommendationStats counts the lists it served. ' +
        'Rows are added to the next write of this gateway\'s counts (within 2 seconds), not to its Prometheus counters. ' +
        `At most ${MAX_IMPRESSION_ROWS} rows; hour is milliseconds since 1970 / 3,600,000, from a year back to the next hour; ` +
        'any bad row refuses the call, nothing of it counted.',
      tags: ['ingestion'],
      security: keySecurity,
      requestBody: {
        required: true,
        content: jsonContent({
          type: 'array', maxItems: MAX_IMPRESSION_ROWS,
          items: {
            type: 'object', additionalProperties: false, required: ['kind', 'variant', 'hour', 'impressions'],
            properties: {
              kind: { type: 'string', enum: [...TRACKED_KINDS] },
              variant: { type: 'string', enum: ['A', 'B'] },
              hour: { type: 'integer' },
              impressions: { type: 'integer', minimum: 1, maximum: MAX_IMPRESSIONS_PER_ROW },
            },
          },
        }, [{ kind: 'NEXT_BEST_PRODUCT', variant: 'A', hour: 494808, impressions: 12 }]),
      },
      responses: {
        '200': {
          description: 'The rows were taken.',
          content: jsonContent({ type: 'object', required: ['taken'], properties: { taken: { type: 'integer', minimum: 0 } } }, { taken: 1 }),
        },
        ...ingestFailures,
        '400': recsResponse(
          `A malformed body or row (code ${RecsErrorCode.BAD_REQUEST}), naming the first bad row's index and field; nothing of the call is counted.`,
          RecsErrorCode.BAD_REQUEST, 'impressions[0].hour: must be a whole number of hours since 1970 (Date.now() / 3600000), from 486024 to 494809',
        ),
        '413': recsResponse('A body over BODY_LIMIT_BYTES (1 MiB by default).', 413, 'Request body larger than 1048576 bytes: send fewer events or records a call'),
      },
    },
  },
};
