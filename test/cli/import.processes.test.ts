import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createWriteStream, existsSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { RecsStore } from '../../src/backends/embedded/store.js';
import { GATEWAY_ARGS, runCli } from '../helpers/processes.js';
import { tempDir } from '../helpers/stores.js';

const ROOT = new URL('../../', import.meta.url).pathname;

const record = (id: number): string => JSON.stringify({ itemId: id, name: `item ${id}`, categoryPath: 'A/B', salePrice: 9.99, shortDescription: 'x'.repeat(200) });

/** What DATA_DIR/recs.db holds: its finished imports, items and events. */
function contents(dataDir: string): { imports: number; items: number; events: number } {
  const store = RecsStore.openReadOnly(dataDir);
  if (store === null) return { imports: 0, items: 0, events: 0 };
  try {
    return { imports: store.importsNow().length, items: store.itemCount(), events: store.eventCount() };
  } finally {
    void store.close();
  }
}

describe('an import that fails', () => {
  const dirs: { dir: string; remove(): void }[] = [];
  const dataDir = () => {
    const d = tempDir();
    dirs.push(d);
    return d.dir;
  };
  afterAll(() => {
    for (const d of dirs) d.remove();
  });

  it('records nothing when nothing in the file could be read, so a retry imports instead of saying "already imported"', async () => {
    const DATA_DIR = dataDir();
    const events = path.join(dataDir(), 'events.csv');
    // Diginetica's views, given as RetailRocket's: not one line reads
    writeFileSync(events, 'sessionId;userId;itemId;timeframe;eventdate\n1;NA;100;10;2016-05-09\n1;NA;107;20;2016-05-09\n');
    const wrong = await runCli(['import', 'events', events, '--format', 'retailrocket'], { DATA_DIR });
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toContain('nothing was recorded');
    expect(contents(DATA_DIR)).toEqual({ imports: 0, items: 0, events: 0 });

    const again = await runCli(['import', 'events', events, '--format', 'retailrocket'], { DATA_DIR });
    expect(again.code).toBe(1);
    expect(again.stdout).not.toContain('already imported');
    expect(contents(DATA_DIR).imports).toBe(0);
  });

  it('writes nothing of a catalogue whose bad record comes after good ones, and keeps the old one on --replace', async () => {
    const DATA_DIR = dataDir();
    const good = path.join(dataDir(), 'good.json');
    writeFileSync(good, `[${[1, 2, 3].map(record).join(',\n')}]\n`);
    expect((await runCli(['import', 'catalog', good], { DATA_DIR })).code).toBe(0);
    expect(contents(DATA_DIR)).toEqual({ imports: 1, items: 3, events: 0 });

    // three good records, then the file breaks off
    const broken = path.join(dataDir(), 'broken.json');
    writeFileSync(broken, `[${[10, 11, 12].map(record).join(',\n')},\n{"itemId": 13, "name": "cut o`);
    const failed = await runCli(['import', 'catalog', broken, '--replace'], { DATA_DIR });
    expect(failed.code).toBe(1);
    expect(failed.stderr).toMatch(/broken\.json:0: skipped: not JSON/);
    expect(failed.stderr).toContain('nothing was recorded');
    // the old catalogue is still there, whole; the broken file is not recorded as imported
    expect(contents(DATA_DIR)).toEqual({ imports: 1, items: 3, events: 0 });
    const retry = await runCli(['import', 'catalog', broken], { DATA_DIR });
    expect(retry.stdout).not.toContain('already imported');
  });

  it('leaves nothing half-written when the process is killed, and a retry imports the whole file', async () => {
    const DATA_DIR = dataDir();
    const items = path.join(dataDir(), 'items.jsonl');
    const ITEMS = 150_000;
    const out = createWriteStream(items);
    for (let id = 1; id <= ITEMS; id++) if (!out.write(`${record(id)}\n`)) await once(out, 'drain');
    out.end();
    await once(out, 'finish');

    const child = spawn(process.execPath, [...GATEWAY_ARGS, 'import', 'catalog', items], {
      cwd: ROOT,
      env: { ...process.env, DATA_DIR },
      stdio: 'ignore',
    });
    const exited = once(child, 'exit');
    // killed once it has written a good part of the file (batches of 20,000 items), in the
    // database or its write-ahead log
    const written = (): number =>
      ['recs.db', 'recs.db-wal'].reduce((sum, file) => sum + (existsSync(path.join(DATA_DIR, file)) ? statSync(path.join(DATA_DIR, file)).size : 0), 0);
    for (let i = 0; i < 1200 && child.exitCode === null; i++) {
      if (written() > 16 * 1024 * 1024) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(child.exitCode).toBeNull();
    child.kill('SIGKILL');
    await exited;
    expect(contents(DATA_DIR)).toEqual({ imports: 0, items: 0, events: 0 });

    const retry = await runCli(['import', 'catalog', items], { DATA_DIR });
    expect(retry.code).toBe(0);
    expect(retry.stdout).toContain(`catalog: ${ITEMS.toLocaleString('en-US')} items loaded`);
    expect(contents(DATA_DIR)).toEqual({ imports: 1, items: ITEMS, events: 0 });
  }, 120_000);

  it('reports a file it cannot read, and an unusable DATA_DIR, in one line', async () => {
    const missing = await runCli(['import', 'catalog', '/nonexistent/items.json'], { DATA_DIR: dataDir() });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe('recs-gateway: cannot read /nonexistent/items.json: no such file or directory\n');
    const folder = await runCli(['import', 'catalog', dataDir()], { DATA_DIR: dataDir() });
    expect(folder.code).toBe(1);
    expect(folder.stderr).toMatch(/^recs-gateway: cannot read .*: it is a directory; name the file to import\n$/);

    const file = path.join(dataDir(), 'plain-file');
    writeFileSync(file, '');
    const items = path.join(dataDir(), 'items.json');
    writeFileSync(items, `[${record(1)}]`);
    const bad = await runCli(['import', 'catalog', items], { DATA_DIR: path.join(file, 'data') });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/^recs-gateway: import of .*items\.json failed: cannot create DATA_DIR .*: a part of the path is not a directory; nothing was imported\n$/);
  });
});
