import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { describe, it, expect, afterAll } from 'vitest';
import { buildDemo, generateDemo } from '../../../src/backends/embedded/demo.js';
import { EmbeddedRecs } from '../../../src/backends/embedded/recs.js';
import { openEmbeddedRecs } from '../../../src/backends/embedded/openRecs.js';
import { RecsStore } from '../../../src/backends/embedded/store.js';
import { runImport } from '../../../src/cli/importCommand.js';
import { EmbeddedIngest } from '../../../src/backends/embedded/index.js';
import { coViews, principal } from '../../helpers/liveEvents.js';

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

  it('over every anchor whose category has planted complements: next-best-product shows them, post-browse substitutes', () => {
    const { catalog, log, data } = buildDemo();
    const recs = new EmbeddedRecs(catalog, log);
    const pathOf = (id: number): string => catalog.get(id)!.categoryPath!;
    // The categories planted as complements of each category (smartphones: cases and chargers).
    const complements = new Map<string, Set<string>>();
    for (const [parent, planted] of data.complements) if (planted.length > 0) complements.set(pathOf(parent), new Set(planted.map(pathOf)));
    let anchors = 0;
    let top5 = 0;
    let top1 = 0;
    let sameTop3 = 0;
    let browseSame = 0;
    let shown5 = 0;
    let browse5 = 0;
    for (const item of catalog.values()) {
      const wanted = complements.get(item.categoryPath!);
      if (wanted === undefined) continue;
      anchors++;
      const nbp = recs.recommendNow('NEXT_BEST_PRODUCT', item.itemId).items!.map((i) => i.categoryPath!);
      shown5 += Math.min(5, nbp.length);
      top5 += nbp.slice(0, 5).filter((p) => wanted.has(p)).length;
      if (wanted.has(nbp[0]!)) top1++;
      sameTop3 += nbp.slice(0, 3).filter((p) => p === item.categoryPath).length;
      const browse = recs.recommendNow('POST_BROWSE', item.itemId).items!.slice(0, 5);
      browse5 += browse.length;
      browseSame += browse.filter((i) => i.categoryPath === item.categoryPath).length;
    }
    expect(anchors).toBe(3825);
    expect(top5 / shown5).toBeGreaterThanOrEqual(0.8);
    expect(top1 / anchors).toBeGreaterThanOrEqual(0.95);
    expect(sameTop3 / (3 * anchors)).toBeLessThanOrEqual(0.05);
    expect(browseSame / browse5).toBeGreaterThanOrEqual(0.9);
  });
});

describe('a served demo shop and events sent today', () => {
  it('keeps its history: its last event is today, so RECS_EVENTS_MAX_AGE_DAYS does not expire it at the first event', async () => {
    const recs = await openEmbeddedRecs({ dataDir: null, model: { maxAgeDays: 90 } });
    try {
      const phone = [...recs.catalog.values()].find((i) => i.categoryPath === 'Gadgets & Devices/Mobile/Smartphones' && i.parentItemId === i.itemId)!;
      const before = recs.recommendNow('POST_BROWSE', phone.itemId).entries.map((e) => e.itemId);
      const nbpBefore = recs.recommendNow('NEXT_BEST_PRODUCT', phone.itemId).entries.length;
      expect(before).toHaveLength(10);
      // a shopper's visit today, of two items unrelated to the phone
      const [x, y] = [...recs.catalog.values()].filter((i) => i.categoryPath !== phone.categoryPath).map((i) => i.itemId);
      const now = Date.now();
      recs.applyEvents([x!, y!].map((itemId, i) => ({ kind: 'view' as const, session: 'today', user: null, orderId: null, itemId, time: now + i })));
      recs.flush();
      expect(recs.recommendNow('POST_BROWSE', phone.itemId).entries.map((e) => e.itemId)).toEqual(before);
      expect(recs.recommendNow('NEXT_BEST_PRODUCT', phone.itemId).entries).toHaveLength(nbpBefore);
    } finally {
      await recs.close();
    }
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
    await store.close();
    expect(await runImport(['events', events, '--format', 'diginetica-views', '--replace'], io)).toBe(0);
    const again = RecsStore.open(dir);
    expect(again.eventCount()).toBe(5);
    await again.close();

    const recs = await openEmbeddedRecs({ dataDir: dir });
    expect(recs.catalog.size).toBe(12);
    const list = await recs.recommend('POST_BROWSE', 100);
    // The default (no popularity discount, d = 0) scores c / n(a): 107 came right after 100 in
    // both of 100's visits, 1 (up to float32 rounding of the recency weights).
    expect(list.entries[0]).toMatchObject({ itemId: 107, source: 'CO_VIEW', evidence: 2 });
    expect(list.entries[0]!.score).toBeCloseTo(1, 6);
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

describe('the live model of a store, made in slices', () => {
  it('is filed between requests after start-up: the first batch waits for it without holding the event loop, and its answer follows', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'recs-slices-'));
    // a store without a catalogue: the demo shop's 200k events, whose filing takes many slices of 10 ms
    const recs = await openEmbeddedRecs({ dataDir });
    try {
      const ingest = new EmbeddedIngest(recs);
      const before = recs.recommendNow('POST_BROWSE', 31000124).entries.map((e) => e.itemId);
      expect(before).not.toContain(31001651);
      let turns = 0;
      let acknowledged = false;
      const call = ingest.recordEvents(principal(true), coViews(31000124, 31001651, 30, 0)).then((r) => {
        acknowledged = true;
        return r;
      });
      // Other work runs while the first batch waits (before, the model was filed in one piece, within the call)
      while (!acknowledged && turns < 100_000) {
        await new Promise((resolve) => setImmediate(resolve));
        turns++;
      }
      expect(await call).toMatchObject({ accepted: 60 });
      expect(turns).toBeGreaterThanOrEqual(2);
      expect(recs.recommendNow('POST_BROWSE', 31000124).entries[0]!.itemId).toBe(31001651);
    } finally {
      await recs.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);
});
