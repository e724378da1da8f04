import type { OpenAPIV3, OpenAPIV3_1 } from 'openapi-types';
import { MAX_TRACKING_ID_LENGTH } from '../model/trackingId.js';
import { MAX_KEY_DAILY_QUOTA, MAX_KEY_RATE_PER_SECOND, MAX_ROTATION_GRACE_SECONDS, DEFAULT_ROTATION_GRACE_SECONDS, type CreateApiKeyInput, type UpdateApiKeyInput, type EventInputModel, type GiftOptionsModel, type ImageEntityModel, type ItemModel, type MarketplacePriceModel } from '../ports/backend.js';
import { API_KEY_SCOPES } from '../model/scopes.js';
import { MAX_IDENTIFIER_LENGTH } from '../model/ingest.js';
import { DECIMAL_TEXT } from '../model/itemRecord.js';
import { MAX_LOOKUP_IDS, RecsErrorCode } from './recommendations.js';

/* The schemas of the REST bodies, requests and answers, as the OpenAPI description
 * (src/rest/openapi.ts) lists them under components.schemas, and the helpers its other parts build with. */

export type Reference = OpenAPIV3_1.ReferenceObject;
export type SchemaObject = OpenAPIV3_1.SchemaObject;
export type Schema = SchemaObject | Reference;
type MediaType = OpenAPIV3_1.MediaTypeObject;

/** A request body's properties: one per field of the model its validator builds (src/ports/backend.ts),
 * so that a field added to the model and not to its description, or the reverse, fails to compile. */
type FieldsOf<Model> = Record<keyof Model, Schema>;

const JSON_TYPE = 'application/json';
export const ref = (kind: 'schemas' | 'responses' | 'parameters' | 'headers', name: string): Reference => ({ $ref: `#/components/${kind}/${name}` });
export const jsonContent = (schema: Schema, example?: unknown): Record<string, MediaType> => ({
  [JSON_TYPE]: example === undefined ? { schema } : { schema, example },
});

const str = (description?: string): SchemaObject => (description ? { type: 'string', description } : { type: 'string' });
const url = (description?: string): SchemaObject => ({ ...str(description), format: 'uri' });
const num = (description?: string): SchemaObject => (description ? { type: 'number', description } : { type: 'number' });
const bool = (description?: string): SchemaObject => (description ? { type: 'boolean', description } : { type: 'boolean' });
/** Also a parameter's schema, which the library types as 3.0's. */
export const itemId = (description: string): OpenAPIV3.NonArraySchemaObject => ({ type: 'integer', format: 'int64', minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description });

/** The item record as src/backends/itemRecord.ts's toItemRecord serves it (the fields of
 * schema/items.graphql's Item, with customerRating as text and attributes as an object). Only
 * itemId is always there; a field the record does not have is left out, never null. */
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
  } satisfies FieldsOf<ItemModel>,
};

const SCOPES: SchemaObject = { type: 'array', uniqueItems: true, items: { type: 'string', enum: [...API_KEY_SCOPES] } };
const SCOPE_NEEDED: SchemaObject = {
  type: 'string', enum: [...API_KEY_SCOPES], description: 'With a 403 for a key without the scope the request needs: that scope.',
};

const QUOTA_REASON = {
  const: 'QUOTA_EXCEEDED',
  description: 'On a 429: the key made its dailyQuota this UTC day; Retry-After is the time to midnight UTC. Absent for a rate limit.',
} as const;

const keyErrors: SchemaObject = {
  type: 'array',
  description: 'The key service\'s error body: one entry per problem, id naming the field or * for the request as a whole.',
  minItems: 1,
  items: {
    type: 'object',
    required: ['id', 'message'],
    properties: { id: str('The field at fault, or *.'), message: str(), scope: SCOPE_NEEDED, reason: QUOTA_REASON },
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
          scope: SCOPE_NEEDED,
          reason: QUOTA_REASON,
        },
      },
    },
  },
};


/** components.schemas: every body the description names. */
export const schemas: Record<string, SchemaObject> = {
  ApiKeyRecord: {
    type: 'object',
    description: 'An API key\'s metadata, as the list answers it.',
    required: ['id', 'userId', 'name', 'createdAt', 'expiresAt', 'lastUsedAt', 'scopes'],
    properties: {
      id: { type: 'string', format: 'uuid', description: 'Identifier of the key.' },
      userId: { type: 'string', format: 'uuid', description: 'Identifier of the owning user.' },
      name: str('The name given at creation, or key#<n> where n is one more than the highest such number the user has.'),
      createdAt: { type: ['string', 'null'], format: 'date-time', description: 'Null where the key service does not say.' },
      expiresAt: { type: ['string', 'null'], format: 'date-time', description: 'Null for a key that does not expire.' },
      lastUsedAt: { type: ['string', 'null'], format: 'date-time', description: 'About when the key last authenticated a request (updated at most once a minute); null if never or not known.' },
      scopes: { ...SCOPES, description: 'What the key may do, within its user\'s rights.' },
      rateLimitPerSecond: { type: ['integer', 'null'], description: 'Requests a second the key may make, beyond the gateway\'s limits; null: none of its own.' },
      dailyQuota: { type: ['integer', 'null'], description: 'Requests the key may make per UTC day; null: no quota.' },
    },
  },
  ApiKeyUsage: {
    type: 'object',
    required: ['id', 'usage'],
    properties: {
      id: { type: 'string', format: 'uuid', description: 'Identifier of the key.' },
      usage: {
        type: 'array',
        description: 'Newest first; days without requests are left out. Counted in memory and written every few seconds.',
        items: {
          type: 'object',
          required: ['day', 'requests', 'refused'],
          properties: {
            day: { type: 'string', pattern: '^\\d{4}-\\d{2}-\\d{2}$', description: 'The UTC day, YYYY-MM-DD.' },
            requests: { type: 'integer', minimum: 0, description: 'Requests the key authenticated that day, refused ones included.' },
            refused: { type: 'integer', minimum: 0, description: 'Of those, the ones refused 429 for a rate limit or the key\'s quota.' },
          },
        },
      },
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
      scopes: {
        ...SCOPES,
        minItems: 1,
        description: 'What the key may do; every scope the caller may give when omitted. RECOMMENDATIONS_READ alone is a publishable key. ' +
          'A scope the caller lacks is refused (403, naming it).',
      },
      rateLimitPerSecond: {
        type: ['integer', 'null'], minimum: 1, maximum: MAX_KEY_RATE_PER_SECOND,
        description: 'Requests a second the key may make, on top of the gateway\'s limits; none of its own when omitted or null. A key caller gives no more than its own key has (403).',
      },
      dailyQuota: {
        type: ['integer', 'null'], minimum: 1, maximum: MAX_KEY_DAILY_QUOTA,
        description: 'Requests the key may make per UTC day, then 429 (reason QUOTA_EXCEEDED) until midnight UTC; none when omitted or null.',
      },
    } satisfies FieldsOf<CreateApiKeyInput>,
    additionalProperties: false,
    description: 'Any other field is refused (400), naming it.',
  },
  UpdateApiKeyRequest: {
    type: 'object',
    properties: {
      name: { type: 'string', pattern: '^[0-9a-zA-Z][0-9a-zA-Z_@.\\-~]{2,127}$', description: 'The new name, unique per user.' },
      scopes: { ...SCOPES, minItems: 1, description: 'The new scopes: narrowing only, unless the caller holds those added (403 naming one it lacks).' },
      rateLimitPerSecond: {
        type: ['integer', 'null'], minimum: 1, maximum: MAX_KEY_RATE_PER_SECOND,
        description: 'The new rate, null to remove it. A key caller may lower its own limits, never raise them (403).',
      },
      dailyQuota: { type: ['integer', 'null'], minimum: 1, maximum: MAX_KEY_DAILY_QUOTA, description: 'The new daily quota, null to remove it; raised as rateLimitPerSecond.' },
    } satisfies FieldsOf<UpdateApiKeyInput>,
    additionalProperties: false,
    description: 'A field left out stays as it is; any other field is refused (400), naming it.',
  },
  RotateApiKeyRequest: {
    type: 'object',
    properties: {
      gracePeriodSeconds: {
        type: 'integer', minimum: 0, maximum: MAX_ROTATION_GRACE_SECONDS, default: DEFAULT_ROTATION_GRACE_SECONDS,
        description: 'How long the old value keeps working, in seconds (0: it stops at once).',
      },
    },
    additionalProperties: false,
  },
  RotatedApiKey: {
    type: 'object',
    required: ['ok', 'id', 'key', 'apiKey'],
    properties: {
      ok: { const: true },
      id: { type: 'string', format: 'uuid', description: 'Identifier of the key: the same as before.' },
      key: { type: 'string', pattern: '^[A-Za-z0-9+/]{22}$', description: 'The key\'s new value, shown this once.' },
      apiKey: { $ref: '#/components/schemas/ApiKeyRecord' },
    },
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
  ForYouList: {
    type: 'object',
    description: 'A shopper\'s list: entries best first, and the records of their items. An object, so that fields naming the list may join it.',
    required: ['entries', 'items'],
    properties: {
      entries: {
        type: 'array',
        maxItems: 50,
        items: {
          type: 'object',
          required: ['rank', 'itemId', 'score', 'source', 'because'],
          properties: {
            rank: { type: 'integer', minimum: 1 },
            itemId: { type: 'integer', minimum: 1 },
            score: { type: ['number', 'null'], description: 'The summed score; null for a popular fill.' },
            source: { type: 'string', enum: ['CO_VIEW', 'CO_PURCHASE', 'CATEGORY', 'DEPARTMENT', 'POPULAR', 'UPSTREAM'] },
            because: { type: ['integer', 'null'], description: 'The shopper\'s viewed or bought item that brought it; null for a popular fill.' },
          },
        },
      },
      items: { type: 'array', maxItems: 50, items: ref('schemas', 'ItemRecord') },
    },
  },
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
    } satisfies FieldsOf<MarketplacePriceModel>,
  },
  GiftOptions: {
    type: 'object',
    properties: { allowGiftWrap: bool(), allowGiftMessage: bool(), allowGiftReceipt: bool() } satisfies FieldsOf<GiftOptionsModel>,
  },
  ImageEntity: {
    type: 'object',
    properties: {
      thumbnailImage: url(), mediumImage: url(), largeImage: url(),
      entityType: str('PRIMARY or SECONDARY.'),
    } satisfies FieldsOf<ImageEntityModel>,
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
      trackingId: {
        type: 'string', minLength: 1, maxLength: MAX_TRACKING_ID_LENGTH,
        description: 'The trackingId of the recommendation list the item was picked from: a view with it is a click, a purchase a conversion; one the gateway did not give refuses the call (400).',
      },
    } satisfies FieldsOf<EventInputModel>,
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
};
