import type { GiftOptionsModel, ImageEntityModel, ItemAttributeModel, ItemModel, MarketplacePriceModel } from '../ports/backend.js';

/** The one place an item record becomes an ItemModel and back. Upstream records are loose, so a
 * field of the wrong type is dropped rather than failing the whole record. */

export class ItemRecordError extends Error {}

type Raw = Record<string, unknown>;

/** What an item id is, for refusals: the whole numbers a JSON number holds exactly. */
export const ITEM_ID_RANGE = `a whole number from 1 to ${Number.MAX_SAFE_INTEGER}`;

/** A positive safe integer, from a number or a string of digits (leading zeros allowed); null otherwise. */
export function toItemId(value: unknown): number | null {
  let n: number;
  if (typeof value === 'number') n = value;
  else if (typeof value === 'string') {
    let start = 0;
    while (value.charCodeAt(start) === 0x30 && start < value.length - 1) start++;
    const digits = start === 0 ? value : value.slice(start);
    if (!/^[0-9]{1,16}$/.test(digits)) return null;
    n = Number(digits);
  } else return null;
  return Number.isSafeInteger(n) && n > 0 ? n : null;
}

function num(value: unknown): number | undefined {
  if (typeof value === 'number' && Number.isFinite(value)) return value;
  if (typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value))) return Number(value);
  return undefined;
}

function str(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  // some proxies send upc and modelNumber as numbers; keep their digits as text
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return undefined;
}

const bool = (value: unknown): boolean | undefined => (typeof value === 'boolean' ? value : undefined);

/** Codes proxies send unquoted; any other text sent as a number is a client's bug, refused by droppedField. */
const NUMBERS_AS_TEXT = new Set(['upc', 'modelNumber']);

/** customerRating's decimal text; Number() would also take "0x10", "1e3" or " 12" as a rating. */
export const DECIMAL_TEXT = /^[0-9]+(\.[0-9]+)?$/;

/** Whether a number field was sent as documented; PUT /v1/items refuses what the loose parser would read. */
function sentAsNumber(field: string, value: unknown): boolean {
  if (typeof value === 'number' || field === 'itemId' || field === 'parentItemId') return true;
  return field === 'customerRating' && typeof value === 'string' && DECIMAL_TEXT.test(value);
}

function isObject(value: unknown): value is Raw {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

type Fields = readonly (readonly [field: string, convert: (value: unknown) => unknown])[];

function pick(raw: Raw, fields: Fields): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (let i = 0; i < fields.length; i++) {
    const [field, convert] = fields[i]!;
    const value = convert(raw[field]);
    if (value !== undefined) out[field] = value;
  }
  return out;
}

// Pairs rather than an object walked with Object.entries: this runs for every upstream record.
const IMAGE_FIELDS: Fields = Object.entries({ thumbnailImage: str, mediumImage: str, largeImage: str, entityType: str });
const GIFT_FIELDS: Fields = Object.entries({ allowGiftWrap: bool, allowGiftMessage: bool, allowGiftReceipt: bool });
const MARKETPLACE_FIELDS: Fields = Object.entries({
  price: num, standardShipRate: num, twoThreeDayShippingRate: num, sellerInfo: str, offerType: str, availableOnline: bool, clearance: bool,
});

/** Every field assigned in the constructor, in one order, so every parsed item has one shape (fast
 * for the resolvers) and its JSON, including cache entries, keeps the records' field order. */
class ParsedItem implements ItemModel {
  readonly itemId: number;
  readonly name: string | undefined;
  readonly upc: string | undefined;
  readonly categoryPath: string | undefined;
  readonly categoryNode: string | undefined;
  readonly shortDescription: string | undefined;
  readonly longDescription: string | undefined;
  readonly brandName: string | undefined;
  readonly thumbnailImage: string | undefined;
  readonly mediumImage: string | undefined;
  readonly largeImage: string | undefined;
  readonly productTrackingUrl: string | undefined;
  readonly productUrl: string | undefined;
  readonly addToCartUrl: string | undefined;
  readonly affiliateAddToCartUrl: string | undefined;
  readonly color: string | undefined;
  readonly size: string | undefined;
  readonly gender: string | undefined;
  readonly age: string | undefined;
  readonly modelNumber: string | undefined;
  readonly sellerInfo: string | undefined;
  readonly customerRatingImage: string | undefined;
  readonly rhid: string | undefined;
  readonly stock: string | undefined;
  readonly offerType: string | undefined;
  readonly msrp: number | undefined;
  readonly salePrice: number | undefined;
  readonly standardShipRate: number | undefined;
  readonly twoThreeDayShippingRate: number | undefined;
  readonly overnightShippingRate: number | undefined;
  readonly ninetySevenCentShipping: boolean | undefined;
  readonly freeShippingOver35Dollars: boolean | undefined;
  readonly freeShippingOver50Dollars: boolean | undefined;
  readonly isTwoDayShippingEligible: boolean | undefined;
  readonly marketplace: boolean | undefined;
  readonly shipToStore: boolean | undefined;
  readonly freeShipToStore: boolean | undefined;
  readonly rollBack: boolean | undefined;
  readonly bundle: boolean | undefined;
  readonly clearance: boolean | undefined;
  readonly preOrder: boolean | undefined;
  readonly availableOnline: boolean | undefined;
  readonly attributes: ItemAttributeModel[];
  readonly parentItemId: number | undefined;
  readonly customerRating: number | undefined;
  readonly numReviews: number | undefined;
  readonly variants: number[] | undefined;
  readonly bestMarketplacePrice: MarketplacePriceModel | undefined;
  readonly giftOptions: GiftOptionsModel | undefined;
  readonly imageEntities: ImageEntityModel[] | undefined;

  constructor(itemId: number, raw: Raw) {
    this.itemId = itemId;
    this.name = str(raw.name);
    this.upc = str(raw.upc);
    this.categoryPath = str(raw.categoryPath);
    this.categoryNode = str(raw.categoryNode);
    this.shortDescription = str(raw.shortDescription);
    this.longDescription = str(raw.longDescription);
    this.brandName = str(raw.brandName);
    this.thumbnailImage = str(raw.thumbnailImage);
    this.mediumImage = str(raw.mediumImage);
    this.largeImage = str(raw.largeImage);
    this.productTrackingUrl = str(raw.productTrackingUrl);
    this.productUrl = str(raw.productUrl);
    this.addToCartUrl = str(raw.addToCartUrl);
    this.affiliateAddToCartUrl = str(raw.affiliateAddToCartUrl);
    this.color = str(raw.color);
    this.size = str(raw.size);
    this.gender = str(raw.gender);
    this.age = str(raw.age);
    this.modelNumber = str(raw.modelNumber);
    this.sellerInfo = str(raw.sellerInfo);
    this.customerRatingImage = str(raw.customerRatingImage);
    this.rhid = str(raw.rhid);
    this.stock = str(raw.stock);
    this.offerType = str(raw.offerType);
    this.msrp = num(raw.msrp);
    this.salePrice = num(raw.salePrice);
    this.standardShipRate = num(raw.standardShipRate);
    this.twoThreeDayShippingRate = num(raw.twoThreeDayShippingRate);
    this.overnightShippingRate = num(raw.overnightShippingRate);
    this.ninetySevenCentShipping = bool(raw.ninetySevenCentShipping);
    this.freeShippingOver35Dollars = bool(raw.freeShippingOver35Dollars);
    this.freeShippingOver50Dollars = bool(raw.freeShippingOver50Dollars);
    this.isTwoDayShippingEligible = bool(raw.isTwoDayShippingEligible);
    this.marketplace = bool(raw.marketplace);
    this.shipToStore = bool(raw.shipToStore);
    this.freeShipToStore = bool(raw.freeShipToStore);
    this.rollBack = bool(raw.rollBack);
    this.bundle = bool(raw.bundle);
    this.clearance = bool(raw.clearance);
    this.preOrder = bool(raw.preOrder);
    this.availableOnline = bool(raw.availableOnline);
    this.attributes = isObject(raw.attributes) ? attributesOf(raw.attributes) : [];
    this.parentItemId = toItemId(raw.parentItemId) ?? undefined;
    this.customerRating = num(raw.customerRating);
    const reviews = num(raw.numReviews);
    this.numReviews = reviews !== undefined && Number.isInteger(reviews) ? reviews : undefined;
    this.variants = Array.isArray(raw.variants) ? variantsOf(raw.variants as unknown[]) : undefined;
    this.bestMarketplacePrice = isObject(raw.bestMarketplacePrice) ? marketplacePriceOf(raw.bestMarketplacePrice) : undefined;
    // upstream sends {} for "no gift options"
    const gifts = isObject(raw.giftOptions) ? (pick(raw.giftOptions, GIFT_FIELDS) as GiftOptionsModel) : {};
    this.giftOptions = Object.keys(gifts).length > 0 ? gifts : undefined;
    this.imageEntities = Array.isArray(raw.imageEntities) ? imagesOf(raw.imageEntities as unknown[]) : undefined;
  }
}

/** Parses one record; throws ItemRecordError when it is not an object with a valid itemId. */
export function parseItemRecord(raw: unknown): ItemModel {
  if (!isObject(raw)) throw new ItemRecordError('an item record must be a JSON object');
  const itemId = toItemId(raw.itemId);
  if (itemId === null) throw new ItemRecordError(`itemId must be ${ITEM_ID_RANGE}, got ${JSON.stringify(raw.itemId) ?? 'nothing'}`);
  return new ParsedItem(itemId, raw);
}

export function attributePath(name: string): string {
  return /^[A-Za-z_][A-Za-z0-9_]*$/.test(name) ? `attributes.${name}` : `attributes[${JSON.stringify(name)}]`;
}

const SHOWN_OF_STORED = 40;

/** A store's JSON text, parsed as a sent record; bad JSON shows its start escaped, never raw bytes. */
export function parseStoredRecord(stored: string | Uint8Array): ItemModel {
  // a TEXT column holds a BLOB as well, read as bytes (a hand edit, a damaged page)
  const json = typeof stored === 'string' ? stored : Buffer.from(stored).toString('utf8');
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch {
    const start = json.length > SHOWN_OF_STORED ? `${json.slice(0, SHOWN_OF_STORED)}…` : json;
    throw new ItemRecordError(`a stored item record is not JSON: ${JSON.stringify(start)}`);
  }
  try {
    return parseItemRecord(raw);
  } catch (error) {
    if (!(error instanceof ItemRecordError)) throw error;
    const id = isObject(raw) ? toItemId(raw.itemId) : null;
    throw new ItemRecordError(`a stored item record${id === null ? '' : ` (itemId ${id})`} cannot be read: ${error.message}`);
  }
}

const NESTED: readonly (readonly [field: string, has: string, fields: readonly string[]])[] = [
  ['bestMarketplacePrice', 'a marketplace price has only', MARKETPLACE_FIELDS.map(([name]) => name)],
  ['giftOptions', 'gift options have only', GIFT_FIELDS.map(([name]) => name)],
  ['imageEntities', 'an image entity has only', IMAGE_FIELDS.map(([name]) => name)],
];

export interface UnknownNestedField {
  path: string;
  name: string;
  has: string;
  fields: readonly string[];
}

/** For PUT /v1/items: the first unknown field of a nested object, or null; silently dropping it loses data. */
export function unknownNestedField(raw: Raw): UnknownNestedField | null {
  for (const [field, has, fields] of NESTED) {
    const value = raw[field];
    if (field === 'imageEntities') {
      if (!Array.isArray(value)) continue;
      for (let j = 0; j < value.length; j++) {
        const entity: unknown = value[j];
        const name = isObject(entity) ? unknownIn(entity, fields) : null;
        if (name !== null) return { path: `${field}[${j}]`, name, has, fields };
      }
      continue;
    }
    const name = isObject(value) ? unknownIn(value, fields) : null;
    if (name !== null) return { path: field, name, has, fields };
  }
  return null;
}

/** The first of value's fields not in `fields`: a list lookup, since `in` would find `toString`. */
function unknownIn(value: Raw, fields: readonly string[]): string | null {
  for (const name in value) if (!fields.includes(name)) return name;
  return null;
}

export interface DroppedField {
  path: string;
  value: unknown;
}

/** For PUT /v1/items, where a dropped field is lost data: the first field the parse left out or
 * converted against the documented type, with the value sent; null when none. */
export function droppedField(raw: Raw, item: ItemModel): DroppedField | null {
  const parsed = item as unknown as Raw;
  for (const [field, value] of Object.entries(raw)) {
    if (value === null || value === undefined || !(field in parsed)) continue;
    switch (field) {
      case 'attributes': {
        if (!isObject(value)) return { path: field, value };
        // the interface says string values; a number's text as sent is already lost to JSON.parse
        for (const [name, v] of Object.entries(value)) if (typeof v !== 'string') return { path: attributePath(name), value: v };
        break;
      }
      case 'variants': {
        if (!Array.isArray(value)) return { path: field, value };
        const bad = value.findIndex((v) => toItemId(v) === null);
        if (bad >= 0) return { path: `variants[${bad}]`, value: value[bad] };
        break;
      }
      case 'imageEntities': {
        if (!Array.isArray(value)) return { path: field, value };
        for (let j = 0; j < value.length; j++) {
          const inner = droppedIn(value[j], `imageEntities[${j}]`, IMAGE_FIELDS);
          if (inner !== null) return inner;
        }
        break;
      }
      case 'bestMarketplacePrice':
      case 'giftOptions': {
        const inner = droppedIn(value, field, field === 'giftOptions' ? GIFT_FIELDS : MARKETPLACE_FIELDS);
        if (inner !== null) return inner;
        break;
      }
      default:
        if (parsed[field] === undefined) return { path: field, value };
        if (typeof parsed[field] === 'string' && typeof value !== 'string' && !NUMBERS_AS_TEXT.has(field)) return { path: field, value };
        if (typeof parsed[field] === 'number' && !sentAsNumber(field, value)) return { path: field, value };
    }
  }
  return null;
}

/** For a stored record: the first code sent as a number without exact digits (JSON.parse rounds them), or null. */
export function numberWithoutDigits(raw: Raw): string | null {
  for (const field of NUMBERS_AS_TEXT) {
    const value = raw[field];
    if (typeof value === 'number' && !(Number.isSafeInteger(value) && value >= 0)) return field;
  }
  return null;
}

function droppedIn(value: unknown, path: string, fields: Fields): DroppedField | null {
  if (!isObject(value)) return { path, value };
  for (const [field, convert] of fields) {
    const v = value[field];
    if (v === null || v === undefined) continue;
    if (convert(v) === undefined || (convert === str && typeof v !== 'string') || (convert === num && typeof v !== 'number')) {
      return { path: `${path}.${field}`, value: v };
    }
  }
  return null;
}

function attributesOf(raw: Raw): ItemAttributeModel[] {
  const attributes: ItemAttributeModel[] = [];
  const names = Object.keys(raw);
  for (let i = 0; i < names.length; i++) {
    const name = names[i]!;
    const value = raw[name];
    const type = typeof value;
    if (type === 'string' || type === 'number' || type === 'boolean') attributes.push({ name, value: String(value) });
  }
  return attributes;
}

function variantsOf(raw: unknown[]): number[] {
  const ids: number[] = [];
  for (const value of raw) {
    const id = toItemId(value);
    if (id !== null) ids.push(id);
  }
  return ids;
}

const marketplacePriceOf = (raw: Raw): MarketplacePriceModel => pick(raw, MARKETPLACE_FIELDS);

function imagesOf(raw: unknown[]): ImageEntityModel[] {
  const images: ImageEntityModel[] = [];
  for (let i = 0; i < raw.length; i++) {
    const entity = raw[i];
    if (isObject(entity)) images.push(pick(entity, IMAGE_FIELDS));
  }
  return images;
}

/** A rating as decimal text: String() writes small numbers in exponent form, which PUT /v1/items refuses. */
function decimalText(value: number): string {
  const text = String(value);
  const at = text.indexOf('e-');
  if (at === -1) return text;
  const digits = text.slice(0, at).replace('.', '');
  return `0.${'0'.repeat(Number(text.slice(at + 2)) - 1)}${digits}`;
}

export function toItemRecord(item: ItemModel): Record<string, unknown> {
  const { attributes, customerRating, ...rest } = item;
  const record: Record<string, unknown> = { ...rest };
  if (customerRating !== undefined && customerRating !== null) record.customerRating = decimalText(customerRating);
  if (attributes.length > 0) record.attributes = Object.fromEntries(attributes.map((a) => [a.name, a.value]));
  return record;
}

export function isInStock(item: Pick<ItemModel, 'stock'>): boolean {
  return item.stock === undefined || item.stock === null || item.stock === 'Available';
}
