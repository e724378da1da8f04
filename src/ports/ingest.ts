import { badUserInput, forbidden, type GatewayError } from '../errors.js';
import type { EventInputModel, ItemModel } from '../ports/backend.js';
import { ITEM_ID_RANGE } from './itemRecord.js';

/** At most this many events a recordEvents call or POST /v1/events (issue 20). */
export const MAX_EVENTS_PER_CALL = 10_000;
/** At most this many item records an upsertItems call or PUT /v1/items. */
export const MAX_ITEMS_PER_CALL = 1_000;
/** Session, user and order identifiers are opaque strings of at most this many characters. */
export const MAX_IDENTIFIER_LENGTH = 200;
/** An event may be dated at most this far in the future (clock skew between shops and us). */
export const MAX_FUTURE_SKEW_MS = 24 * 3600 * 1000;

const DASH = 0x2d;
const COLON = 0x3a;
const DOT = 0x2e;
const PLUS = 0x2b;
const MINUS = 0x2d;
const SPACE = 0x20;
const LETTER_T = 0x54;
const LETTER_Z = 0x5a;
/** Setting this bit turns an ASCII capital into its small letter: T and t, Z and z read alike. */
const LOWER_CASE_BIT = 0x20;
const MS_PER_DAY = 86_400_000;

/** Two decimal digits at `i` as a number, -1 when either is not a digit (or is past the end). */
function twoDigits(text: string, i: number): number {
  const tens = text.charCodeAt(i) - 48;
  const ones = text.charCodeAt(i + 1) - 48;
  return tens >= 0 && tens <= 9 && ones >= 0 && ones <= 9 ? tens * 10 + ones : -1;
}

/** Days of a month (1-12); February of the year 0000 has 28, as the check of days always gave it (below). */
function daysInMonth(year: number, month: number): number {
  if (month !== 2) return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
  return year !== 0 && year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28;
}

/** Days from 1970-01-01 to a date of the proleptic Gregorian calendar (Hinnant's days_from_civil). */
function daysSinceEpoch(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yearOfEra = y - era * 400;
  const dayOfYear = Math.floor((153 * (month > 2 ? month - 3 : month + 9) + 2) / 5) + day - 1;
  const dayOfEra = yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear;
  return era * 146_097 + dayOfEra - 719_468;
}

/**
 * An event's time as ISO 8601 text, in ms since 1970; null for anything else. The forms:
 * YYYY-MM-DD, then T (or a space) and hh:mm, then optionally :ss and a fraction of 1 to 9 digits
 * (ms are its first three), then Z or an offset ±hh:mm or ±hhmm; T and Z may be t and z. The offset is required, as RFC
 * 3339 and graphql-scalars' DateTime require it: a time without one (a date alone, or
 * 2026-11-23T10:00:00) was read as UTC, an hour or more off for a shop that meant its local time,
 * and silently so. Stricter than Date.parse, which takes "1" or "March 7" for dates in 2001 and
 * rolls 2026-02-31 over into March: such a time would be kept as another than the one meant.
 * GraphQL's DateTime and POST /v1/events both read it, once per event: a batch of 5,000 spent a
 * tenth of its GraphQL CPU in the regular expression, the check of days and Date.parse this
 * replaces (BENCHMARKS.md).
 *
 * Of the texts with an offset, it takes exactly what that did (test/graphql/isoTime.test.ts
 * compares the two on generated texts), quirks included: with a space instead of T, Date.parse's
 * legacy parser took any offset without a colon (+9999) and one with a colon whose minutes are
 * below 60 (+99:59); with T, hours to 23 and minutes to 59. It differs where that was wrong:
 * Date.parse's legacy parser, which had the texts with a space and those with a month past 12,
 * read the years 0000-0099 as two-digit years, or as month-day-year (0001-13-01 was 2001-01-13,
 * 0012-01-01 00:00 2001-12-01), or refused them. Such a year is now the year it says, and a month
 * past 12 is refused. Whether the instant is one an event may have is eventTimeProblem's question.
 */
export function parseIsoTime(text: string): number | null {
  const length = text.length;
  if (length < 10 || text.charCodeAt(4) !== DASH || text.charCodeAt(7) !== DASH) return null;
  const century = twoDigits(text, 0);
  const yearOfCentury = twoDigits(text, 2);
  const month = twoDigits(text, 5);
  const day = twoDigits(text, 8);
  if (century < 0 || yearOfCentury < 0) return null;
  const year = century * 100 + yearOfCentury;
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return null;
  const midnight = daysSinceEpoch(year, month, day) * MS_PER_DAY;

  // RFC 3339 (5.6) allows t and z in lower case; graphql-scalars' DateTime and Date.parse take them
  const separator = text.charCodeAt(10) === SPACE ? SPACE : text.charCodeAt(10) & ~LOWER_CASE_BIT;
  if ((separator !== LETTER_T && separator !== SPACE) || text.charCodeAt(13) !== COLON) return null;
  const hour = twoDigits(text, 11);
  const minute = twoDigits(text, 14);
  if (hour < 0 || hour > 23 || minute < 0 || minute > 59) return null;
  let time = midnight + hour * 3_600_000 + minute * 60_000;
  let i = 16;
  if (i < length && text.charCodeAt(i) === COLON) {
    const second = twoDigits(text, i + 1);
    if (second < 0 || second > 59) return null;
    time += second * 1000;
    i += 3;
    if (i < length && text.charCodeAt(i) === DOT) {
      const start = ++i;
      let ms = 0;
      for (let d = text.charCodeAt(i) - 48; d >= 0 && d <= 9; d = text.charCodeAt(++i) - 48) {
        if (i - start < 3) ms = ms * 10 + d;
      }
      const digits = i - start;
      if (digits < 1 || digits > 9) return null;
      time += digits === 1 ? ms * 100 : digits === 2 ? ms * 10 : ms;
    }
  }
  if (i === length) return null;
  const zone = text.charCodeAt(i);
  if ((zone & ~LOWER_CASE_BIT) === LETTER_Z) return i + 1 === length ? time : null;
  if (zone !== PLUS && zone !== MINUS) return null;
  const offsetHours = twoDigits(text, i + 1);
  const colon = text.charCodeAt(i + 3) === COLON;
  const offsetMinutes = twoDigits(text, colon ? i + 4 : i + 3);
  if (offsetHours < 0 || offsetMinutes < 0 || (colon ? i + 6 : i + 5) !== length) return null;
  if (separator === LETTER_T ? offsetHours > 23 || offsetMinutes > 59 : colon && offsetMinutes > 59) return null;
  const offset = (offsetHours * 60 + offsetMinutes) * 60_000;
  return zone === PLUS ? time - offset : time + offset;
}

/**
 * Why parseIsoTime refused `text`, for its message: the part that is out of range (no day 30 in
 * February, hour 24, an offset of +25:00) or missing (the time of day, the offset); null when the
 * text is not in the form at all, which the message's example then shows. Only asked after a
 * refusal, so it walks the text again as parseIsoTime does rather than slow that down; it names
 * only the numbers read from the text, never the text itself.
 */
export function isoTimeProblem(text: string): string | null {
  const length = text.length;
  if (length < 10 || text.charCodeAt(4) !== DASH || text.charCodeAt(7) !== DASH) return null;
  const century = twoDigits(text, 0);
  const yearOfCentury = twoDigits(text, 2);
  const month = twoDigits(text, 5);
  const day = twoDigits(text, 8);
  if (century < 0 || yearOfCentury < 0 || month < 0 || day < 0) return null;
  const pad = (n: number): string => String(n).padStart(2, '0');
  const year = century * 100 + yearOfCentury;
  if (month < 1 || month > 12) return `month ${pad(month)} is out of range (01 to 12)`;
  const days = daysInMonth(year, month);
  if (day < 1 || day > days) return `${String(year).padStart(4, '0')}-${pad(month)} has no day ${pad(day)} (01 to ${days})`;
  if (length === 10) return 'it has no time of day and offset (T06:40:00Z)';
  const separator = text.charCodeAt(10) === SPACE ? SPACE : text.charCodeAt(10) & ~LOWER_CASE_BIT;
  const hour = twoDigits(text, 11);
  const minute = twoDigits(text, 14);
  if ((separator !== LETTER_T && separator !== SPACE) || text.charCodeAt(13) !== COLON || hour < 0 || minute < 0) return null;
  if (hour > 23) return `hour ${pad(hour)} is out of range (00 to 23)`;
  if (minute > 59) return `minute ${pad(minute)} is out of range (00 to 59)`;
  let i = 16;
  if (i < length && text.charCodeAt(i) === COLON) {
    const second = twoDigits(text, i + 1);
    if (second < 0) return null;
    if (second === 60) return 'second 60 (a leap second) is not taken: send 59';
    if (second > 59) return `second ${pad(second)} is out of range (00 to 59)`;
    i += 3;
    if (i < length && text.charCodeAt(i) === DOT) {
      const start = ++i;
      while (text.charCodeAt(i) >= 48 && text.charCodeAt(i) <= 57) i++;
      if (i - start < 1 || i - start > 9) return 'a fraction of a second has 1 to 9 digits';
    }
  }
  if (i === length) return 'it has no offset: add Z for UTC or the local offset (+01:00); without one the instant is not known';
  const zone = text.charCodeAt(i);
  if ((zone & ~LOWER_CASE_BIT) === LETTER_Z) return null;
  if (zone !== PLUS && zone !== MINUS) return null;
  const offsetHours = twoDigits(text, i + 1);
  const colon = text.charCodeAt(i + 3) === COLON;
  const offsetMinutes = twoDigits(text, colon ? i + 4 : i + 3);
  if (offsetHours < 0 || offsetMinutes < 0 || (colon ? i + 6 : i + 5) !== length) return null;
  if (offsetHours > 23 || offsetMinutes > 59) {
    return `offset ${String.fromCharCode(zone)}${pad(offsetHours)}:${pad(offsetMinutes)} is out of range (-23:59 to +23:59)`;
  }
  return null;
}

/**
 * Why an event may not have this time (ms since 1970), or null when it may: the range the store
 * keeps, from 1970 (the stores' integer ms, the model's recency, are counted from it) to a day
 * ahead of `now`. checkEvents asks it of every event, and GraphQL's DateTime of every input, so
 * that a time out of range is refused like a malformed one: by the scalar, a 400 before any
 * resolver runs (the year 0001 and the year 9999 were a 200 from the resolver).
 */
export function eventTimeProblem(time: number, now: number): string | null {
  if (!Number.isFinite(time) || time < 0) return 'must be a date after 1970';
  if (time > now + MAX_FUTURE_SKEW_MS) return 'must not be more than a day in the future';
  return null;
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
  // Nor a lone surrogate: node-postgres writes it as U+FFFD, so \uD800 and \uDC00 were one name
  // there (two eventIds one duplicate; two sessions one, or none) where SQLite kept them apart
  if (LONE_SURROGATE.test(value)) fail(index, field, 'must be well-formed Unicode (no lone surrogate, \\uD800 to \\uDFFF)');
}

/** A UTF-16 code unit of a surrogate pair standing alone (a pair, an emoji, is one code point here). */
const LONE_SURROGATE = /\p{Surrogate}/u;

/**
 * The one check of a call's size (MAX_EVENTS_PER_CALL, MAX_ITEMS_PER_CALL), on every path: the
 * backends' checks, the REST twins' parsers, and REST mode before it forwards a call upstream.
 */
export function checkCallSize(what: 'events' | 'items', n: number): void {
  const max = what === 'events' ? MAX_EVENTS_PER_CALL : MAX_ITEMS_PER_CALL;
  if (n > max) throw badUserInput(`At most ${max} ${what} a call, got ${n}`, what);
}

/**
 * Checks a whole call's events before any is kept (a call is atomic): the count, each item id, the
 * identifiers (eventId too), those a kind needs (a view a sessionId or userId; a purchase an orderId, sessionId or
 * userId), their lengths, and the time (not before the epoch, at most a day ahead of `now`).
 * Throws BAD_USER_INPUT naming the first bad event's index and field; returns the events as given.
 * The GraphQL resolvers, the served REST route and the import command all go through it.
 */
export function checkEvents(events: readonly EventInputModel[], now: number = Date.now()): readonly EventInputModel[] {
  checkCallSize('events', events.length);
  for (let i = 0; i < events.length; i++) {
    const e = events[i]!;
    if (e.kind !== 'VIEW' && e.kind !== 'PURCHASE') fail(i, 'kind', 'must be VIEW or PURCHASE');
    if (!Number.isSafeInteger(e.itemId) || e.itemId < 1) fail(i, 'itemId', `must be ${ITEM_ID_RANGE}`);
    checkIdentifier(e.sessionId, i, 'sessionId');
    checkIdentifier(e.userId, i, 'userId');
    checkIdentifier(e.orderId, i, 'orderId');
    checkIdentifier(e.eventId ?? null, i, 'eventId');
    if (e.kind === 'VIEW' && e.sessionId === null && e.userId === null) fail(i, 'sessionId', 'a view needs a sessionId or a userId');
    if (e.kind === 'PURCHASE' && e.orderId === null && e.sessionId === null && e.userId === null) {
      fail(i, 'orderId', 'a purchase needs an orderId, a sessionId or a userId');
    }
    const timeProblem = eventTimeProblem(e.time, now);
    if (timeProblem !== null) fail(i, 'time', timeProblem);
  }
  return events;
}

/**
 * The longest text an item record's fields may hold, in characters: what real catalogues need,
 * with room to spare (Google Merchant Center takes titles to 150, descriptions to 5,000, links to
 * 2,000 and product types to 750), so that a client's bug cannot keep megabytes an item in every
 * process's memory and the store. Descriptions may carry HTML markup, hence twice Google's 5,000.
 */
export const MAX_ITEM_TEXT_LENGTH = { description: 10_000, url: 2_000, other: 1_000 } as const;
/** At most this many attributes, images and variants a record (a catalogue has tens). */
export const MAX_ITEM_LIST_LENGTH = { attributes: 200, imageEntities: 100, variants: 1_000 } as const;

const DESCRIPTIONS = ['shortDescription', 'longDescription'] as const;
const URLS = ['thumbnailImage', 'mediumImage', 'largeImage', 'productTrackingUrl', 'productUrl', 'addToCartUrl', 'affiliateAddToCartUrl', 'customerRatingImage'] as const;
const SHORT_TEXTS = ['name', 'upc', 'categoryPath', 'categoryNode', 'brandName', 'color', 'size', 'gender', 'age', 'modelNumber', 'sellerInfo', 'rhid', 'stock', 'offerType'] as const;
const IMAGE_URLS = ['thumbnailImage', 'mediumImage', 'largeImage'] as const;

/** Checks a whole call's item records (count, ids, names, amounts, lengths) before any is kept. */
export function checkItems(items: readonly ItemModel[]): readonly ItemModel[] {
  checkCallSize('items', items.length);
  for (let i = 0; i < items.length; i++) {
    const item = items[i]!;
    if (!Number.isSafeInteger(item.itemId) || item.itemId < 1) {
      throw badUserInput(`items[${i}].itemId: must be ${ITEM_ID_RANGE}`, `items[${i}].itemId`);
    }
    if (typeof item.name !== 'string' || item.name.trim() === '') {
      throw badUserInput(`items[${i}].name: must be a non-empty string`, `items[${i}].name`);
    }
    checkAmounts(item, i);
    checkLengths(item, i);
  }
  return items;
}

/** Prices and shipping rates: at most this (a price of 1e308 is no price a shop shows). */
const MAX_AMOUNT = 1e9;
const AMOUNTS = ['msrp', 'salePrice', 'standardShipRate', 'twoThreeDayShippingRate', 'overnightShippingRate'] as const;
const MARKETPLACE_AMOUNTS = ['price', 'standardShipRate', 'twoThreeDayShippingRate'] as const;
const AMOUNT_RANGE = `must be from 0 to ${MAX_AMOUNT}`;
const RATING_RANGE = 'must be from 0 to 5';
const REVIEWS_RANGE = `must be a whole number from 0 to ${Number.MAX_SAFE_INTEGER}`;
const ID_RANGE = `must be ${ITEM_ID_RANGE}`;

/**
 * What each number of a record must be, by its path without an index (`variants`,
 * `bestMarketplacePrice.price`): checkAmounts' refusals and PUT /v1/items' say it alike.
 */
const NUMBER_RANGES: ReadonlyMap<string, string> = new Map([
  ...AMOUNTS.map((field) => [field, AMOUNT_RANGE] as const),
  ...MARKETPLACE_AMOUNTS.map((field) => [`bestMarketplacePrice.${field}`, AMOUNT_RANGE] as const),
  ['customerRating', RATING_RANGE],
  ['numReviews', REVIEWS_RANGE],
  ['parentItemId', ID_RANGE],
  ['variants', ID_RANGE],
]);

/** Ids are read from their digits too (toItemId); customerRating from its decimal text; every other number only as a JSON number. */
const ID_PATHS: ReadonlySet<string> = new Set(['parentItemId', 'variants']);
const RATING_FORMS = 'a JSON number, or the decimal as text: ASCII digits 0-9 with an optional fraction ("4.627")';

/**
 * The refusal of a value droppedField found in a record sent to be stored (PUT /v1/items) when it
 * is a number, or text that reads as one, for a numeric field: the field's range, as itemId's
 * refusal says it (`"parentItemId": 0`, `"numReviews": 2.5` and `"msrp": 1e400` were said to have
 * the wrong type, though numbers as the fields are), and for text what the field takes instead
 * (`"salePrice": "0x10"` was stored as 16, `"numReviews": "1e3"` as 1000). Null for anything
 * else: a wrong type. Number() only picks the message here; it reads no value that is kept.
 */
export function itemNumberRefusal(path: string, value: unknown): string | null {
  const field = path.replace(/\[\d+\]$/, '');
  const range = NUMBER_RANGES.get(field);
  if (range === undefined) return null;
  if (typeof value === 'number') return range;
  // customerRating is the one number a record may send as text: any text it cannot read ("",
  // fullwidth "３.５", Arabic-Indic "٣٫٥") is told the form it takes, not "the wrong type"
  if (field === 'customerRating' && typeof value === 'string') return `${range}, sent as ${RATING_FORMS}`;
  if (typeof value !== 'string' || value.trim() === '' || Number.isNaN(Number(value))) return null;
  if (ID_PATHS.has(field)) return range;
  return `${range}, sent as a JSON number, not text`;
}

/**
 * The refusal of an attribute's value that droppedField found in a record sent to be stored (PUT
 * /v1/items): recommendations.md has attributes map names to string values, as GraphQL's
 * ItemAttributeInput does. A number was stored as JavaScript writes it (1e21 as "1e+21", its text
 * as sent lost with JSON.parse), so every value that is not text is refused, naming the attribute.
 * Null for any other path.
 */
export function attributeValueRefusal(path: string): string | null {
  return path.startsWith('attributes.') || path.startsWith('attributes[') ? 'must be a string, as every attribute\'s value is (recommendations.md): send a number or true/false as text, in quotes' : null;
}

/** The numbers of a record a shopper is shown: amounts from 0 to MAX_AMOUNT, a rating from 0 to 5, a count of reviews. */
function checkAmounts(item: ItemModel, i: number): void {
  const fail = (field: string, message: string): never => {
    throw badUserInput(`items[${i}].${field}: ${message}`, `items[${i}].${field}`);
  };
  for (const field of AMOUNTS) {
    const value = item[field];
    if (value != null && !(value >= 0 && value <= MAX_AMOUNT)) fail(field, AMOUNT_RANGE);
  }
  const marketplace = item.bestMarketplacePrice;
  for (const field of MARKETPLACE_AMOUNTS) {
    const value = marketplace?.[field];
    if (value != null && !(value >= 0 && value <= MAX_AMOUNT)) fail(`bestMarketplacePrice.${field}`, AMOUNT_RANGE);
  }
  if (item.customerRating != null && !(item.customerRating >= 0 && item.customerRating <= 5)) fail('customerRating', RATING_RANGE);
  if (item.numReviews != null && !(Number.isSafeInteger(item.numReviews) && item.numReviews >= 0)) fail('numReviews', REVIEWS_RANGE);
}

const SCHEME = /^([a-z][a-z0-9+.-]*):/i;

/**
 * Whether a URL names a scheme other than http and https (javascript:, data:, vbscript:, ...), as
 * a browser reads it: tabs and newlines anywhere dropped, leading spaces and controls trimmed.
 */
function unsafeScheme(value: string): boolean {
  const cleaned = value.replace(/[\t\n\r]/g, '').replace(/^[\x00-\x20]+/, '');
  const scheme = SCHEME.exec(cleaned)?.[1];
  return scheme !== undefined && !/^https?$/i.test(scheme);
}

/** The texts and lists of a record, within MAX_ITEM_TEXT_LENGTH and MAX_ITEM_LIST_LENGTH; URLs of http, https or none. */
function checkLengths(item: ItemModel, i: number): void {
  const text = (value: string | null | undefined, field: string, max: number): void => {
    if (value != null && value.length > max) throw badUserInput(`items[${i}].${field}: at most ${max} characters`, `items[${i}].${field}`);
  };
  // A link a frontend renders: http, https or relative; a script or data URL in a shop's feed would run in shoppers' browsers.
  const url = (value: string | null | undefined, field: string): void => {
    text(value, field, MAX_ITEM_TEXT_LENGTH.url);
    if (value != null && unsafeScheme(value)) throw badUserInput(`items[${i}].${field}: must be an http or https URL, or a relative one`, `items[${i}].${field}`);
  };
  const list = (value: readonly unknown[] | null | undefined, field: keyof typeof MAX_ITEM_LIST_LENGTH): void => {
    const max = MAX_ITEM_LIST_LENGTH[field];
    if (value != null && value.length > max) throw badUserInput(`items[${i}].${field}: at most ${max} entries`, `items[${i}].${field}`);
  };
  for (const field of DESCRIPTIONS) text(item[field], field, MAX_ITEM_TEXT_LENGTH.description);
  for (const field of URLS) url(item[field], field);
  for (const field of SHORT_TEXTS) text(item[field], field, MAX_ITEM_TEXT_LENGTH.other);
  const offer = item.bestMarketplacePrice;
  text(offer?.sellerInfo, 'bestMarketplacePrice.sellerInfo', MAX_ITEM_TEXT_LENGTH.other);
  text(offer?.offerType, 'bestMarketplacePrice.offerType', MAX_ITEM_TEXT_LENGTH.other);
  list(item.attributes, 'attributes');
  item.attributes.forEach((attribute, a) => {
    text(attribute.name, `attributes[${a}].name`, MAX_ITEM_TEXT_LENGTH.other);
    text(attribute.value, `attributes[${a}].value`, MAX_ITEM_TEXT_LENGTH.other);
  });
  list(item.imageEntities, 'imageEntities');
  item.imageEntities?.forEach((image, m) => {
    for (const field of IMAGE_URLS) url(image[field], `imageEntities[${m}].${field}`);
    text(image.entityType, `imageEntities[${m}].entityType`, MAX_ITEM_TEXT_LENGTH.other);
  });
  list(item.variants, 'variants');
}
