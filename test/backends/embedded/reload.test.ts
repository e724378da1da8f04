import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it, expect, afterAll } from 'vitest';
import { openEmbeddedRecs } from '../../../src/backends/embedded/openRecs.js';
import { runImport } from '../../../src/cli/importCommand.js';

const dir = mkdtempSync(join(tmpdir(), 'recs-reload-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const io = (dataDir: string) => ({ dataDir, stdout: new Writable({ write: (_c, _e, done) => done() }), stderr: new Writable({ write: (_c, _e, done) => done() }) });

/** Diginetica views: each visit views `anchor` then `other`, `times` times. */
function coViews(path: string, anchor: number, other: number, times: number, firstSession: number): string {
  const lines = ['session_id;user_id;item_id;timeframe;eventdate'];
  for (let s = 0; s < times; s++) lines.push(`${firstSession + s};NA;${anchor};10;2016-05-09`, `${firstSession + s};NA;${other};20;2016-05-09`);
  writeFileSync(path, `${lines.join('\n')}\n`);
  return path;
}

async function importInto(dataDir: string, what: 'events' | 'catalog', path: string): Promise<void> {
  expect(await runImport(what === 'events' ? ['events', path, '--format', 'diginetica-views'] : ['catalog', path], io(dataDir))).toBe(0);
}

describe('a running EmbeddedRecs picks up imports into DATA_DIR', () => {
  it('reload(): new events and items become visible, the old model serves until then', async () => {
    const data = join(dir, 'a');
    const items = join(dir, 'items.jsonl');
    writeFileSync(items, Array.from({ length: 12 }, (_, i) => JSON.stringify({ itemId: 100 + i, name: `thing ${i}`, categoryPath: 'A/B' })).join('\n'));
    await importInto(data, 'catalog', items);
    await importInto(data, 'events', coViews(join(dir, 'v1.csv'), 100, 107, 2, 1));
    const recs = await openEmbeddedRecs({ dataDir: data, followIntervalMs: 0 });
    try {
      expect((await recs.recommend('POST_BROWSE', 100)).entries[0]).toMatchObject({ itemId: 107, evidence: 2 });

      await importInto(data, 'events', coViews(join(dir, 'v2.csv'), 100, 105, 5, 100));
      const more = join(dir, 'more.jsonl');
      writeFileSync(more, JSON.stringify({ itemId: 200, name: 'new thing', categoryPath: 'A/B' }));
      await importInto(data, 'catalog', more);
      // Nothing changes until the reload.
      expect((await recs.recommend('POST_BROWSE', 100)).entries[0]!.itemId).toBe(107);
      expect((await recs.getItems([200]))[0]).toBeNull();

      const result = await recs.reload();
      expect(result).toMatchObject({ reloaded: true, items: 13, events: 14 });
      expect(result.buildMs).toBeGreaterThan(0);
      const list = await recs.recommend('POST_BROWSE', 100);
      expect(list.entries.slice(0, 2).map((e) => [e.itemId, e.evidence])).toEqual([[105, 5], [107, 2]]);
      expect((await recs.getItems([200]))[0]).toMatchObject({ itemId: 200, name: 'new thing' });
      expect(list.entries).toHaveLength(10);

      // Events applied after a reload add to what was loaded (the live model reads the log it was built from).
      const t = Date.UTC(2016, 4, 9);
      recs.applyEvents(Array.from({ length: 6 }, (_, s) => [100, 109].map((itemId, j) => ({ kind: 'view' as const, session: `live${s}`, user: null, itemId, time: t + s * 10 + j, orderId: null }))).flat());
      const after = await recs.recommend('POST_BROWSE', 100);
      expect(after.entries.slice(0, 3).map((e) => [e.itemId, e.evidence])).toEqual([[109, 6], [105, 5], [107, 2]]);
    } finally {
      await recs.close();
    }
  });

  it('following: an import while it runs is served within a few intervals, without a call', async () => {
    const data = join(dir, 'b');
    const items = join(dir, 'items-b.jsonl');
    writeFileSync(items, Array.from({ length: 12 }, (_, i) => JSON.stringify({ itemId: 300 + i, name: `thing ${i}`, categoryPath: 'A/B' })).join('\n'));
    await importInto(data, 'catalog', items);
    const lines: string[] = [];
    const recs = await openEmbeddedRecs({ dataDir: data, followIntervalMs: 100, log: (l) => lines.push(l) });
    try {
      expect((await recs.recommend('POST_BROWSE', 300)).entries[0]!.source).toBe('CATEGORY');
      await importInto(data, 'events', coViews(join(dir, 'v3.csv'), 300, 311, 3, 1));
      const deadline = Date.now() + 25_000;
      while (Date.now() < deadline && (await recs.recommend('POST_BROWSE', 300)).entries[0]!.source !== 'CO_VIEW') await sleep(50);
      expect((await recs.recommend('POST_BROWSE', 300)).entries[0]).toMatchObject({ itemId: 311, source: 'CO_VIEW', evidence: 3 });
      // a small import is followed row by row, not reloaded whole
      expect(lines.join('\n')).not.toMatch(/reloaded/);
    } finally {
      await recs.close();
    }
  });
});
