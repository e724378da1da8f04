import type { ItemModel } from './types.js';

/**
 * The one place an item record of recommendations.md (from a catalogue file or an upstream
 * response) becomes an ItemModel, and back. Upstream records are loose: only itemId is always
 * there, prices are sometimes integers, customerRating is a decimal in a string, upc must stay
 * text. A field of the wrong type is dropped rather than failing the whole record.
 */

export class ItemRecordError extends Error {}

type Raw = Record<string, unknown>;

const stringFields = [
  'name', 'upc', 'categoryPath', 'categoryNode', 'shortDescription', 'longDescription', 'brandName',
  'thumbnailImage', 'mediumImage', 'largeImage', 'productTrackingUrl', 'productUrl', 'addToCartUrl',
  'affiliateAddToCartUrl', 'color', 'size', 'gender', 'age', 'modelNumber', 'sellerInfo',
  'customerRatingImage', 'rhid', 'stock', 'offerType',
] as const;
const numberFields = [
  'msrp', 'salePrice', 'standardShipRate', 'twoThreeDayShippingRate', 'overnightShippingRate',
] as const;
const booleanFields = [
  'ninetySevenCentShipping', 'freeShippingOver35Dollars', 'freeShippingOver50Dollars',
  'isTwoDayShippingEligible', 'marketplace', 'shipToStore', 'freeShipToStore', 'rollBack', 'bundle',
  'clearance', 'preOrder', 'availableOnline',
] as const;

/** A positive safe integer, from a number or a string of digits; null otherwise. */
export function toItemId(value: unknown): number | null {
  let n: number;
  if (typeof value === 'number') n = value;
  else if (typeof value === 'string' && /^[0-9]{1,16}$/.test(value)) n = Number(value);
  else return null;
  return Number.isSafeInteger(n) && n > 0 ? n : null;
}

function num(value: unknown): number | undefined {
  if (typeof value === 'number' && Number.isFinite(value)) return value;
  if (typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value))) return Number(value);
  return undefined;
}

function str(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  // upc and modelNumber arrive as numbers from some proxies; keep their digits as text.
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return undefined;
}

const bool = (value: unknown): boolean | undefined => (typeof value === 'boolean' ? value : undefined);

function isObject(value: unknown): value is Raw {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function pick<T>(raw: unknown, fields: readonly string[], convert: (v: unknown) => T | undefined): Record<string, T> {
  const out: Record<string, T> = {};
  if (!isObject(raw)) return out;
  for (const field of fields) {
    const value = convert(raw[field]);
    if (value !== undefined) out[field] = value;
  }
  return out;
}

/** Parses one record; throws ItemRecordError when it is not an object with a valid itemId. */
export function parseItemRecord(raw: unknown): ItemModel {
  if (!isObject(raw)) throw new ItemRecordError('an item record must be a JSON object');
  const itemId = toItemId(raw.itemId);
  if (itemId === null) throw new ItemRecordError(`itemId must be a positive integer, got ${JSON.stringify(raw.itemId) ?? 'nothing'}`);

  const item: ItemModel = {
    itemId,
    ...pick(raw, stringFields, str),
    ...pick(raw, numberFields, num),
    ...pick(raw, booleanFields, bool),
    attributes: isObject(raw.attributes)
      ? Object.entries(raw.attributes)
          .filter((entry): entry is [string, string | number | boolean] => ['string', 'number', 'boolean'].includes(typeof entry[1]))
          .map(([name, value]) => ({ name, value: String(value) }))
      : [],
  };
  const parent = toItemId(raw.parentItemId);
  if (parent !== null) item.parentItemId = parent;
  const rating = num(raw.customerRating);
  if (rating !== undefined) item.customerRating = rating;
  const reviews = num(raw.numReviews);
  if (reviews !== undefined && Number.isInteger(reviews)) item.numReviews = reviews;
  if (Array.isArray(raw.variants)) {
    item.variants = raw.variants.map(toItemId).filter((id): id is number => id !== null);
  }
  if (isObject(raw.bestMarketplacePrice)) {
    const m = raw.bestMarketplacePrice;
    item.bestMarketplacePrice = {
      ...pick(m, ['price', 'standardShipRate', 'twoThreeDayShippingRate'], num),
      ...pick(m, ['sellerInfo', 'offerType'], str),
      ...pick(m, ['availableOnline', 'clearance'], bool),
    };
  }
  if (isObject(raw.giftOptions)) {
    const g = pick(raw.giftOptions, ['allowGiftWrap', 'allowGiftMessage', 'allowGiftReceipt'], bool);
    // upstream sends {} for "no gift options"
    if (Object.keys(g).length > 0) item.giftOptions = g;
  }
  if (Array.isArray(raw.imageEntities)) {
    item.imageEntities = raw.imageEntities
      .filter(isObject)
      .map((e) => pick(e, ['thumbnailImage', 'mediumImage', 'largeImage', 'entityType'], str));
  }
  return item;
}

/** The record as the REST interface serves it: customerRating as text, attributes as an object. */
export function toItemRecord(item: ItemModel): Record<string, unknown> {
  const { attributes, customerRating, ...rest } = item;
  const record: Record<string, unknown> = { ...rest };
  if (customerRating !== undefined && customerRating !== null) record.customerRating = String(customerRating);
  if (attributes.length > 0) record.attributes = Object.fromEntries(attributes.map((a) => [a.name, a.value]));
  return record;
}

/** Whether an item can be bought now (stock "Available", or no stock field at all). */
export function isInStock(item: Pick<ItemModel, 'stock'>): boolean {
  return item.stock === undefined || item.stock === null || item.stock === 'Available';
}
