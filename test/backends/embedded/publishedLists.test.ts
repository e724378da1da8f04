import { describe, expect, it } from 'vitest';
import { decodeCategory, decodeList, decodeRankings, encodeCategory, encodeList, encodeRankings, listHash, type PublishedList } from '../../../src/backends/embedded/publishedLists.js';
import type { RecommendationEntryModel } from '../../../src/ports/backend.js';

const entry = (rank: number, itemId: number, score: number | null, evidence: number, source: RecommendationEntryModel['source']): RecommendationEntryModel =>
  ({ rank, itemId, score, evidence, source });
/** A decoded row's parts as plain fields (they are read when asked for), the anchored list only where the row has one. */
const plain = (bytes: Buffer): PublishedList => {
  const list = decodeList(bytes);
  return list.anchored === undefined ? { top: list.top, deep: list.deep } : { top: list.top, deep: list.deep, anchored: list.anchored };
};

describe('published list rows', () => {
  const deep = [
    entry(1, 2 ** 53 - 1, 0.1 + 0.2, 7, 'CO_VIEW'), entry(2, 5, 1e-300, 0, 'CO_PURCHASE'), entry(3, 9, null, 0, 'CATEGORY'),
    entry(4, 11, null, 0, 'DEPARTMENT'), entry(5, 12, null, 2_000_000_000, 'POPULAR'), entry(6, 13, -0.5, 1, 'UPSTREAM'),
  ];

  it('give back exactly what was encoded: scores to the last bit, null scores, every source, the largest item id', () => {
    const prefix = { top: deep.slice(0, 3), deep };
    expect(plain(encodeList(prefix))).toEqual(prefix);
    // a top that is not deep's first (an out-of-stock candidate skipped) is stored on its own
    const apart = { top: [entry(1, 5, 1e-300, 0, 'CO_PURCHASE'), entry(2, 9, null, 0, 'CATEGORY')], deep };
    expect(plain(encodeList(apart))).toEqual(apart);
    expect(encodeList(apart).length).toBeGreaterThan(encodeList(prefix).length);
    const empty = { top: [], deep: [] };
    expect(plain(encodeList(empty))).toEqual(empty);
  });

  it('carry the anchor\'s neighbours and their scores exactly, for recommendedForYou, and hash them', () => {
    const anchored = { items: Float64Array.from([2 ** 53 - 1, 5, 9]), scores: Float64Array.from([0.1 + 0.2, 1e-300, 0]) };
    const list = { top: deep.slice(0, 3), deep, anchored };
    expect(plain(encodeList(list))).toEqual(list);
    expect(plain(encodeList({ top: [], deep: [], anchored }))).toEqual({ top: [], deep: [], anchored });
    expect(listHash(list)).not.toBe(listHash({ top: deep.slice(0, 3), deep }));
    expect(listHash(list)).not.toBe(listHash({ ...list, anchored: { items: anchored.items, scores: Float64Array.from([0.3, 1e-300, 0]) } }));
  });

  it('hash what a list holds: any field changed changes it, the same list hashes the same', () => {
    const base = { top: deep.slice(0, 3), deep };
    const h = listHash(base);
    expect(listHash({ top: deep.slice(0, 3), deep: deep.map((e) => ({ ...e })) })).toBe(h);
    const changes: ((e: RecommendationEntryModel) => RecommendationEntryModel)[] = [
      (e) => ({ ...e, itemId: e.itemId + 1 }), (e) => ({ ...e, score: 0.30000000000000004 + 1e-16 }), (e) => ({ ...e, score: null }),
      (e) => ({ ...e, evidence: e.evidence + 1 }), (e) => ({ ...e, source: 'POPULAR' }),
    ];
    for (const change of changes) expect(listHash({ top: base.top, deep: [change(deep[0]!), ...deep.slice(1)] })).not.toBe(h);
    expect(listHash({ top: deep.slice(0, 2), deep })).not.toBe(h);
  });

  it('keep category rows by path and the rankings as they were', () => {
    expect(decodeCategory(encodeCategory('Dept1/Cat2', [3, 1, 2]), 'Dept1/Cat2').ids).toEqual([3, 1, 2]);
    // another path's row (a digest clash) gives no candidates
    expect(decodeCategory(encodeCategory('Dept1/Cat2', [3, 1, 2]), 'Dept9').ids).toEqual([]);
    const rankings = { trending: [{ itemId: 1, score: 0.5 }], popular: { POST_BROWSE: [{ itemId: 2, score: 3 }], NEXT_BEST_PRODUCT: [{ itemId: 4, score: null }] } };
    expect(decodeRankings(encodeRankings(rankings))).toEqual(rankings);
  });
});
