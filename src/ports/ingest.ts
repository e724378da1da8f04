import { badUserInput, forbidden, type GatewayError } from '../errors.js';
import type { EventInputModel, ItemModel } from '../ports/backend.js';

/** At most this many events a recordEvents call or POST /v1/events (issue 20). */
export const MAX_EVENTS_PER_CALL = 10_000;
/** At most this many item records an upsertItems call or PUT /v1/items. */
export const MAX_ITEMS_PER_CALL = 1_000;
/** Session, user and order identifiers are opaque strings of at most this many characters. */
export const MAX_IDENTIFIER_LENGTH = 200;
/** An event may be dated at most this far in the future (clock skew between shops and us). */
export const MAX_FUTURE_SKEW_MS = 24 * 3600 * 1000;

const ISO_8601 = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/;

/**
 * An event's time as ISO 8601 text (2026-11-23, 2026-11-23T06:40:00Z, with an offset or a
 * fraction), in ms since 1970; null for anything else. Stricter than Date.parse, which takes "1"
 * or "March 7" for dates in 2001 and rolls 2026-02-31 over into March: such a time would be kept
 * as another than the one meant. GraphQL's DateTime and POST /v1/events both read it.
 */
export function parseIsoTime(text: string): number | null {
  const match = ISO_8601.exec(text);
  if (match === null) return null;
  const [, year, month, day, hour = '0', minute = '0'] = match;
  if (new Date(Date.UTC(Number(year), Number(month) - 1, Number(day))).getUTCDate() !== Number(day) || Number(hour) > 23 || Number(minute) > 59) return null;
  const ms = Date.parse(text);
  return Number.isFinite(ms) ? ms : null;
}

/** What a caller who is no administrator gets from recordEvents, upsertItems and their REST twins. */
export const ingestForbidden = (): GatewayError => forbidden('Only administrators may send events and item records');

const fail = (index: number, field: string, message: string): never => {
  throw badUserInput(`events[${index}].${field}: ${message}`, `events[${index}].${field}`);
};

function checkIdentifier(value: string | null, index: number, field: string): void {
  if (value === null) return;
  if (value.length === 0) fail(index, field, 'must not be empty');
  if (value.length > MAX_IDENTIFIER_LENGTH) fail(index, field, `at most ${MAX_IDENTIFIER_LENGTH} characters`);
  // PostgreSQL's text cannot hold it (a 500 there, kept in SQLite): refused alike on both
  if (value.includes('\u0000')) fail(index, field, 'must not contain the NUL character (\\u0000)');
}

/**
 * Checks a whole call's events before any is kept (a call is atomic): the count, each item id, the
 * identifiers a kind needs (a view a sessionId or userId; a purchase an orderId, sessionId or
 * userId), their lengths, and the time (not before the epoch, at most a day ahead of `now`).
 * Throws BAD_USER_INPUT naming the first bad event's index and field; returns the events as given.
 * The GraphQL resolvers, the served REST route and the import command all go through it.
 */
export function checkEvents(events: readonly EventInputModel[], now: number = Date.now()): readonly EventInputModel[] {
  if (events.length > MAX_EVENTS_PER_CALL) {
    throw badUserInput(`At most ${MAX_EVENTS_PER_CALL} events a call, got ${events.length}`, 'events');
  }
  for (let i = 0; i < events.length; i++) {
    const e = events[i]!;
    if (e.kind !== 'VIEW' && e.kind !== 'PURCHASE') fail(i, 'kind', 'must be VIEW or PURCHASE');
    if (!Number.isSafeInteger(e.itemId) || e.itemId < 1) fail(i, 'itemId', 'must be a positive integer');
    checkIdentifier(e.sessionId, i, 'sessionId');
    checkIdentifier(e.userId, i, 'userId');
    checkIdentifier(e.orderId, i, 'orderId');
    if (e.kind === 'VIEW' && e.sessionId === null && e.userId === null) fail(i, 'sessionId', 'a view needs a sessionId or a userId');
    if (e.kind === 'PURCHASE' && e.orderId === null && e.sessionId === null && e.userId === null) {
      fail(i, 'orderId', 'a purchase needs an orderId, a sessionId or a userId');
    }
    if (!Number.isFinite(e.time) || e.time < 0) fail(i, 'time', 'must be a date after 1970');
    if (e.time > now + MAX_FUTURE_SKEW_MS) fail(i, 'time', 'must not be more than a day in the future');
  }
  return events;
}

/** Checks a whole call's item records (count, ids, names) before any is kept. */
export function checkItems(items: readonly ItemModel[]): readonly ItemModel[] {
  if (items.length > MAX_ITEMS_PER_CALL) {
    throw badUserInput(`At most ${MAX_ITEMS_PER_CALL} items a call, got ${items.length}`, 'items');
  }
  for (let i = 0; i < items.length; i++) {
    const item = items[i]!;
    if (!Number.isSafeInteger(item.itemId) || item.itemId < 1) {
      throw badUserInput(`items[${i}].itemId: must be a positive integer`, `items[${i}].itemId`);
    }
    if (typeof item.name !== 'string' || item.name.trim() === '') {
      throw badUserInput(`items[${i}].name: must be a non-empty string`, `items[${i}].name`);
    }
    checkAmounts(item, i);
  }
  return items;
}

/** Prices and shipping rates: at most this (a price of 1e308 is no price a shop shows). */
const MAX_AMOUNT = 1e9;
const AMOUNTS = ['msrp', 'salePrice', 'standardShipRate', 'twoThreeDayShippingRate', 'overnightShippingRate'] as const;

/** The numbers of a record a shopper is shown: amounts from 0 to MAX_AMOUNT, a rating from 0 to 5, a count of reviews. */
function checkAmounts(item: ItemModel, i: number): void {
  const fail = (field: string, message: string): never => {
    throw badUserInput(`items[${i}].${field}: ${message}`, `items[${i}].${field}`);
  };
  for (const field of AMOUNTS) {
    const value = item[field];
    if (value != null && !(value >= 0 && value <= MAX_AMOUNT)) fail(field, `must be from 0 to ${MAX_AMOUNT}`);
  }
  const price = item.bestMarketplacePrice?.price;
  if (price != null && !(price >= 0 && price <= MAX_AMOUNT)) fail('bestMarketplacePrice.price', `must be from 0 to ${MAX_AMOUNT}`);
  if (item.customerRating != null && !(item.customerRating >= 0 && item.customerRating <= 5)) fail('customerRating', 'must be from 0 to 5');
  if (item.numReviews != null && !(Number.isSafeInteger(item.numReviews) && item.numReviews >= 0)) fail('numReviews', 'must be a whole number, 0 or more');
}
