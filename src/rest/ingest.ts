import { badUserInput, ErrorCode, isGatewayError, unauthenticated } from '../errors.js';
import { attributeValueRefusal, checkCallSize, itemNumberRefusal, isoTimeProblem, parseIsoTime } from '../model/ingest.js';
import { ITEM_ID_RANGE, ItemRecordError, droppedField, numberWithoutDigits, parseItemRecord, toItemId, unknownNestedField } from '../model/itemRecord.js';
import type { CallOptions, EventInputModel, EventKindModel, IngestService, ItemModel, KeyService, PrincipalModel } from '../ports/backend.js';
import { header, json } from './types.js';
import { unknownField } from './unknownField.js';
import type { RestRequest, RestResponse } from './types.js';
import type { Logger } from '../logger.js';
import { CallerGone } from '../shared/callSignal.js';

/** The REST twins of recordEvents and upsertItems, `POST /v1/events` and `PUT /v1/items`: authenticated by the
 * Authorization header as the key interface is, answered in the recommendations interface's error body with
 * GraphQL's messages (index and field), so a client learns one set of refusals. */

const EVENTS = '/v1/events';
const ITEMS = '/v1/items';
const CHALLENGE = { 'www-authenticate': 'Basic realm="recs-gateway"' };

/** The twins' error body, as the recommendations interface's. */
export const errorBody = (code: number, message: string): { errors: { code: number; message: string }[] } => ({
  errors: [{ code, message }],
});

/** Which twin a request is for: POST /v1/events (any method there), PUT /v1/items; null for neither. */
export function ingestRoute(method: string | undefined, pathname: string): 'events' | 'items' | null {
  const path = pathname.length > 1 ? pathname.replace(/\/+$/, '') : pathname;
  if (path === EVENTS) return 'events';
  // GET /v1/items is the product lookup's
  if (path === ITEMS && (method ?? 'GET').toUpperCase() === 'PUT') return 'items';
  return null;
}

/** The one place an error becomes a twin's response. */
export function ingestErrorResponse(error: unknown, authorization: string | undefined, log?: Logger): RestResponse {
  // nobody is there to read it: no failure of ours to log
  if (error instanceof CallerGone) return json(503, errorBody(503, error.message));
  if (!isGatewayError(error)) {
    log?.error({ err: error }, 'ingestion request failed');
    return json(500, errorBody(500, 'Internal server error'));
  }
  switch (error.code) {
    case ErrorCode.UNAUTHENTICATED: {
      // only a client that may answer with a password is invited to
      const challenge = authorization === undefined || /^\s*basic\s/i.test(authorization);
      return json(401, errorBody(401, error.message), challenge ? CHALLENGE : {});
    }
    case ErrorCode.FORBIDDEN:
      return json(403, error.scope !== undefined ? { errors: [{ code: 403, message: error.message, scope: error.scope }] } : errorBody(403, error.message));
    case ErrorCode.BAD_USER_INPUT:
    case ErrorCode.BAD_REQUEST:
      return json(400, errorBody(4000, error.message));
    case ErrorCode.RATE_LIMITED:
      return json(429, errorBody(429, error.message), { 'retry-after': String(Math.ceil(error.retryAfter ?? 1)) });
    case ErrorCode.QUOTA_EXCEEDED:
      return json(429, { errors: [{ code: 429, message: error.message, reason: error.code }] }, { 'retry-after': String(Math.ceil(error.retryAfter ?? 1)) });
    case ErrorCode.UPSTREAM_UNAVAILABLE:
      return json(503, errorBody(503, error.message), error.retryAfter ? { 'retry-after': String(Math.ceil(error.retryAfter)) } : {});
    case ErrorCode.UPSTREAM_REJECTED:
      return json(502, errorBody(502, error.message));
    default:
      return json(500, errorBody(500, 'Internal server error'));
  }
}

/** A body over the limit, answered before it is read to its end (the connection goes with it). */
export function ingestBodyTooLarge(limit: number): RestResponse {
  return json(413, errorBody(413, `Request body larger than ${limit} bytes: send fewer events or records a call`), { connection: 'close' });
}

/** A batch sent as anything but JSON (a form, text/plain: what a cross-site page can POST), unread. */
export function ingestNotJson(): RestResponse {
  return json(415, errorBody(415, 'Send the batch as JSON: Content-Type: application/json'), { connection: 'close' });
}

/** A batch sent compressed (Content-Encoding), unread: the twins' error body, with the headers given (src/http/body.ts encodingRefusal). */
export function ingestUnsupportedEncoding(message: string, headers: Record<string, string>): RestResponse {
  return json(415, errorBody(415, message), headers);
}

const fail = (what: string, index: number, field: string, message: string): never => {
  throw badUserInput(`${what}[${index}].${field}: ${message}`, `${what}[${index}].${field}`);
};

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function identifier(raw: Record<string, unknown>, index: number, field: 'sessionId' | 'userId' | 'orderId' | 'eventId' | 'trackingId'): string | null {
  const value = raw[field];
  if (value === undefined || value === null) return null;
  // checkEvents bounds its length; the value itself is never echoed
  if (typeof value !== 'string') fail('events', index, field, 'must be a string');
  return value as string;
}

function timeOf(value: unknown, index: number, now: number): number {
  if (value === undefined || value === null) return now;
  if (typeof value === 'number' && Number.isSafeInteger(value)) return value;
  const ms = typeof value === 'string' ? parseIsoTime(value) : null;
  if (ms !== null) return ms;
  const problem = typeof value === 'string' ? isoTimeProblem(value) : null;
  return fail('events', index, 'time', `must be an ISO 8601 date with an offset (2026-11-23T06:40:00Z or +01:00) or whole milliseconds since 1970${problem === null ? '' : `: ${problem}`}`);
}

const KINDS: Record<string, EventKindModel> = { view: 'VIEW', purchase: 'PURCHASE' };

/** An event's fields (GraphQL's EventInput, with kind in lower case); any other is refused, as EventInput refuses it. */
const EVENT_FIELDS = ['kind', 'itemId', 'sessionId', 'userId', 'orderId', 'time', 'eventId', 'trackingId'] as const;
const EVENT_FIELD_SET: ReadonlySet<string> = new Set(EVENT_FIELDS);
/** The first field of `raw` an event does not have, or null. Dropped silently, a misspelled
 * `eventID` lost the event's idempotency key (a retry stored it twice) and a misspelled `tme` its
 * time (it became now): refused instead, naming the field and the one it is closest to. */
function unknownEventField(raw: Record<string, unknown>): { field: string; message: string } | null {
  for (const name in raw) {
    if (EVENT_FIELD_SET.has(name)) continue;
    return unknownField(name, EVENT_FIELDS, `an event has only ${EVENT_FIELDS.join(', ')}`);
  }
  return null;
}

/** The first field of a record (then of its nested objects) that an item record does not have, or null: dropped
 * silently, a misspelled salesPrice or catgoryPath would leave the item without it. A parsed item has every
 * field the interface knows, absent ones undefined; GraphQL's upsertItems refuses it alike. */
function unknownItemField(raw: Record<string, unknown>, item: ItemModel): { field: string; message: string } | null {
  for (const name in raw) {
    // its own fields only: `constructor` or `toString` are no item fields
    if (Object.hasOwn(item, name)) continue;
    return unknownField(name, Object.keys(item), 'an item record has no such field (recommendations.md)');
  }
  const nested = unknownNestedField(raw);
  if (nested === null) return null;
  // its path in the record, as GraphQL's input types refuse it: `imageEntities[0].bogus`
  const { field, message } = unknownField(nested.name, nested.fields, `${nested.has} ${nested.fields.join(', ')}`);
  return { field: `${nested.path}.${field}`, message };
}

/** The events of a POST /v1/events body: a JSON array of `{"kind":"view"|"purchase","itemId",
 * "sessionId"?,"userId"?,"orderId"?,"time"?,"eventId"?,"trackingId"?}` (time as ISO 8601 with an offset, or ms; now when absent). Checks
 * their form; checkEvents (src/model/ingest.ts), in the backend, checks the rest. */
export function parseEvents(body: unknown, now: number = Date.now()): EventInputModel[] {
  if (!Array.isArray(body)) throw badUserInput('The request body must be a JSON array of events', 'events');
  checkCallSize('events', body.length);
  const events: EventInputModel[] = new Array<EventInputModel>(body.length);
  for (let i = 0; i < body.length; i++) {
    const raw: unknown = body[i];
    if (!isObject(raw)) throw badUserInput(`events[${i}]: must be a JSON object`, `events[${i}]`);
    const unknown = unknownEventField(raw);
    if (unknown !== null) fail('events', i, unknown.field, unknown.message);
    const kind = typeof raw.kind === 'string' ? KINDS[raw.kind.toLowerCase()] : undefined;
    if (kind === undefined) fail('events', i, 'kind', 'must be "view" or "purchase"');
    const itemId = toItemId(raw.itemId);
    if (itemId === null) fail('events', i, 'itemId', `must be ${ITEM_ID_RANGE}`);
    events[i] = {
      kind: kind!,
      itemId: itemId!,
      sessionId: identifier(raw, i, 'sessionId'),
      userId: identifier(raw, i, 'userId'),
      orderId: identifier(raw, i, 'orderId'),
      time: timeOf(raw.time, i, now),
      eventId: identifier(raw, i, 'eventId'),
      trackingId: identifier(raw, i, 'trackingId'),
    };
  }
  return events;
}

/** The records of a PUT /v1/items body: a JSON array of item records (recommendations.md). */
export function parseItems(body: unknown): ItemModel[] {
  if (!Array.isArray(body)) throw badUserInput('The request body must be a JSON array of item records', 'items');
  checkCallSize('items', body.length);
  return body.map((raw: unknown, i) => {
    if (!isObject(raw)) throw badUserInput(`items[${i}]: must be a JSON object`, `items[${i}]`);
    let item: ItemModel;
    try {
      item = parseItemRecord(raw);
    } catch (error) {
      if (error instanceof ItemRecordError) return fail('items', i, 'itemId', `must be ${ITEM_ID_RANGE}`);
      throw error;
    }
    // Upstream records are read loosely (a field of the wrong type dropped); one sent to be stored is refused instead.
    const unknown = unknownItemField(raw, item);
    if (unknown !== null) return fail('items', i, unknown.field, unknown.message);
    const inexact = numberWithoutDigits(raw);
    if (inexact !== null) {
      return fail('items', i, inexact, `a number here must be a whole number from 0 to ${Number.MAX_SAFE_INTEGER}, kept as its digits: send any other code as a string`);
    }
    const dropped = droppedField(raw, item);
    if (dropped !== null) {
      const message = itemNumberRefusal(dropped.path, dropped.value) ?? attributeValueRefusal(dropped.path) ?? 'has the wrong type for an item record (recommendations.md)';
      return fail('items', i, dropped.path, message);
    }
    return item;
  });
}

/** The twins; null when the request is for neither (see ingestRoute). */
export function serveIngest(req: RestRequest, keys: KeyService, ingest: IngestService): Promise<RestResponse> | null {
  const route = ingestRoute(req.method, req.path);
  if (route === null) return null;
  return handle(req, route, keys, ingest);
}

async function handle(req: RestRequest, route: 'events' | 'items', keys: KeyService, ingest: IngestService): Promise<RestResponse> {
  if (route === 'events' && req.method !== 'POST') {
    return json(405, errorBody(405, `Method ${req.method} not allowed`), { allow: 'POST' });
  }
  return asCaller(req, keys, async (principal, options) => {
    if (route === 'events') {
      const result = await ingest.recordEvents(principal, parseEvents(req.body), options);
      const body: Record<string, number> = { accepted: result.accepted };
      if (result.duplicates != null) body.duplicates = result.duplicates;
      if (result.itemsWithoutRecord !== null) body.itemsWithoutRecord = result.itemsWithoutRecord;
      return json(200, body);
    }
    const result = await ingest.upsertItems(principal, parseItems(req.body), options);
    return json(200, { upserted: result.upserted });
  });
}

/** Runs `answer` for the caller the Authorization header names; any refusal in the twins' error body. */
export async function asCaller(req: RestRequest, keys: KeyService, answer: (principal: PrincipalModel, options: CallOptions) => Promise<RestResponse>): Promise<RestResponse> {
  const authorization = header(req, 'authorization');
  const options: CallOptions = {};
  if (req.signal) options.signal = req.signal;
  if (req.clientAddress !== undefined) options.clientAddress = req.clientAddress;
  try {
    if (authorization === undefined || authorization.trim() === '') throw unauthenticated();
    return await answer(await keys.authenticate(authorization, options), options);
  } catch (error) {
    return ingestErrorResponse(error, authorization, req.log);
  }
}
