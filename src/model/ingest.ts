import { badUserInput, forbidden, type GatewayError } from '../errors.js';
import type { EventInputModel, ItemModel } from '../ports/backend.js';
import { ITEM_ID_RANGE } from './itemRecord.js';

export const MAX_EVENTS_PER_CALL = 10_000;
export const MAX_ITEMS_PER_CALL = 1_000;
export const MAX_IDENTIFIER_LENGTH = 200;
/** How far in the future an event may be dated: clock skew between shops and us. */
export const MAX_FUTURE_SKEW_MS = 24 * 3600 * 1000;

const DASH = 0x2d;
const COLON = 0x3a;
const DOT = 0x2e;
const PLUS = 0x2b;
const MINUS = 0x2d;
const SPACE = 0x20;
const LETTER_T = 0x54;
const LETTER_Z = 0x5a;
const LOWER_CASE_BIT = 0x20;
const MS_PER_DAY = 86_400_000;

function twoDigits(text: string, i: number): number {
  const tens = text.charCodeAt(i) - 48;
  const ones = text.charCodeAt(i + 1) - 48;
  return tens >= 0 && tens <= 9 && ones >= 0 && ones <= 9 ? tens * 10 + ones : -1;
}

/** Days of a month (1-12); February of year 0000 has 28. */
function daysInMonth(year: number, month: number): number {
  if (month !== 2) return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
  return year !== 0 && year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28;
}

/** Days from 1970-01-01 (Hinnant's days_from_civil). */
function daysSinceEpoch(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yearOfEra = y - era * 400;
  const dayOfYear = Math.floor((153 * (month > 2 ? month - 3 : month + 9) + 2) / 5) + day - 1;
  const dayOfEra = yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear;
  return era * 146_097 + dayOfEra - 719_468;
}

/** ISO 8601 time with a required offset, in ms since 1970; null otherwise. Without an offset a shop's
 * local time would silently be read as UTC; stricter than Date.parse, which rolls 2026-02-31 over. */
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

/** Why parseIsoTime refused `text`, naming only numbers read from it; null when it is not in the form. */
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

/** Why an event may not have this time: before 1970 (stores count ms from it) or over a day ahead.
 * The scalar asks it too, so an out-of-range time is a 400 like a malformed one. */
export function eventTimeProblem(time: number, now: number): string | null {
  if (!Number.isFinite(time) || time < 0) return 'must be a date after 1970';
  if (time > now + MAX_FUTURE_SKEW_MS) return 'must not be more than a day in the future';
  return null;
}

export const ingestForbidden = (): GatewayError => forbidden('Only administrators may send events and item records');

const fail = (index: number, field: string, message: string): never => {
  throw badUserInput(`events[${index}].${field}: ${message}`, `events[${index}].${field}`);
};

function checkIdentifier(value: string | null, index: number, field: string): void {
  if (value === null) return;
  if (value.length === 0) fail(index, field, 'must not be empty');
  if (value.length > MAX_IDENTIFIER_LENGTH) fail(index, field, `at most ${MAX_IDENTIFIER_LENGTH} characters`);
  // PostgreSQL's text cannot hold it where SQLite can: refused alike on both
  if (value.includes('\u0000')) fail(index, field, 'must not contain the NUL character (\\u0000)');
  // node-postgres writes a lone surrogate as U+FFFD, merging ids SQLite keeps apart
  if (LONE_SURROGATE.test(value)) fail(index, field, 'must be well-formed Unicode (no lone surrogate, \\uD800 to \\uDFFF)');
}

const LONE_SURROGATE = /\p{Surrogate}/u;

/** The one check of a call's size, on every path, including before REST mode forwards a call. */
export function checkCallSize(what: 'events' | 'items', n: number): void {
  const max = what === 'events' ? MAX_EVENTS_PER_CALL : MAX_ITEMS_PER_CALL;
  if (n > max) throw badUserInput(`At most ${max} ${what} a call, got ${n}`, what);
}

/** Checks a whole call's events before any is kept (a call is atomic); BAD_USER_INPUT names the first bad one. */
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

/** Longest texts of an item record, with room over real catalogues' needs, so a client's bug cannot
 * keep megabytes an item in memory and the store. Descriptions may carry HTML, hence the most. */
export const MAX_ITEM_TEXT_LENGTH = { description: 10_000, url: 2_000, other: 1_000 } as const;
export const MAX_ITEM_LIST_LENGTH = { attributes: 200, imageEntities: 100, variants: 1_000 } as const;

const DESCRIPTIONS = ['shortDescription', 'longDescription'] as const;
const URLS = ['thumbnailImage', 'mediumImage', 'largeImage', 'productTrackingUrl', 'productUrl', 'addToCartUrl', 'affiliateAddToCartUrl', 'customerRatingImage'] as const;
const SHORT_TEXTS = ['name', 'upc', 'categoryPath', 'categoryNode', 'brandName', 'color', 'size', 'gender', 'age', 'modelNumber', 'sellerInfo', 'rhid', 'stock', 'offerType'] as const;
const IMAGE_URLS = ['thumbnailImage', 'mediumImage', 'largeImage'] as const;

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

const MAX_AMOUNT = 1e9;
const AMOUNTS = ['msrp', 'salePrice', 'standardShipRate', 'twoThreeDayShippingRate', 'overnightShippingRate'] as const;
const MARKETPLACE_AMOUNTS = ['price', 'standardShipRate', 'twoThreeDayShippingRate'] as const;
const AMOUNT_RANGE = `must be from 0 to ${MAX_AMOUNT}`;
const RATING_RANGE = 'must be from 0 to 5';
const REVIEWS_RANGE = `must be a whole number from 0 to ${Number.MAX_SAFE_INTEGER}`;
const ID_RANGE = `must be ${ITEM_ID_RANGE}`;

/** Each number's range by path without an index, so both refusals say it alike. */
const NUMBER_RANGES: ReadonlyMap<string, string> = new Map([
  ...AMOUNTS.map((field) => [field, AMOUNT_RANGE] as const),
  ...MARKETPLACE_AMOUNTS.map((field) => [`bestMarketplacePrice.${field}`, AMOUNT_RANGE] as const),
  ['customerRating', RATING_RANGE],
  ['numReviews', REVIEWS_RANGE],
  ['parentItemId', ID_RANGE],
  ['variants', ID_RANGE],
]);

const ID_PATHS: ReadonlySet<string> = new Set(['parentItemId', 'variants']);
const RATING_FORMS = 'a JSON number, or the decimal as text: ASCII digits 0-9 with an optional fraction ("4.627")';

/** The refusal of a number, or text that reads as one, in a numeric field: its range; null for a wrong type. */
export function itemNumberRefusal(path: string, value: unknown): string | null {
  const field = path.replace(/\[\d+\]$/, '');
  const range = NUMBER_RANGES.get(field);
  if (range === undefined) return null;
  if (typeof value === 'number') return range;
  // the one number a record may send as text: unreadable text is told the form it takes
  if (field === 'customerRating' && typeof value === 'string') return `${range}, sent as ${RATING_FORMS}`;
  if (typeof value !== 'string' || value.trim() === '' || Number.isNaN(Number(value))) return null;
  if (ID_PATHS.has(field)) return range;
  return `${range}, sent as a JSON number, not text`;
}

/** Refuses a non-text attribute value: a number's text as sent is already lost to JSON.parse. */
export function attributeValueRefusal(path: string): string | null {
  return path.startsWith('attributes.') || path.startsWith('attributes[') ? 'must be a string, as every attribute\'s value is (recommendations.md): send a number or true/false as text, in quotes' : null;
}

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

/** Whether a URL has a scheme other than http(s), as a browser reads it (tabs, newlines, leading controls dropped). */
function unsafeScheme(value: string): boolean {
  const cleaned = value.replace(/[\t\n\r]/g, '').replace(/^[\x00-\x20]+/, '');
  const scheme = SCHEME.exec(cleaned)?.[1];
  return scheme !== undefined && !/^https?$/i.test(scheme);
}

function checkLengths(item: ItemModel, i: number): void {
  const text = (value: string | null | undefined, field: string, max: number): void => {
    if (value != null && value.length > max) throw badUserInput(`items[${i}].${field}: at most ${max} characters`, `items[${i}].${field}`);
  };
  // a script or data URL in a shop's feed would run in shoppers' browsers
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
