import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { ITEM_ID_RANGE } from '../../src/model/itemRecord.js';
import { RecsStore } from '../../src/backends/embedded/store.js';
import { runImport } from '../../src/cli/importCommand.js';
import { sharedData } from '../helpers/sharedData.js';
import { scratchDirs } from '../helpers/stores.js';

/** Instacart's products.csv's layout, with its quoted names, and two rows that cannot be items. */
const PRODUCTS = [
  'product_id,product_name,aisle_id,department_id',
  '1,Chocolate Sandwich Cookies,61,19',
  '30,"Three Cheese Ziti, Marinara with Meatballs",38,1',
  '68,"Pancake Mix, ""Buttermilk""",130,14',
  '70,,5,13',
  'x71,Lemon Curd,88,13',
  '',
  '72,Sea Salt,104,',
].join('\r\n');

const INSTACART = ['--format', 'csv', '--item', 'product_id', '--name', 'product_name', '--category-node', 'department_id,aisle_id'];

/** Runs `recs-gateway import …` in this process on `dataDir`. */
async function importing(argv: string[], dataDir: string): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const out = new PassThrough().on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  const err = new PassThrough().on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await runImport(argv, { dataDir, stdout: out, stderr: err });
  return { code, stdout, stderr };
}

/** The stored item records, by id. */
function records(dataDir: string): Map<number, Record<string, unknown>> {
  const store = RecsStore.openReadOnly(dataDir)!;
  try {
    const all = [...store.catalogRecords()].map((text) => JSON.parse(text) as Record<string, unknown>);
    return new Map(all.map((record) => [record.itemId as number, record]));
  } finally {
    void store.close();
  }
}

describe('import catalog --format csv', () => {
  const dir = scratchDirs();

  it('imports a delimited catalogue by its columns: quoted names, categories from two columns, bad rows skipped with their line', async () => {
    const dataDir = dir();
    const file = path.join(dir(), 'products.csv');
    writeFileSync(file, PRODUCTS);
    const imported = await importing(['catalog', file, ...INSTACART], dataDir);
    expect(imported.code).toBe(0);
    expect(imported.stdout).toMatch(/^catalog: 4 items loaded, 2 skipped, 4 in /);
    expect(imported.stderr).toBe(`${file}:5: skipped: name: must be a non-empty string\n${file}:6: skipped: itemId must be ${ITEM_ID_RANGE}, got "x71"\n`);
    const stored = records(dataDir);
    expect([...stored.keys()].sort((a, b) => a - b)).toEqual([1, 30, 68, 72]);
    expect(stored.get(30)).toEqual({ itemId: 30, name: 'Three Cheese Ziti, Marinara with Meatballs', categoryNode: '1_38' });
    expect(stored.get(68)).toMatchObject({ name: 'Pancake Mix, "Buttermilk"', categoryNode: '14_130' });
    // an empty column leaves its part out
    expect(stored.get(72)).toMatchObject({ categoryNode: '104' });

    // known by its content and columns, as an events import is
    const again = await importing(['catalog', file, ...INSTACART], dataDir);
    expect([again.code, again.stdout]).toEqual([0, expect.stringContaining('was already imported')]);
    const otherWay = await importing(['catalog', file, '--format', 'csv', '--item', '1', '--name', '2', '--category-path', 'department_id,aisle_id'], dataDir);
    expect(otherWay.code).toBe(1);
    expect(otherWay.stderr).toContain('was imported as csv --item product_id --name product_name --category-node department_id,aisle_id --delimiter ,');

    // a JSON catalogue is still read without a --format
    const json = path.join(dir(), 'items.json');
    writeFileSync(json, JSON.stringify([{ itemId: 5, name: 'five' }]));
    expect((await importing(['catalog', json], dataDir)).code).toBe(0);
    expect(records(dataDir).get(5)).toEqual({ itemId: 5, name: 'five' });
  });

  it('refuses flags that do not add up in one line (exit 2), and names a column the header lacks', async () => {
    const file = path.join(dir(), 'products.csv');
    writeFileSync(file, PRODUCTS);
    const cases: [string[], string][] = [
      [['catalog', file, '--item', 'product_id', '--name', 'product_name'], '--item reads a csv catalogue: add --format csv\n'],
      [['catalog', file, '--format', 'csv', '--item', 'product_id'], '--format csv needs --item COLUMN and --name COLUMN\n'],
      [['catalog', file, '--format', 'xml'], 'unknown catalogue format "xml": json (the default) or csv\n'],
      [['catalog', file, ...INSTACART, '--session', 'aisle_id'], '--session is a flag of import events, not of import catalog\n'],
      [['events', file, '--format', 'csv', '--item', 'product_id', '--name', 'product_name'], '--name is a flag of import catalog, not of import events\n'],
    ];
    for (const [argv, line] of cases) {
      const result = await importing(argv, dir());
      expect([result.code, result.stderr, result.stdout], argv.join(' ')).toEqual([2, line, '']);
    }
    const dataDir = dir();
    const missing = await importing(['catalog', file, '--format', 'csv', '--item', 'product_id', '--name', 'title'], dataDir);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe(`recs-gateway: import of ${file} failed: column "title" (--name) is not in the header: product_id, product_name, aisle_id, department_id; nothing was imported\n`);
    expect(RecsStore.openReadOnly(dataDir)?.itemCount() ?? 0).toBe(0);
  });

  it('imports the bundled Instacart products whole', async (context) => {
    const products = sharedData('instacart/products.csv');
    if (!existsSync(products)) {
      context.skip(`${products} is absent: real-file check skipped`);
      return;
    }
    const dataDir = dir();
    const imported = await importing(['catalog', products, ...INSTACART], dataDir);
    expect([imported.code, imported.stderr]).toEqual([0, '']);
    expect(imported.stdout).toMatch(/^catalog: 49,688 items loaded, 0 skipped, 49,688 in /);
    const stored = records(dataDir);
    // the names with commas in them (3,220 of them) are whole
    expect(stored.get(48)).toEqual({ itemId: 48, name: 'School Glue, Washable, No Run', categoryNode: '17_87' });
    expect(stored.get(24852)).toMatchObject({ name: 'Banana' });
  });
});
