import type { OpenAPIV3_1 } from 'openapi-types';
import { MAX_EVENTS_PER_CALL, MAX_ITEMS_PER_CALL, MAX_ITEM_LIST_LENGTH, MAX_ITEM_TEXT_LENGTH } from '../model/ingest.js';
import { DEFAULT_LIST_ITEMS, MAX_CATEGORY_PATH, MAX_LIST_ITEMS } from '../model/itemLists.js';
import { MAX_EXCLUDED_ITEMS } from '../model/recommendationFilter.js';
import { MAX_LOOKUP_IDS, RecsErrorCode } from './recommendations.js';
import { itemId, jsonContent, ref, type Reference } from './openapiSchemas.js';
import { DEFAULT_USAGE_DAYS, MAX_USAGE_DAYS } from '../ports/backend.js';

/* The operations of the OpenAPI description (src/rest/openapi.ts): each route's parameters,
 * security and answers, and the responses, parameters, headers and security schemes they share. */

type ResponseObject = OpenAPIV3_1.ResponseObject;
type Operation = OpenAPIV3_1.OperationObject;
type SecurityRequirement = OpenAPIV3_1.SecurityRequirementObject;

/** A path's operations as 3.1 has them: the library's PathItemObject also demands 3.0's (kogosoftwarellc/open-api#910). */
export type PathItem = { [method in OpenAPIV3_1.HttpMethods]?: Operation } & Pick<OpenAPIV3_1.PathItemObject, 'parameters'>;

const keyResponse = (description: string, example: unknown, headers?: Record<string, Reference>): ResponseObject => ({
  description,
  ...(headers ? { headers } : {}),
  content: jsonContent(ref('schemas', 'KeyServiceErrors'), example),
});
export const recsResponse = (description: string, code: number, message: string, headers?: Record<string, Reference>): ResponseObject => ({
  description,
  ...(headers ? { headers } : {}),
  content: jsonContent(ref('schemas', 'RecsErrors'), { errors: [{ code, message }] }),
});

/** The responses of the live recommender's twins besides their own: the recommendation body, statuses as the key interface's. */
export const ingestFailures = {
  '400': recsResponse(
    `A malformed body or a bad entry (code ${RecsErrorCode.BAD_REQUEST}), naming the first bad entry's index and field; nothing of the call is kept.`,
    RecsErrorCode.BAD_REQUEST, 'events[3].sessionId: a view needs a sessionId or a userId',
  ),
  '401': recsResponse(
    'No, bad, unknown, expired or deleted credentials. A request with no credentials, or with Basic ones, is challenged.',
    401, 'Authentication required: send a valid API key or credentials in the Authorization header',
    { 'WWW-Authenticate': ref('headers', 'WWW-Authenticate') },
  ),
  '403': recsResponse('The caller is no administrator.', 403, 'Only administrators may send events and item records'),
  '413': recsResponse('A body over INGEST_BODY_LIMIT_BYTES (8 MiB by default) for an administrator.', 413, 'Request body larger than 8388608 bytes: send fewer events or records a call'),
  '415': recsResponse('A body sent as anything but JSON (Content-Type: application/json), or compressed (Content-Encoding), left unread.', 415, 'Send the batch as JSON: Content-Type: application/json'),
  '429': recsResponse('Too many requests.', 429, 'Too many requests: retry in 1 s', { 'Retry-After': ref('headers', 'Retry-After') }),
  '502': recsResponse(
    'In REST mode: the upstream refused the gateway, or takes no events or item records.',
    502, "The recommendations service refused the gateway's request: the upstream takes no events (POST /v1/events is not one of its routes)",
  ),
  '503': recsResponse('In REST mode: the upstream is unavailable or did not answer in time.', 503, 'The recommendations service is unavailable: HTTP 503', { 'Retry-After': ref('headers', 'Retry-After') }),
};

/** The security of the key interface: any one of the three forms of the Authorization header. */
export const keySecurity: SecurityRequirement[] = [{ apiKeyHeader: [] }, { bearerKey: [] }, { basicAuth: [] }];
const recsSecurity: SecurityRequirement[] = [{ apiKeyQuery: [] }];

/** The responses every operation of one interface may give besides its own. */
const keyFailures = {
  '401': ref('responses', 'KeyUnauthorized'),
  '429': ref('responses', 'KeyRateLimited'),
  '502': ref('responses', 'KeyBadGateway'),
  '503': ref('responses', 'KeyUnavailable'),
};
const recsFailures = {
  '403': ref('responses', 'RecsAccountInactive'),
  '429': ref('responses', 'RecsRateLimited'),
  '502': ref('responses', 'RecsBadGateway'),
  '503': ref('responses', 'RecsUnavailable'),
};

/** The filter of a list: every parameter given must hold; a bad value is a 400 with code 4000 naming it. */
const FILTER_PARAMETERS = ['exclude', 'inStock', 'minPrice', 'maxPrice', 'category', 'brand'] as const;
const PRICE = { type: 'string', pattern: '^[0-9]{1,30}(\\.[0-9]{1,30})?$' } as const;

const recommendationOperation = (operationId: string, summary: string, description: string): Operation => ({
  operationId,
  summary,
  description,
  tags: ['recommendations'],
  security: recsSecurity,
  parameters: [ref('parameters', 'itemId'), ...FILTER_PARAMETERS.map((name) => ref('parameters', name))],
  responses: {
    '200': {
      description: 'At most 10 item records, most relevant first, each passing the filter parameters given (10 whenever that many pass); ' +
        'or, when there is nothing to recommend or nothing passes, ' +
        `the upstream's own way of saying so: an error body with code ${RecsErrorCode.NO_RECOMMENDATIONS} (an empty list, not a failure).`,
      content: jsonContent({
        oneOf: [
          { type: 'array', items: ref('schemas', 'ItemRecord'), minItems: 1, maxItems: 10 },
          ref('schemas', 'RecsErrors'),
        ],
      }),
    },
    '400': ref('responses', 'RecsBadRequest'),
    ...recsFailures,
  },
});

const rankingOperation = (operationId: string, summary: string, description: string, kind: boolean): Operation => ({
  operationId,
  summary,
  description,
  tags: ['recommendations'],
  security: recsSecurity,
  parameters: [
    ref('parameters', 'category'),
    ...(kind
      ? [{ name: 'kind', in: 'query' as const, required: false, description: 'Most bought (NEXT_BEST_PRODUCT, the default) or most viewed (POST_BROWSE); given once.', schema: { type: 'string' as const, enum: ['NEXT_BEST_PRODUCT', 'POST_BROWSE'] } }]
      : []),
    { name: 'first', in: 'query' as const, required: false, description: `How many items at most, 1 to ${MAX_LIST_ITEMS}; default ${DEFAULT_LIST_ITEMS}; given once.`, schema: { type: 'integer' as const, minimum: 1, maximum: MAX_LIST_ITEMS } },
  ],
  responses: {
    '200': {
      description: 'At most first item records, best first; an empty array where there are none.',
      content: jsonContent({ type: 'array' as const, items: ref('schemas', 'ItemRecord'), maxItems: MAX_LIST_ITEMS }),
    },
    '400': ref('responses', 'RecsBadRequest'),
    ...recsFailures,
  },
});

export const paths: Record<string, PathItem> = {
  '/api/v1/apikey': {
    get: {
      operationId: 'listApiKeys',
      summary: 'The keys of the authenticated user, sorted by name: metadata only, never a key value.',
      tags: ['api-keys'],
      security: keySecurity,
      responses: {
        '200': { description: 'The keys, sorted by name.', content: jsonContent({ type: 'array', items: ref('schemas', 'ApiKeyRecord') }) },
        ...keyFailures,
      },
    },
    post: {
      operationId: 'createApiKey',
      summary: 'Creates a key; the response is the only place its value ever appears.',
      tags: ['api-keys'],
      security: keySecurity,
      requestBody: { required: false, content: jsonContent(ref('schemas', 'CreateApiKeyRequest'), { name: 'ci-key' }) },
      responses: {
        '200': { description: 'The new key.', content: jsonContent(ref('schemas', 'CreatedApiKey')) },
        '400': ref('responses', 'KeyBadRequest'),
        '403': ref('responses', 'KeyForbidden'),
        '413': keyResponse(
          'A body over BODY_LIMIT_BYTES (1 MiB by default); refused before the key service sees it, the connection closed.',
          [{ id: '*', message: 'Request body larger than 1048576 bytes' }],
        ),
        '415': keyResponse(
          'A body sent as anything but JSON (Content-Type: application/json, parameters allowed), with none, or compressed (Content-Encoding): left unread, no key made. ' +
            'A form or text/plain POST is what another site can make a browser send.',
          [{ id: '*', message: 'Send the body as JSON: Content-Type: application/json' }],
        ),
        ...keyFailures,
      },
    },
  },
  '/api/v1/apikey/{id}': {
    delete: {
      operationId: 'deleteApiKey',
      summary: 'Deletes a key of the authenticated user (an administrator may delete anyone\'s); it stops working at once.',
      tags: ['api-keys'],
      security: keySecurity,
      parameters: [{ name: 'id', in: 'path', required: true, description: 'Identifier of the key.', schema: { type: 'string', format: 'uuid' } }],
      responses: {
        '200': { description: 'Deleted.', content: jsonContent(ref('schemas', 'DeletedApiKey')) },
        '400': keyResponse(
          'No such key: an unknown id and another user\'s key answer alike, so the answer does not tell which ids exist.',
          [{ id: '*', message: 'API key not found: 00000000-0000-4000-8000-000000000000' }],
        ),
        '403': ref('responses', 'KeyForbidden'),
        '404': keyResponse('The id is not a UUID: no such resource.', [{ id: 'id', message: 'No such resource: the key id must be a UUID' }]),
        ...keyFailures,
      },
    },
    patch: {
      operationId: 'updateApiKey',
      summary: 'Renames a key or narrows its scopes (widening needs the caller to hold the scopes added).',
      tags: ['api-keys'],
      security: keySecurity,
      parameters: [{ name: 'id', in: 'path', required: true, description: 'Identifier of the key.', schema: { type: 'string', format: 'uuid' } }],
      requestBody: { required: true, content: jsonContent(ref('schemas', 'UpdateApiKeyRequest'), { scopes: ['RECOMMENDATIONS_READ'] }) },
      responses: {
        '200': { description: 'The key as it is now.', content: jsonContent(ref('schemas', 'ApiKeyRecord')) },
        '400': ref('responses', 'KeyBadRequest'),
        '403': ref('responses', 'KeyForbidden'),
        '404': keyResponse('The id is not a UUID: no such resource.', [{ id: 'id', message: 'No such resource: the key id must be a UUID' }]),
        ...keyFailures,
      },
    },
  },
  '/api/v1/apikey/{id}/usage': {
    get: {
      operationId: 'apiKeyUsage',
      summary: 'A key\'s requests per UTC day: the caller\'s own keys (an administrator\'s: anyone\'s).',
      tags: ['api-keys'],
      security: keySecurity,
      parameters: [
        { name: 'id', in: 'path', required: true, description: 'Identifier of the key.', schema: { type: 'string', format: 'uuid' } },
        { name: 'days', in: 'query', required: false, description: 'Days to look back, today included.', schema: { type: 'integer', minimum: 1, maximum: MAX_USAGE_DAYS, default: DEFAULT_USAGE_DAYS } },
      ],
      responses: {
        '200': { description: 'The key\'s usage.', content: jsonContent(ref('schemas', 'ApiKeyUsage')) },
        '400': keyResponse(
          'No such key (another user\'s answers alike), or days out of bounds.',
          [{ id: '*', message: 'API key not found: 00000000-0000-4000-8000-000000000000' }],
        ),
        '403': ref('responses', 'KeyForbidden'),
        '404': keyResponse('The id is not a UUID: no such resource.', [{ id: 'id', message: 'No such resource: the key id must be a UUID' }]),
        ...keyFailures,
      },
    },
  },
  '/api/v1/apikey/{id}/rotate': {
    post: {
      operationId: 'rotateApiKey',
      summary: 'Gives a key a new value, shown this once (same id, name and scopes); the old value works until the grace period ends.',
      description: 'Within a second of the grace period\'s end the old value stops on every gateway sharing the key store.',
      tags: ['api-keys'],
      security: keySecurity,
      parameters: [{ name: 'id', in: 'path', required: true, description: 'Identifier of the key.', schema: { type: 'string', format: 'uuid' } }],
      requestBody: { required: true, content: jsonContent(ref('schemas', 'RotateApiKeyRequest'), { gracePeriodSeconds: 3600 }) },
      responses: {
        '200': { description: 'The new value and the key.', content: jsonContent(ref('schemas', 'RotatedApiKey')) },
        '400': ref('responses', 'KeyBadRequest'),
        '403': ref('responses', 'KeyForbidden'),
        ...keyFailures,
      },
    },
  },
  '/v1/postbrowse': {
    get: recommendationOperation(
      'postBrowsedProducts',
      'Post browsed products: items viewed together with the anchor.',
      'For retargeting, or alternatives when the viewed item is out of stock.',
    ),
  },
  '/v1/nbp': {
    get: recommendationOperation(
      'productRecommendations',
      'Product recommendation (next best product): items bought together with the anchor.',
      'For a widget after a verified transaction, or an upsell.',
    ),
  },
  '/v1/trending': {
    get: rankingOperation(
      'trendingItems',
      'Trending: items whose events in the last 24 hours rose most against their rate over the 27 days before.',
      'The rule and its figures as GraphQL\'s trendingItems states them; "now" is the newest event the recommender holds.',
      false,
    ),
  },
  '/v1/popular': {
    get: rankingOperation('popularItems', 'Popular: items most bought (or most viewed) in the window the recommender keeps.', 'The same as GraphQL\'s popularItems.', true),
  },
  '/v1/foryou': {
    get: {
      operationId: 'recommendedForYou',
      summary: 'For one shopper: items from what the session or user viewed and bought, the latest weighing more, none they had.',
      description: 'The same as GraphQL\'s recommendedForYou: a shopper without events gets the popular items; the filter parameters apply ' +
        'as on /v1/postbrowse, the list keeping first items whenever that many pass. Never cached (Cache-Control: no-store).',
      tags: ['recommendations'],
      security: recsSecurity,
      parameters: [
        { name: 'sessionId', in: 'query', required: false, description: 'The shopper\'s session, as its events name it; this or userId (or both) is required; given once.', schema: { type: 'string', minLength: 1, maxLength: 200 } },
        { name: 'userId', in: 'query', required: false, description: 'The shopper, as their events name them; given once.', schema: { type: 'string', minLength: 1, maxLength: 200 } },
        { name: 'first', in: 'query', required: false, description: `How many items at most, 1 to ${MAX_LIST_ITEMS}; default ${DEFAULT_LIST_ITEMS}; given once.`, schema: { type: 'integer', minimum: 1, maximum: MAX_LIST_ITEMS } },
        { name: 'count', in: 'query', required: false, deprecated: true, description: 'first\'s older spelling; not with first.', schema: { type: 'integer', minimum: 1, maximum: MAX_LIST_ITEMS } },
        ...FILTER_PARAMETERS.map((name) => ref('parameters', name)),
      ],
      responses: {
        '200': { description: 'The list; empty arrays where nothing passes the filter.', content: jsonContent(ref('schemas', 'ForYouList')) },
        '400': ref('responses', 'RecsBadRequest'),
        ...recsFailures,
      },
    },
  },
  '/v1/items/{itemId}': {
    get: {
      operationId: 'getItem',
      summary: 'Product lookup: one item.',
      tags: ['recommendations'],
      security: recsSecurity,
      parameters: [{ name: 'itemId', in: 'path', required: true, description: 'Item identifier.', schema: itemId('Item identifier.') }],
      responses: {
        '200': { description: 'The item.', content: jsonContent(ref('schemas', 'ItemRecord')) },
        '400': recsResponse('An unknown or malformed item id.', RecsErrorCode.INVALID_ITEM, 'Invalid itemId'),
        ...recsFailures,
      },
    },
  },
  '/v1/events': {
    post: {
      operationId: 'recordEvents',
      summary: `Records what shoppers did, for the recommender: at most ${MAX_EVENTS_PER_CALL} events a call, all kept or none.`,
      description: 'Administrators only (a password or a key of theirs in the Authorization header). Answered once the events are kept; ' +
        'the recommendations follow within seconds. The same as GraphQL\'s recordEvents mutation.',
      tags: ['ingestion'],
      security: keySecurity,
      requestBody: {
        required: true,
        content: jsonContent(
          { type: 'array', items: ref('schemas', 'Event'), maxItems: MAX_EVENTS_PER_CALL },
          [{ kind: 'view', itemId: 31000005, sessionId: 's-81f2', time: '2026-11-23T06:40:00Z' }, { kind: 'purchase', itemId: 31000005, orderId: 'o-1177' }],
        ),
      },
      responses: {
        '200': { description: 'The events were kept.', content: jsonContent(ref('schemas', 'RecordedEvents'), { accepted: 2, itemsWithoutRecord: 0 }) },
        ...ingestFailures,
      },
    },
  },
  '/v1/items': {
    put: {
      operationId: 'upsertItems',
      summary: `Adds or replaces item records: at most ${MAX_ITEMS_PER_CALL} a call, all stored or none.`,
      description: 'Administrators only. Each record replaces the item\'s previous record whole; itemId and a non-empty name are required; ' +
        'of an itemId sent twice in one call the last record is stored. ' +
        `Texts are capped (UTF-16 code units): shortDescription and longDescription ${MAX_ITEM_TEXT_LENGTH.description}, URLs ${MAX_ITEM_TEXT_LENGTH.url}, ` +
        `every other text ${MAX_ITEM_TEXT_LENGTH.other}; attributes, imageEntities and variants at most ${MAX_ITEM_LIST_LENGTH.attributes}, ` +
        `${MAX_ITEM_LIST_LENGTH.imageEntities} and ${MAX_ITEM_LIST_LENGTH.variants} entries. A field of the wrong type refuses the call (400, naming it), and a number out of its field's range (400, saying the range); of the texts only upc and modelNumber may be sent as numbers, ` +
        `whole ones from 0 to ${Number.MAX_SAFE_INTEGER}, kept as their digits (any other number is refused). ` +
        'Every number is a JSON number (one sent as text, "12" or "0x10", is refused), but customerRating, which may also be its decimal text ("4.627"), ' +
        'and itemId, parentItemId and variants, which may also be strings of their digits ("31000005"). ' +
        'The same as GraphQL\'s upsertItems mutation.',
      tags: ['ingestion'],
      security: keySecurity,
      requestBody: {
        required: true,
        content: jsonContent({ type: 'array', items: ref('schemas', 'ItemRecord'), maxItems: MAX_ITEMS_PER_CALL }, [{ itemId: 31000005, name: 'Vireo Labs Phone 6' }]),
      },
      responses: {
        '200': { description: 'The records were stored.', content: jsonContent(ref('schemas', 'UpsertedItems'), { upserted: 1 }) },
        ...ingestFailures,
      },
    },
    get: {
      operationId: 'getItems',
      summary: `Product lookup: up to ${MAX_LOOKUP_IDS} items by id.`,
      tags: ['recommendations'],
      security: recsSecurity,
      parameters: [{
        name: 'ids',
        in: 'query',
        required: true,
        description: `Comma-separated item identifiers, at most ${MAX_LOOKUP_IDS}, each its digits; spaces only next to a comma; given once.`,
        schema: { type: 'string', pattern: '^[0-9]+( *, *[0-9]+)*$' },
        example: '31000005,31000007',
      }],
      responses: {
        '200': {
          description: 'The known items, in the order asked, each once; unknown ids are left out.',
          content: jsonContent(ref('schemas', 'ItemList')),
        },
        '400': ref('responses', 'RecsBadRequest'),
        ...recsFailures,
      },
    },
  },
};

/** components.responses: the answers more than one operation gives. */
export const responses: Record<string, ResponseObject> = {
  KeyBadRequest: keyResponse('A request the key service refuses: a bad field, a name taken, an unknown username.', [{ id: 'name', message: 'An API key named ci-key already exists for this user' }]),
  KeyUnauthorized: keyResponse(
    'No, bad, unknown, expired or deleted credentials. A request with no credentials, or with Basic ones, is challenged.',
    [{ id: '*', message: 'Authentication required: send a valid API key or credentials in the Authorization header' }],
    { 'WWW-Authenticate': ref('headers', 'WWW-Authenticate') },
  ),
  KeyForbidden: keyResponse(
    'Not permitted: a non-administrator acting for another user, or a key without the scope needed (named in `scope`).',
    [{ id: '*', message: 'This credential lacks the KEYS_MANAGE scope this operation needs', scope: 'KEYS_MANAGE' }],
  ),
  KeyRateLimited: keyResponse('Too many requests, or too many failed sign-ins.', [{ id: '*', message: 'Too many requests: retry in 1 s' }], { 'Retry-After': ref('headers', 'Retry-After') }),
  KeyBadGateway: keyResponse('The upstream key service refused the gateway.', [{ id: '*', message: "The apikeys service refused the gateway's request: unexpected HTTP 418" }]),
  KeyUnavailable: keyResponse('The key service is unavailable or did not answer in time.', [{ id: '*', message: 'The apikeys service is unavailable: HTTP 503' }], { 'Retry-After': ref('headers', 'Retry-After') }),
  RecsBadRequest: {
    description: `A malformed request (code ${RecsErrorCode.BAD_REQUEST}: a missing or bad itemId, a bad filter parameter, named in the message), or an unknown anchor item (code ${RecsErrorCode.INVALID_ITEM}, Invalid itemId).`,
    content: jsonContent(ref('schemas', 'RecsErrors'), { errors: [{ code: RecsErrorCode.INVALID_ITEM, message: 'Invalid itemId' }] }),
  },
  RecsAccountInactive: recsResponse(
    'A missing, unknown, deleted or malformed apiKey: Account Inactive, with no hint which.',
    RecsErrorCode.ACCOUNT_INACTIVE, 'Account Inactive',
  ),
  RecsRateLimited: recsResponse('Too many requests.', 429, 'Too Many Requests', { 'Retry-After': ref('headers', 'Retry-After') }),
  RecsBadGateway: recsResponse('The upstream recommendation service refused the gateway.', 502, 'Bad Gateway'),
  RecsUnavailable: recsResponse('The recommendation service is unavailable or did not answer in time.', 503, 'Service Unavailable', { 'Retry-After': ref('headers', 'Retry-After') }),
};

export const parameters: Record<string, OpenAPIV3_1.ParameterObject> = {
  itemId: {
    name: 'itemId',
    in: 'query',
    required: true,
    description: 'The anchor item\'s identifier, given once.',
    schema: itemId('Item identifier.'),
    example: 31000005,
  },
  exclude: {
    name: 'exclude', in: 'query', required: false,
    description: `Items never to list (e.g. those in the cart): comma-separated ids, at most ${MAX_EXCLUDED_ITEMS} in all; may be repeated.`,
    schema: { type: 'string', pattern: '^[0-9]+( *, *[0-9]+)*$' }, example: '31000007,31000012',
  },
  inStock: {
    name: 'inStock', in: 'query', required: false,
    description: 'true: only items in stock (stock Available or absent); false or absent: in stock or not. Given once.',
    schema: { type: 'string', enum: ['true', 'false'] }, example: 'true',
  },
  minPrice: {
    name: 'minPrice', in: 'query', required: false,
    description: 'Lowest salePrice, inclusive, given once; an item without a salePrice is left out. At most maxPrice.',
    schema: PRICE, example: '10',
  },
  maxPrice: {
    name: 'maxPrice', in: 'query', required: false,
    description: 'Highest salePrice, inclusive, given once; an item without a salePrice is left out.',
    schema: PRICE, example: '49.99',
  },
  category: {
    name: 'category', in: 'query', required: false,
    description: `A category and everything under it, as whole leading segments of the item's categoryPath (Electronics/TV matches Electronics/TV/4K, not Electronics/TVs). Given once, not empty, at most ${MAX_CATEGORY_PATH} characters, no control characters.`,
    schema: { type: 'string', minLength: 1, maxLength: MAX_CATEGORY_PATH }, example: 'Gadgets & Devices/Mobile',
  },
  brand: {
    name: 'brand', in: 'query', required: false,
    description: 'The item\'s brandName must be one of the brands given (repeat the parameter for several); case does not matter.',
    schema: { type: 'array', items: { type: 'string', minLength: 1 } }, style: 'form', explode: true, example: ['Norvale'],
  },
};

export const headers: Record<string, OpenAPIV3_1.HeaderObject> = {
  'WWW-Authenticate': { description: 'Basic realm="recs-gateway"', schema: { type: 'string' } },
  'Retry-After': { description: 'Seconds to wait before trying again.', schema: { type: 'integer', minimum: 0 } },
};

export const securitySchemes: Record<string, OpenAPIV3_1.SecuritySchemeObject> = {
  apiKeyHeader: {
    type: 'apiKey',
    in: 'header',
    name: 'Authorization',
    description: 'An API key as the whole Authorization header value.',
  },
  bearerKey: { type: 'http', scheme: 'bearer', description: 'An API key after Bearer.' },
  basicAuth: {
    type: 'http',
    scheme: 'basic',
    description: 'User name and password; a domain user signs in as <username>@<domain>.',
  },
  apiKeyQuery: {
    type: 'apiKey',
    in: 'query',
    name: 'apiKey',
    description: 'An API key (never a password), given once; anything wrong with it is 403 Account Inactive.',
  },
};
