import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { describe, it, expect, afterAll } from 'vitest';
import { buildDemo, generateDemo } from '../../src/backends/embedded/demo.js';
import { EmbeddedRecs, openEmbeddedRecs } from '../../src/backends/embedded/recs.js';
import { RecsStore } from '../../src/backends/embedded/store.js';
import { runImport } from '../../src/cli/importCommand.js';

const dir = mkdtempSync(join(tmpdir(), 'recs-data-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function sink(): { stream: Writable; text: () => string } {
  let text = '';
  return { stream: new Writable({ write(chunk, _enc, done) { text += String(chunk); done(); } }), text: () => text };
}

describe('demo shop', () => {
  it('is identical from run to run, big enough and realistic', () => {
    const hash = (): string => {
      const { records, events } = generateDemo();
      return createHash('sha256').update(JSON.stringify(records)).update(JSON.stringify(events)).digest('hex');
    };
    expect(hash()).toBe(hash());
    const { records, events } = generateDemo();
    expect(records.length).toBeGreaterThanOrEqual(10_000);
    expect(events.length).toBeGreaterThanOrEqual(200_000);
    expect(records.some((r) => r.stock === 'Not available')).toBe(true);
    expect(records.some((r) => Array.isArray(r.variants) && (r.variants as number[]).length > 1)).toBe(true);
    expect(String(records[0]!.thumbnailImage)).toMatch(/^https:\/\/img\.shop\.example\.com\//);
  });

  it('plants complements that next-best-product finds and substitutes that post-browse finds', async () => {
    const { catalog, log, data } = buildDemo();
    const recs = new EmbeddedRecs(catalog, log);
    const phone = [...catalog.values()].find((i) => i.categoryPath === 'Gadgets & Devices/Mobile/Smartphones' && i.parentItemId === i.itemId)!;
    const nbp = await recs.recommend('NEXT_BEST_PRODUCT', phone.itemId);
    const families = nbp.items!.slice(0, 3).map((i) => i.parentItemId);
    for (const complement of data.complements.get(phone.itemId)!) expect(families).toContain(complement);
    const browse = await recs.recommend('POST_BROWSE', phone.itemId);
    expect(browse.entries).toHaveLength(10);
    expect(browse.items!.filter((i) => i.categoryPath === phone.categoryPath).length).toBeGreaterThanOrEqual(8);
  });
});

describe('persistence through DATA_DIR', () => {
  it('imports a catalogue and events, skips a second import of the same file, and serves them', async () => {
    const items = join(dir, 'items.jsonl');
    writeFileSync(items, Array.from({ length: 12 }, (_, i) => JSON.stringify({ itemId: 100 + i, name: `thing ${i}`, categoryPath: i < 6 ? 'A/B' : 'C/D' })).join('\n'));
    const events = join(dir, 'views.csv');
    writeFileSync(events, 'session_id;user_id;item_id;timeframe;eventdate\n1;NA;100;10;2016-05-09\n1;NA;107;20;2016-05-09\n2;NA;100;10;2016-05-10\n2;NA;107;30;2016-05-10\n2;NA;999;40;2016-05-10\nbad line\n');
    const out = sink();
    const err = sink();
    const io = { dataDir: dir, stdout: out.stream, stderr: err.stream };
    expect(await runImport(['catalog', items], io)).toBe(0);
    expect(await runImport(['events', events, '--format', 'diginetica-views'], io)).toBe(0);
    expect(err.text()).toContain(':7: skipped');
    expect(await runImport(['events', events, '--format', 'diginetica-views'], io)).toBe(0);
    expect(out.text()).toContain('already imported');
    const store = RecsStore.open(dir);
    expect([store.itemCount(), store.eventCount()]).toEqual([12, 5]);
    store.close();
    expect(await runImport(['events', events, '--format', 'diginetica-views', '--replace'], io)).toBe(0);
    const again = RecsStore.open(dir);
    expect(again.eventCount()).toBe(5);
    again.close();

    const recs = await openEmbeddedRecs({ dataDir: dir });
    expect(recs.catalog.size).toBe(12);
    const list = await recs.recommend('POST_BROWSE', 100);
    // damped d = 0.3: c / (n(a)^0.7 n(b)^0.3) = 2 / (2^0.7 2^0.3) = 1.
    expect(list.entries[0]).toMatchObject({ itemId: 107, source: 'CO_VIEW', evidence: 2, score: 1 });
    expect(list.entries).toHaveLength(10);
    expect((await recs.getItems([107, 999]))[1]).toBeNull();
    await recs.close();
  });

  it('falls back to the demo when DATA_DIR has no catalogue, and with no DATA_DIR', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'recs-empty-'));
    try {
      const lines: string[] = [];
      const recs = await openEmbeddedRecs({ dataDir: empty, log: (l) => lines.push(l) });
      expect(recs.catalog.size).toBeGreaterThanOrEqual(10_000);
      expect(lines.join('\n')).toContain('demo shop');
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });

  it('rejects usage errors with exit code 2 and prints help', async () => {
    const out = sink();
    const err = sink();
    expect(await runImport(['events', 'x.csv'], { dataDir: dir, stdout: out.stream, stderr: err.stream })).toBe(2);
    expect(err.text()).toContain('--format is required');
    expect(await runImport(['--help'], { dataDir: dir, stdout: out.stream, stderr: err.stream })).toBe(0);
    expect(out.text()).toContain('import events <file>');
  });
});
