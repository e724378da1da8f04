import type { GiftOptionsModel, ImageEntityModel, ItemAttributeModel, ItemModel, MarketplacePriceModel } from './backend.js';

/**
 * The one place an item record of recommendations.md (from a catalogue file or an upstream
 * response) becomes an ItemModel, and back. Upstream records are loose: only itemId is always
 * there, prices are sometimes integers, customerRating is a decimal in a string, upc must stay
 * text. A field of the wrong type is dropped rather than failing the whole record.
 */

export class ItemRecordError extends Error {}

type Raw = Record<string, unknown>;

/** What an item id is, for refusals: the whole numbers a JSON number holds exactly. */
export const ITEM_ID_RANGE = `a whole number from 1 to ${Number.MAX_SAFE_INTEGER}`;

/**
 * A positive safe integer, from a number or a string of digits; null otherwise. Leading zeros are
 * the same id (recommendations.md: an integer), however many: "0031000005" was 31000005 but
 * thirty zeros before it made more than 16 digits, and "out of range" of an id that is not.
 */
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
  // upc and modelNumber arrive as numbers from some proxies; keep their digits as text.
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return undefined;
}

const bool = (value: unknown): boolean | undefined => (typeof value === 'boolean' ? value : undefined);

/**
 * The texts whose number a record sent to be stored may carry as a number (str keeps its digits):
 * codes that proxies send unquoted. Any other text sent as a number (`"name": 5`) is refused by
 * droppedField rather than stored as "5": a client's bug, not a product's name.
 */
const NUMBERS_AS_TEXT = new Set(['upc', 'modelNumber']);

/**
 * customerRating is "a decimal number as text" (recommendations.md): the one number a record sent
 * to be stored may carry as text, digits with an optional fraction (`"4.627"`), or as a JSON
 * number. Number() took far more (`"0x10"` as 16, `"1e3"`, `" 12"`, `"+5"`): a client's bug stored
 * as a rating, where upstream only ever wrote the decimal form.
 */
export const DECIMAL_TEXT = /^[0-9]+(\.[0-9]+)?$/;

/**
 * Whether `value`, sent to be stored in a number field of a record, was sent as the interface
 * documents it: a JSON number, or for customerRating its decimal text, or for an item id (which
 * toItemId has already read) a string of its digits. The parser reads an upstream's records
 * loosely (`"salePrice": "12"` is 12); PUT /v1/items refuses such a string instead.
 */
function sentAsNumber(field: string, value: unknown): boolean {
  if (typeof value === 'number' || field === 'itemId' || field === 'parentItemId') return true;
  return field === 'customerRating' && typeof value === 'string' && DECIMAL_TEXT.test(value);
}

function isObject(value: unknown): value is Raw {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A nested object's fields, each converted by its own reader; those it drops (wrong type) left out. */
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

// The nested objects' fields, in the order they are written: what the parser keeps and what
// droppedField checks a record sent to be stored against.
// Pairs rather than an object walked with Object.entries: the parser runs for every record of
// every upstream answer, and each walk made an array of pairs anew.
const IMAGE_FIELDS: Fields = Object.entries({ thumbnailImage: str, mediumImage: str, largeImage: str, entityType: str });
const GIFT_FIELDS: Fields = Object.entries({ allowGiftWrap: bool, allowGiftMessage: bool, allowGiftReceipt: bool });
const MARKETPLACE_FIELDS: Fields = Object.entries({
  price: num, standardShipRate: num, twoThreeDayShippingRate: num, sellerInfo: str, offerType: str, availableOnline: bool, clearance: bool,
});

/**
 * An item as parsed from a record. Every field is assigned in the constructor, in one order,
 * whether the record has it or not (absent is undefined, which JSON leaves out as it leaves out
 * a missing key), so every parsed item has the same shape. Built a field at a time onto a fresh
 * object, as before, a record took about 7 µs, most of it in the object's changes of shape (the
 * one-by-one copy in bench/itemRecord.ts, which converts nothing, took 5.6 to 8.5 µs); this way it
 * takes about 2.5 µs, and the resolvers read fields of one shape. It runs for every record of
 * every upstream answer. The order is the one the records were written in before, so their JSON
 * (the cache's entries, the REST interface's bodies) is unchanged.
 */
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

/** An attribute's path in a refusal: `attributes.size`, or `attributes[""]` for a name that is no plain word. */
export function attributePath(name: string): string {
  return /^[A-Za-z_][A-Za-z0-9_]*$/.test(name) ? `attributes.${name}` : `attributes[${JSON.stringify(name)}]`;
}

/** The most of a damaged stored record a message shows. */
const SHOWN_OF_STORED = 40;

/**
 * A record as a store holds it (its JSON text), read as parseItemRecord reads one sent. A store's
 * text that is not JSON (a damaged file, a hand edit) is an ItemRecordError that shows its start
 * escaped, as JSON: JSON.parse's own message quoted it raw, NUL bytes and all, into the one line
 * a start that fails prints.
 */
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

/** The nested objects of a record (what a refusal says of each, and its fields): what unknownNestedField checks. */
const NESTED: readonly (readonly [field: string, has: string, fields: readonly string[]])[] = [
  ['bestMarketplacePrice', 'a marketplace price has only', MARKETPLACE_FIELDS.map(([name]) => name)],
  ['giftOptions', 'gift options have only', GIFT_FIELDS.map(([name]) => name)],
  ['imageEntities', 'an image entity has only', IMAGE_FIELDS.map(([name]) => name)],
];

/** A field of a nested object that it does not have: where the object is, the name, and the fields it has. */
export interface UnknownNestedField {
  /** The nested object's path in the record: `giftOptions`, `imageEntities[0]`. */
  path: string;
  name: string;
  /** What a refusal says of the object, before its fields: "an image entity has only". */
  has: string;
  fields: readonly string[];
}

/**
 * For a record sent to be stored (PUT /v1/items): the first field of a nested object
 * (bestMarketplacePrice, giftOptions, an entry of imageEntities) that the object does not have,
 * or null. Dropped silently, a misspelled `imageEntities[0].largeImg` left the image without it;
 * GraphQL's ImageEntityInput refuses it. A nested value that is no object is droppedField's to
 * refuse; attributes' names are free.
 */
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

/** The first of value's fields not among `fields`, or null: a list, not `in` an object, which would take `toString`. */
function unknownIn(value: Raw, fields: readonly string[]): string | null {
  for (const name in value) if (!fields.includes(name)) return name;
  return null;
}

/** A field droppedField found: its path in the record, and the value sent there. */
export interface DroppedField {
  path: string;
  value: unknown;
}

/**
 * For a record sent to be stored (PUT /v1/items), where a field dropped is data lost: the first
 * field (a path: `attributes.color`, `variants[2]`, `imageEntities[0].largeImage`) that `item`,
 * parsed from `raw`, left out, or a text it kept from a number where only NUMBERS_AS_TEXT may be
 * one, or a number it read from text where the interface documents a JSON number (all but
 * customerRating's decimal text and an id's digits: sentAsNumber), with the value sent there (a
 * number out of range is refused saying the range, not the type); or null. Null values count as absent; fields the interface does not know are not looked at.
 */
export function droppedField(raw: Raw, item: ItemModel): DroppedField | null {
  const parsed = item as unknown as Raw;
  for (const [field, value] of Object.entries(raw)) {
    if (value === null || value === undefined || !(field in parsed)) continue;
    switch (field) {
      case 'attributes': {
        if (!isObject(value)) return { path: field, value };
        // recommendations.md: "map of string keys to string values"; a number was kept as JavaScript
        // writes it (1e21 served back as "1e+21"), its text as sent lost with JSON.parse
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

/**
 * For a record sent to be stored: the first of NUMBERS_AS_TEXT sent as a number that has no exact
 * digits (a fraction, a negative, one past 2^53 − 1, which JSON.parse rounds), or null: str
 * kept `"upc": 1.5e30` as "1.5e+30" and 12345678901234567 as "12345678901234568", codes no
 * product carries. An upstream's records are read as before (upstream-facts.md: its upc is text).
 */
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
    // str takes a number too (NUMBERS_AS_TEXT): no nested text is one of those; num takes text, which none of these numbers is
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

/**
 * A rating as the decimal text the interface has (DECIMAL_TEXT): String() writes a small one in
 * exponent form (`0.0000001` came back as `1e-7`, which PUT /v1/items then refused), so its digits
 * are placed after the point here. A rating is 0 to 5: no exponent is ever positive.
 */
function decimalText(value: number): string {
  const text = String(value);
  const at = text.indexOf('e-');
  if (at === -1) return text;
  const digits = text.slice(0, at).replace('.', '');
  return `0.${'0'.repeat(Number(text.slice(at + 2)) - 1)}${digits}`;
}

/** The record as the REST interface serves it: customerRating as text, attributes as an object. */
export function toItemRecord(item: ItemModel): Record<string, unknown> {
  const { attributes, customerRating, ...rest } = item;
  const record: Record<string, unknown> = { ...rest };
  if (customerRating !== undefined && customerRating !== null) record.customerRating = decimalText(customerRating);
  if (attributes.length > 0) record.attributes = Object.fromEntries(attributes.map((a) => [a.name, a.value]));
  return record;
}

/** Whether an item can be bought now (stock "Available", or no stock field at all). */
export function isInStock(item: Pick<ItemModel, 'stock'>): boolean {
  return item.stock === undefined || item.stock === null || item.stock === 'Available';
}
