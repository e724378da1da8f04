import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ItemRecordError, parseItemRecord, toItemRecord } from '../../src/model/itemRecord.js';
import { sharedData } from '../helpers/sharedData.js';

const walmart = sharedData('walmart/search-response.json');
const realRecords = (): Record<string, unknown>[] =>
  (JSON.parse(readFileSync(walmart, 'utf8')) as { items: Record<string, unknown>[] }).items;

describe('parseItemRecord', () => {
  it('takes loose upstream records as recommendations.md describes them', () => {
    const item = parseItemRecord({
      itemId: '12',
      upc: 12345678,
      customerRating: '4.627',
      salePrice: 10,
      msrp: '12.50',
      name: 7,
      clearance: 'yes',
      numReviews: 2.5,
      variants: [12, '13', 'x', -1],
      giftOptions: {},
      attributes: { color: 'red', size: 3, nested: { no: 1 }, gone: null },
      bestMarketplacePrice: { price: '9.99', sellerInfo: 'Shop', clearance: 1 },
      imageEntities: [{ thumbnailImage: 'a.jpg', entityType: 3 }, 'not an object'],
    });
    expect(JSON.parse(JSON.stringify(item))).toEqual({
      itemId: 12,
      upc: '12345678',
      name: '7',
      msrp: 12.5,
      salePrice: 10,
      attributes: [{ name: 'color', value: 'red' }, { name: 'size', value: '3' }],
      customerRating: 4.627,
      variants: [12, 13],
      bestMarketplacePrice: { price: 9.99, sellerInfo: 'Shop' },
      imageEntities: [{ thumbnailImage: 'a.jpg', entityType: '3' }],
    });
  });

  it('refuses a record without a valid itemId', () => {
    for (const raw of [null, [], 'x', {}, { itemId: 0 }, { itemId: '12a' }, { itemId: 1.5 }]) {
      expect(() => parseItemRecord(raw)).toThrow(ItemRecordError);
    }
  });

  it('gives every item the same fields in the same order, whatever its record holds', () => {
    const sparse = Object.keys(parseItemRecord({ itemId: 1 }));
    const full = Object.keys(parseItemRecord({ itemId: 2, name: 'n', stock: 'Available', giftOptions: { allowGiftWrap: true }, variants: [3] }));
    expect(full).toEqual(sparse);
    expect(sparse[0]).toBe('itemId');
  });

  it('writes no field its record lacked: the JSON of a sparse item is its id and attributes', () => {
    expect(JSON.stringify(parseItemRecord({ itemId: 5, unknownField: 'x' }))).toBe('{"itemId":5,"attributes":[]}');
  });

  it.skipIf(!existsSync(walmart))('parses the real Walmart records, and serves them back with the fields they came with', () => {
    for (const record of realRecords()) {
      const served = toItemRecord(parseItemRecord(record));
      const known = Object.keys(JSON.parse(JSON.stringify(served)) as object);
      // every field served was in the record, and each known field survives with its value
      for (const field of known) expect(Object.keys(record)).toContain(field);
      expect(served.itemId).toBe(record.itemId);
      expect(served.name).toBe(record.name);
      // a rating is a decimal in a string: "2.0" is served back as "2"
      expect(Number(served.customerRating)).toBe(Number(record.customerRating));
      expect(served.salePrice).toBe(record.salePrice);
    }
  });
});
