import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it, expect, afterAll } from 'vitest';
import { Catalog, loadCatalogFile } from '../../src/recommender/index.js';

const dir = mkdtempSync(join(tmpdir(), 'recs-catalog-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('catalogue loading', () => {
  it('JSON lines: a bad record is reported with its line and skipped, the rest loads', async () => {
    const path = join(dir, 'items.jsonl');
    writeFileSync(path, [
      JSON.stringify({ itemId: 11, parentItemId: 10, name: 'Lamp, red', categoryPath: 'Home/Lighting/Lamps', customerRating: '4.5' }),
      JSON.stringify({ itemId: 'abc', name: 'no id' }),
      '{ not json',
      '',
      JSON.stringify({ itemId: 12, parentItemId: 10, name: 'Lamp, blue', categoryNode: '1_2_3' }),
    ].join('\n'));
    const catalog = new Catalog();
    const report = await loadCatalogFile(path, catalog);
    expect(report.loaded).toBe(2);
    expect(report.skipped.map((s) => s.line)).toEqual([2, 3]);
    expect(report.skipped[0]!.reason).toContain('itemId');
    expect(catalog.get(11)).toMatchObject({ name: 'Lamp, red', customerRating: 4.5 });
    expect(catalog.family(10)).toEqual([11, 12]);
    expect(catalog.category('p:Home/Lighting/Lamps')).toEqual([11]);
    expect(catalog.department('p:Home')).toEqual([11]);
    expect(catalog.department('n:1')).toEqual([12]);
  });

  it('a JSON array or a saved search response: positions are reported', async () => {
    const path = join(dir, 'items.json');
    writeFileSync(path, JSON.stringify({ items: [{ itemId: 1 }, null, { itemId: 3 }] }, null, 2));
    const catalog = new Catalog();
    const report = await loadCatalogFile(path, catalog);
    expect(report).toEqual({ loaded: 2, skipped: [{ line: 2, reason: 'an item record must be a JSON object' }] });
    expect([...catalog.values()].map((i) => i.itemId)).toEqual([1, 3]);
  });

  it('gives the items under a category of 200,000 items (a probe stopped the learner\'s sweep with one)', () => {
    const catalog = new Catalog();
    for (let id = 1; id <= 200_000; id++) catalog.add({ itemId: id, name: `item ${id}`, categoryPath: 'Imp/Cat' } as Parameters<Catalog['add']>[0]);
    catalog.add({ itemId: 300_000, name: 'other', categoryPath: 'Other' } as Parameters<Catalog['add']>[0]);
    const under = catalog.under('Imp');
    expect(under.length).toBe(200_000);
    expect(under[199_999]).toBe(200_000);
    expect(catalog.under('Other')).toEqual([300_000]);
  });
});
