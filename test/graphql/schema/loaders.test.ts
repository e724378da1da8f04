import { describe, expect, it } from 'vitest';
import { createLoaders } from '../../../src/graphql/schema/loaders.js';
import type { ItemModel, RecommendationKind, RecommendationListModel, RecsNow, RecsService } from '../../../src/ports/backend.js';

const item = (itemId: number): ItemModel => ({ itemId, name: `item ${itemId}` }) as ItemModel;

/** A backend whose lists come with the records of their entries (as the embedded one's and the REST interface's do), counting its calls. */
function countingRecs(withRecords: boolean) {
  const calls = { recommend: 0, getItems: [] as number[][] };
  const recs: RecsService = {
    recommend: (kind: RecommendationKind, anchorId: number) => {
      calls.recommend += 1;
      const ids = [anchorId + 1, anchorId + 2, anchorId + 3];
      const list: RecommendationListModel = {
        anchorId, kind, entries: ids.map((itemId, i) => ({ rank: i + 1, itemId, score: null, evidence: 0, source: 'UPSTREAM' })),
      };
      if (withRecords) list.items = ids.map(item);
      return Promise.resolve(list);
    },
    getItems: (ids: readonly number[]) => {
      calls.getItems.push([...ids]);
      return Promise.resolve(ids.map((id) => (id < 1000 ? item(id) : null)));
    },
  };
  return { recs, calls };
}

describe('per-request loaders', () => {
  it("answer a list's items from the records it came with, and ask the backend only for others", async () => {
    const { recs, calls } = countingRecs(true);
    const batches: number[] = [];
    const loaders = createLoaders(recs, {}, { onBatch: (_, size) => batches.push(size) });
    const list = await loaders.recommendations.load('NEXT_BEST_PRODUCT', 10);
    expect(loaders.itemsOf(list)?.map((i) => i.itemId)).toEqual([11, 12, 13]);
    // the same list again in the request: no second call
    expect(await loaders.recommendations.load('NEXT_BEST_PRODUCT', 10)).toBe(list);
    expect(calls.recommend).toBe(1);
    // a record the list brought is not asked for; an id it did not bring is, alone
    expect((await loaders.items.loadMany([12, 20, 13])).map((i) => (i instanceof Error ? i : i?.itemId))).toEqual([12, 20, 13]);
    expect(calls.getItems).toEqual([[20]]);
    expect(batches).toEqual([1]);
    expect(await loaders.items.load(1001)).toBeNull();
  });

  it('leave a list whose records do not match its entries to the items loader', async () => {
    const { recs, calls } = countingRecs(false);
    const loaders = createLoaders(recs);
    const list = await loaders.recommendations.load('POST_BROWSE', 10);
    expect(loaders.itemsOf(list)).toBeNull();
    // records in another order, or fewer of them, are not taken for the entries' items
    expect(loaders.itemsOf({ ...list, items: [item(12), item(11), item(13)] })).toBeNull();
    expect(loaders.itemsOf({ ...list, items: [item(11), item(12)] })).toBeNull();
    expect((await loaders.items.loadMany([11, 12])).length).toBe(2);
    expect(calls.getItems).toEqual([[11, 12]]);
  });

  it('report a failed list to whoever asked for it', async () => {
    const { recs } = countingRecs(true);
    const failing: RecsService = { ...recs, recommend: () => Promise.reject(new Error('upstream down')) };
    await expect(createLoaders(failing).recommendations.load('POST_BROWSE', 1)).rejects.toThrow('upstream down');
  });

  it('read a list synchronously where the backend can, once a request, and leave a failing read to the loader', async () => {
    const { recs, calls } = countingRecs(true);
    let reads = 0;
    const now: RecsNow = {
      item,
      recommend: (kind, anchorId) => {
        reads += 1;
        if (anchorId === 404) throw new Error('No item with itemId 404');
        return { anchorId, kind, entries: [{ rank: 1, itemId: anchorId + 1, score: 1, evidence: 1, source: 'CO_VIEW' }], items: [item(anchorId + 1)] };
      },
    };
    const seen: RecommendationListModel[] = [];
    const loaders = createLoaders(recs, {}, { onList: (list) => seen.push(list) }, now);
    const list = loaders.listNow('POST_BROWSE', 10);
    expect(list?.entries.map((e) => e.itemId)).toEqual([11]);
    // the same key again, synchronously or through the loader: the same list, read once, reported once
    expect(loaders.listNow('POST_BROWSE', 10)).toBe(list);
    expect(await loaders.recommendations.load('POST_BROWSE', 10)).toBe(list);
    expect([reads, calls.recommend, seen.length]).toEqual([1, 0, 1]);
    // another kind is another list
    expect(loaders.listNow('NEXT_BEST_PRODUCT', 10)).not.toBe(list);
    // a read that throws is not answered here: the loader asks the backend, which answers (or fails) as before
    expect(loaders.listNow('POST_BROWSE', 404)).toBeUndefined();
    expect((await loaders.recommendations.load('POST_BROWSE', 404)).anchorId).toBe(404);
    expect(calls.recommend).toBe(1);
    // without a synchronous view (REST mode) there is nothing to read
    expect(createLoaders(recs).listNow('POST_BROWSE', 10)).toBeUndefined();
  });
});
