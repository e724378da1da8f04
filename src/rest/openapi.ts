import { hash } from 'node:crypto';
import { MAX_EVENTS_PER_CALL, MAX_IDENTIFIER_LENGTH, MAX_ITEMS_PER_CALL, MAX_ITEM_LIST_LENGTH, MAX_ITEM_TEXT_LENGTH } from '../ports/ingest.js';
import { DECIMAL_TEXT } from '../ports/itemRecord.js';
import { MAX_LOOKUP_IDS, RecsErrorCode } from './recommendations.js';
import type { RestResponse } from './types.js';

/**
 * The OpenAPI 3.1 description of the REST interfaces the gateway serves (src/rest/apiKeys.ts,
 * src/rest/recommendations.ts), served at GET /openapi.json for REST clients and for tools that
 * start from one (GraphQL Mesh, Apollo Connectors, client generators). Written by hand, next to
 * the handlers it describes; test/rest/openapi.test.ts validates it and checks it against the
 * handlers' real answers, so a change to either that the other misses fails there.
 */

/** The subset of OpenAPI 3.1's types this description uses. */
type JsonType = 'string' | 'integer' | 'number' | 'boolean' | 'object' | 'array' | 'null';

export interface Reference {
  $ref: string;
  description?: string;
}

/** A JSON Schema 2020-12 schema, as OpenAPI 3.1's Schema Object is. */
export interface SchemaObject {
  type?: JsonType | JsonType[];
  title?: string;
  description?: string;
  format?: string;
  pattern?: string;
  const?: unknown;
  enum?: unknown[];
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  items?: Schema;
  properties?: Record<string, Schema>;
  required?: string[];
  additionalProperties?: boolean | Schema;
  oneOf?: Schema[];
  examples?: unknown[];
}

export type Schema = SchemaObject | Reference;

interface MediaType {
  schema: Schema;
  example?: unknown;
}

interface Header {
  description: string;
  required?: boolean;
  schema: Schema;
}

export interface ResponseObject {
  description: string;
  headers?: Record<string, Header | Reference>;
  content?: Record<string, MediaType>;
}

interface Parameter {
  name: string;
  in: 'query' | 'path' | 'header';
  description: string;
  required?: boolean;
  schema: Schema;
  example?: unknown;
}

type SecurityRequirement = Record<string, string[]>;

export interface Operation {
  operationId: string;
  summary: string;
  description?: string;
  tags: string[];
  security: SecurityRequirement[];
  parameters?: (Parameter | Reference)[];
  requestBody?: { required: boolean; content: Record<string, MediaType> };
  responses: Record<string, ResponseObject | Reference>;
}

type Method = 'get' | 'post' | 'put' | 'delete';
export type PathItem = Partial<Record<Method, Operation>> & { parameters?: (Parameter | Reference)[] };

type SecurityScheme =
  | { type: 'apiKey'; in: 'header' | 'query'; name: string; description: string }
  | { type: 'http'; scheme: 'basic' | 'bearer'; description: string };

export interface OpenApiDocument {
  openapi: '3.1.0';
  info: { title: string; version: string; description: string; license: { name: string; identifier: string } };
  tags: { name: string; description: string }[];
  paths: Record<string, PathItem>;
  components: {
    schemas: Record<string, SchemaObject>;
    responses: Record<string, ResponseObject>;
    parameters: Record<string, Parameter>;
    headers: Record<string, Header>;
    securitySchemes: Record<string, SecurityScheme>;
  };
}

const JSON_TYPE = 'application/json';
const ref = (kind: 'schemas' | 'responses' | 'parameters' | 'headers', name: string): Reference => ({ $ref: `#/components/${kind}/${name}` });
const jsonContent = (schema: Schema, example?: unknown): Record<string, MediaType> => ({
  [JSON_TYPE]: example === undefined ? { schema } : { schema, example },
});

const str = (description?: string): SchemaObject => (description ? { type: 'string', description } : { type: 'string' });
const url = (description?: string): SchemaObject => ({ ...str(description), format: 'uri' });
const num = (description?: string): SchemaObject => (description ? { type: 'number', description } : { type: 'number' });
const bool = (description?: string): SchemaObject => (description ? { type: 'boolean', description } : { type: 'boolean' });
const itemId = (description: string): SchemaObject => ({ type: 'integer', format: 'int64', minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description });

/**
 * The item record as src/backends/itemRecord.ts's toItemRecord serves it (the fields of
 * schema/items.graphql's Item, with customerRating as text and attributes as an object). Only
 * itemId is always there; a field the record does not have is left out, never null.
 */
const itemRecord: SchemaObject = {
  type: 'object',
  description: 'An item record of recommendations.md. Only itemId is always present; every other field is absent where the record does not have it.',
  required: ['itemId'],
  properties: {
    itemId: itemId('Item identifier.'),
    name: str(),
    upc: str('Universal Product Code, as text: leading zeros matter.'),
    categoryPath: str('Slash-separated category path.'),
    categoryNode: str('Underscore-joined category identifiers.'),
    shortDescription: str(),
    longDescription: str('May contain HTML markup.'),
    brandName: str(),
    thumbnailImage: url(),
    mediumImage: url(),
    largeImage: url(),
    productTrackingUrl: url(),
    productUrl: url(),
    addToCartUrl: url(),
    affiliateAddToCartUrl: url(),
    color: str(),
    size: str(),
    gender: str('Unisex and Male occur.'),
    age: str('Age range text.'),
    modelNumber: str(),
    sellerInfo: str(),
    customerRatingImage: url(),
    rhid: str(),
    stock: str('Available occurs; anything else means out of stock.'),
    offerType: str('ONLINE_ONLY and ONLINE_AND_STORE occur.'),
    msrp: num(),
    salePrice: num(),
    standardShipRate: num(),
    twoThreeDayShippingRate: num(),
    overnightShippingRate: num(),
    ninetySevenCentShipping: bool(),
    freeShippingOver35Dollars: bool(),
    freeShippingOver50Dollars: bool(),
    isTwoDayShippingEligible: bool(),
    marketplace: bool(),
    shipToStore: bool(),
    freeShipToStore: bool(),
    rollBack: bool(),
    bundle: bool(),
    clearance: bool(),
    preOrder: bool(),
    availableOnline: bool(),
    parentItemId: itemId('Parent item identifier; variants of one product share it.'),
    customerRating: { type: 'string', pattern: DECIMAL_TEXT.source, description: 'Average customer rating: a decimal number as text.', examples: ['4.627'] },
    numReviews: { type: 'integer', minimum: 0 },
    variants: { type: 'array', items: itemId('A variant.'), description: 'Item identifiers of the variants.' },
    bestMarketplacePrice: ref('schemas', 'MarketplacePrice'),
    giftOptions: ref('schemas', 'GiftOptions'),
    imageEntities: { type: 'array', items: ref('schemas', 'ImageEntity'), description: 'Images; the PRIMARY one is last.' },
    attributes: {
      type: 'object',
      additionalProperties: { type: 'string' },
      description: 'Free-form attributes; the set of names varies per item. Absent when the item has none.',
    },
  },
};

const keyErrors: SchemaObject = {
  type: 'array',
  description: 'The key service\'s error body: one entry per problem, id naming the field or * for the request as a whole.',
  minItems: 1,
  items: {
    type: 'object',
    required: ['id', 'message'],
    properties: { id: str('The field at fault, or *.'), message: str() },
  },
};

const recsErrors: SchemaObject = {
  type: 'object',
  description: 'The recommendation service\'s error body (the Walmart Open API\'s).',
  required: ['errors'],
  properties: {
    errors: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        required: ['code', 'message'],
        properties: {
          code: {
            type: 'integer',
            description: `${RecsErrorCode.BAD_REQUEST}: a malformed request (missing or non-numeric itemId, too many ids); ` +
              `${RecsErrorCode.INVALID_ITEM}: Invalid itemId (an unknown item); ` +
              `${RecsErrorCode.NO_RECOMMENDATIONS}: nothing to recommend (answered with a 200); ` +
              `${RecsErrorCode.ACCOUNT_INACTIVE}: Account Inactive (a missing, unknown or malformed apiKey); ` +
              '401, 403, 413, 429, 502, 503 and 500 as the HTTP status (401, 403 and 413 from the live recommender\'s POST /v1/events and PUT /v1/items only).',
          },
          message: str(),
        },
      },
    },
  },
};

const keyResponse = (description: string, example: unknown, headers?: Record<string, Reference>): ResponseObject => ({
  description,
  ...(headers ? { headers } : {}),
  content: jsonContent(ref('schemas', 'KeyServiceErrors'), example),
});
const recsResponse = (description: string, code: number, message: string, headers?: Record<string, Reference>): ResponseObject => ({
  description,
  ...(headers ? { headers } : {}),
  content: jsonContent(ref('schemas', 'RecsErrors'), { errors: [{ code, message }] }),
});

/** The responses of the live recommender's twins besides their own: the recommendation body, statuses as the key interface's. */
const ingestFailures = {
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
const keySecurity: SecurityRequirement[] = [{ apiKeyHeader: [] }, { bearerKey: [] }, { basicAuth: [] }];
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

const recommendationOperation = (operationId: string, summary: string, description: string): Operation => ({
  operationId,
  summary,
  description,
  tags: ['recommendations'],
  security: recsSecurity,
  parameters: [ref('parameters', 'itemId')],
  responses: {
    '200': {
      description: 'At most 10 item records, most relevant first; or, when there is nothing to recommend, ' +
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

export const openApiDocument: OpenApiDocument = {
  openapi: '3.1.0',
  info: {
    title: 'recs-gateway REST interfaces',
    version: '1.0.0',
    description: 'The two REST interfaces recs-gateway serves from its backend, drop-in for clients of the real services: ' +
      'API key management (Concord\'s /api/v1/apikey) and product recommendations and lookup (the Walmart Open API\'s /v1). ' +
      'The same data is served as GraphQL at /graphql.',
    license: { name: 'UNLICENSED', identifier: 'UNLICENSED' },
  },
  tags: [
    { name: 'api-keys', description: 'Per-user API keys: create, list, delete.' },
    { name: 'recommendations', description: 'Recommended items anchored on one item, and the product lookup.' },
    { name: 'ingestion', description: 'The live recommender: events and item records in, for administrators.' },
  ],
  paths: {
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
  },
  components: {
    schemas: {
      ApiKeyRecord: {
        type: 'object',
        description: 'An API key\'s metadata, as the list answers it.',
        required: ['id', 'userId', 'name', 'createdAt', 'expiresAt', 'lastUsedAt'],
        properties: {
          id: { type: 'string', format: 'uuid', description: 'Identifier of the key.' },
          userId: { type: 'string', format: 'uuid', description: 'Identifier of the owning user.' },
          name: str('The name given at creation, or key#<n> where n is one more than the highest such number the user has.'),
          createdAt: { type: ['string', 'null'], format: 'date-time', description: 'Null where the key service does not say.' },
          expiresAt: { type: ['string', 'null'], format: 'date-time', description: 'Null for a key that does not expire.' },
          lastUsedAt: { type: ['string', 'null'], format: 'date-time', description: 'About when the key last authenticated a request (updated at most once a minute); null if never or not known.' },
        },
      },
      CreateApiKeyRequest: {
        type: 'object',
        properties: {
          username: str('User the key is created for; the caller when omitted. Only an administrator may name another user.'),
          userDomain: str('Domain of that user.'),
          name: {
            type: 'string',
            pattern: '^[0-9a-zA-Z][0-9a-zA-Z_@.\\-~]{2,127}$',
            description: 'Name of the key, unique per user; key#<n> when omitted.',
          },
          expiresInDays: { type: 'integer', minimum: 1, maximum: 3650, description: 'Days until the key expires; it never does when omitted.' },
        },
        additionalProperties: false,
        description: 'Any other field is refused (400), naming it.',
      },
      CreatedApiKey: {
        type: 'object',
        required: ['ok', 'id', 'key'],
        properties: {
          ok: { const: true },
          id: { type: 'string', format: 'uuid', description: 'Identifier of the new key.' },
          key: {
            type: 'string',
            pattern: '^[A-Za-z0-9+/]{22}$',
            description: 'The key value, shown this once: 16 random bytes as unpadded base64. Send it as the Authorization header value.',
          },
        },
      },
      DeletedApiKey: {
        type: 'object',
        required: ['result', 'ok'],
        properties: { result: { const: 'DELETED' }, ok: { const: true } },
      },
      KeyServiceErrors: keyErrors,
      ItemRecord: itemRecord,
      ItemList: {
        type: 'object',
        required: ['items'],
        properties: { items: { type: 'array', items: ref('schemas', 'ItemRecord'), maxItems: MAX_LOOKUP_IDS } },
      },
      MarketplacePrice: {
        type: 'object',
        properties: {
          price: num(), sellerInfo: str(), standardShipRate: num(), twoThreeDayShippingRate: num(),
          availableOnline: bool(), clearance: bool(), offerType: str(),
        },
      },
      GiftOptions: {
        type: 'object',
        properties: { allowGiftWrap: bool(), allowGiftMessage: bool(), allowGiftReceipt: bool() },
      },
      ImageEntity: {
        type: 'object',
        properties: {
          thumbnailImage: url(), mediumImage: url(), largeImage: url(),
          entityType: str('PRIMARY or SECONDARY.'),
        },
      },
      RecsErrors: recsErrors,
      Event: {
        type: 'object',
        description: 'What a shopper did. A view needs a sessionId or a userId; a purchase an orderId, a sessionId or a userId. ' +
          'The identifiers are opaque and never shown in answers, logs or metrics. Any other field refuses the call (400, naming it): ' +
          'a misspelled eventId or time is not dropped.',
        required: ['kind', 'itemId'],
        additionalProperties: false,
        properties: {
          kind: { enum: ['view', 'purchase'], description: 'view or purchase.' },
          itemId: { oneOf: [itemId('The item viewed or bought; it may have no record yet.'), { type: 'string', pattern: '^0*[0-9]{1,16}$' }] },
          sessionId: { type: 'string', minLength: 1, maxLength: MAX_IDENTIFIER_LENGTH, description: 'The browsing session.' },
          userId: { type: 'string', minLength: 1, maxLength: MAX_IDENTIFIER_LENGTH, description: 'The shopper, across sessions.' },
          orderId: { type: 'string', minLength: 1, maxLength: MAX_IDENTIFIER_LENGTH, description: 'The order of a purchase.' },
          time: {
            oneOf: [{ type: 'string', format: 'date-time' }, { type: 'integer', minimum: 0, description: 'Milliseconds since 1970.' }],
            description: 'When it happened, at most a day ahead; now when absent.',
          },
          eventId: {
            type: 'string', minLength: 1, maxLength: MAX_IDENTIFIER_LENGTH,
            description: 'Your own id for the event: one stored before (or earlier in the call) is not stored again, so a call may be sent again safely.',
          },
        },
      },
      RecordedEvents: {
        type: 'object',
        required: ['accepted'],
        properties: {
          accepted: { type: 'integer', minimum: 0, description: 'How many events were taken: all of the call\'s, duplicates included.' },
          duplicates: { type: 'integer', minimum: 0, description: 'Of them, those whose eventId was stored before, not stored again; absent where unknown.' },
          itemsWithoutRecord: { type: 'integer', minimum: 0, description: 'Items named by the call that still have no record; absent where unknown.' },
        },
      },
      UpsertedItems: {
        type: 'object',
        required: ['upserted'],
        properties: { upserted: { type: 'integer', minimum: 0, description: 'How many items were stored: one for each itemId of the call, a record sent twice counted once.' } },
      },
    },
    responses: {
      KeyBadRequest: keyResponse('A request the key service refuses: a bad field, a name taken, an unknown username.', [{ id: 'name', message: 'An API key named ci-key already exists for this user' }]),
      KeyUnauthorized: keyResponse(
        'No, bad, unknown, expired or deleted credentials. A request with no credentials, or with Basic ones, is challenged.',
        [{ id: '*', message: 'Authentication required: send a valid API key or credentials in the Authorization header' }],
        { 'WWW-Authenticate': ref('headers', 'WWW-Authenticate') },
      ),
      KeyForbidden: keyResponse('Not permitted: a non-administrator acting for another user.', [{ id: '*', message: 'Operation is not permitted' }]),
      KeyRateLimited: keyResponse('Too many requests, or too many failed sign-ins.', [{ id: '*', message: 'Too many requests: retry in 1 s' }], { 'Retry-After': ref('headers', 'Retry-After') }),
      KeyBadGateway: keyResponse('The upstream key service refused the gateway.', [{ id: '*', message: "The apikeys service refused the gateway's request: unexpected HTTP 418" }]),
      KeyUnavailable: keyResponse('The key service is unavailable or did not answer in time.', [{ id: '*', message: 'The apikeys service is unavailable: HTTP 503' }], { 'Retry-After': ref('headers', 'Retry-After') }),
      RecsBadRequest: {
        description: `A malformed request (code ${RecsErrorCode.BAD_REQUEST}), or an unknown anchor item (code ${RecsErrorCode.INVALID_ITEM}, Invalid itemId).`,
        content: jsonContent(ref('schemas', 'RecsErrors'), { errors: [{ code: RecsErrorCode.INVALID_ITEM, message: 'Invalid itemId' }] }),
      },
      RecsAccountInactive: recsResponse(
        'A missing, unknown, deleted or malformed apiKey: Account Inactive, with no hint which.',
        RecsErrorCode.ACCOUNT_INACTIVE, 'Account Inactive',
      ),
      RecsRateLimited: recsResponse('Too many requests.', 429, 'Too Many Requests', { 'Retry-After': ref('headers', 'Retry-After') }),
      RecsBadGateway: recsResponse('The upstream recommendation service refused the gateway.', 502, 'Bad Gateway'),
      RecsUnavailable: recsResponse('The recommendation service is unavailable or did not answer in time.', 503, 'Service Unavailable', { 'Retry-After': ref('headers', 'Retry-After') }),
    },
    parameters: {
      itemId: {
        name: 'itemId',
        in: 'query',
        required: true,
        description: 'The anchor item\'s identifier, given once.',
        schema: itemId('Item identifier.'),
        example: 31000005,
      },
    },
    headers: {
      'WWW-Authenticate': { description: 'Basic realm="recs-gateway"', schema: { type: 'string' } },
      'Retry-After': { description: 'Seconds to wait before trying again.', schema: { type: 'integer', minimum: 0 } },
    },
    securitySchemes: {
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
    },
  },
};

/** Encoded once: the description changes only with the code. */
const body = JSON.stringify(openApiDocument);
const etag = `"${hash('sha256', body, 'base64url').slice(0, 27)}"`;

/** Whether an If-None-Match value names this version (a list, weak or strong, or *). */
function matches(ifNoneMatch: string | undefined): boolean {
  if (ifNoneMatch === undefined) return false;
  return ifNoneMatch.split(',').some((tag) => {
    const value = tag.trim();
    return value === '*' || value === etag || value === `W/${etag}`;
  });
}

/** GET or HEAD /openapi.json (the router refuses other methods): the description, cacheable for five minutes and revalidated by its ETag. */
export function openApiResponse(ifNoneMatch: string | undefined): RestResponse {
  const headers = { etag, 'cache-control': 'public, max-age=300' };
  if (matches(ifNoneMatch)) return { status: 304, headers, body: '' };
  return {
    status: 200,
    headers: { ...headers, 'content-type': 'application/json; charset=utf-8', 'content-length': String(Buffer.byteLength(body)) },
    body,
  };
}
