import { describe, expect, it } from 'vitest';
import { checkItems } from '../../src/model/ingest.js';
import { parseItemRecord } from '../../src/model/itemRecord.js';

// upsertItems and PUT /v1/items take whole records: the numbers a shopper is shown must be ones a
// shop could mean (a probe sent customerRating 1e308 and numReviews -5, and both were kept).
const record = (fields: Record<string, unknown>) => parseItemRecord({ itemId: 31000005, name: 'Phone', ...fields });

describe('item records sent to the recommender', () => {
  it('keeps the numbers a shop means', () => {
    expect(() => checkItems([record({ salePrice: 199.99, msrp: 249, customerRating: '4.5', numReviews: 12, standardShipRate: 0 })])).not.toThrow();
  });

  it.each([
    [{ customerRating: '1e308' }, 'items[0].customerRating'],
    [{ customerRating: '-1' }, 'items[0].customerRating'],
    [{ numReviews: -5 }, 'items[0].numReviews'],
    [{ salePrice: -1 }, 'items[0].salePrice'],
    [{ msrp: 1e308 }, 'items[0].msrp'],
    [{ bestMarketplacePrice: { price: 1e12 } }, 'items[0].bestMarketplacePrice.price'],
    // found beside the twentieth pass's probe: the marketplace's own rates were not checked
    [{ bestMarketplacePrice: { price: 5, standardShipRate: -3 } }, 'items[0].bestMarketplacePrice.standardShipRate'],
    [{ bestMarketplacePrice: { twoThreeDayShippingRate: 1e12 } }, 'items[0].bestMarketplacePrice.twoThreeDayShippingRate'],
  ])('refuses %o, naming %s', (fields, field) => {
    const parsed = record(fields);
    expect(() => checkItems([parsed])).toThrow(field);
  });
});
