import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { GroupCells } from '../../src/recommender/groupCells.js';

/** What group g holds: its items and its slots, read from the cells. */
function read(groups: GroupCells, g: number): { items: number[]; slots: number[] } {
  const at = groups.start(g);
  const n = groups.length(g);
  return { items: Array.from(groups.cells.subarray(at, at + n)), slots: Array.from(groups.cells.subarray(at + n, at + 2 * n)) };
}

describe('GroupCells', () => {
  it('keeps each group\'s items and slots apart from every other group\'s, as groups come and go and the cells grow', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.boolean(), fc.nat(40), fc.array(fc.nat(1000), { minLength: 1, maxLength: 12 })), { maxLength: 400 }), (steps) => {
        const groups = new GroupCells();
        const held = new Map<number, { items: number[]; slots: number[] }>();
        for (const [adding, which, items] of steps) {
          if (adding && !held.has(which)) {
            const at = groups.add(which, items);
            const slots = items.map((item) => item * 7 + which);
            slots.forEach((slot, p) => (groups.cells[at + items.length + p] = slot));
            held.set(which, { items, slots });
          } else if (!adding && held.has(which)) {
            groups.remove(which);
            held.delete(which);
            expect(groups.length(which)).toBe(0);
          }
          for (const [g, want] of held) expect(read(groups, g)).toEqual(want);
        }
      }),
      { numRuns: 200 },
    );
  });

  it('gives a freed block to the next group of its size: the cells in use stay at the most held at once', () => {
    const groups = new GroupCells();
    // a stream of visits of five, a thousand alive at a time, ten thousand in all
    const first = groups.add(0, [1, 2, 3, 4, 5]);
    for (let g = 1; g < 1000; g++) groups.add(g, [1, 2, 3, 4, 5]);
    const top = Math.max(...Array.from({ length: 1000 }, (_, g) => groups.start(g))) + 10;
    for (let g = 1000; g < 10_000; g++) {
      groups.remove(g - 1000);
      const at = groups.add(g, [6, 7, 8, 9, 10]);
      expect(at + 10).toBeLessThanOrEqual(top);
    }
    expect(first).toBe(0);
    expect(groups.capacity).toBe(10_000);
  });
});
