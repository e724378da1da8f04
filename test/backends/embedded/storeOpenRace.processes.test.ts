import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';

// Replicas starting together on one fresh DATA_DIR: each opens recs.db and brings its schema up
// to date. Checked and altered outside one transaction, two could both find the items table
// without its seq column and the second ALTER failed ("duplicate column name: seq": 1 start in
// 45 here). A race, so the test makes many chances for it: it never fails where the code is
// right. The built store (dist/, which npm install builds), as serve runs it.
const STORE = new URL('../../../dist/backends/embedded/store.js', import.meta.url).href;
const ROUNDS = 12;
const AT_ONCE = 3;

function openIn(dir: string): Promise<{ code: number | null; stderr: string }> {
  const code = `import(${JSON.stringify(STORE)}).then(({ RecsStore }) => RecsStore.open(${JSON.stringify(dir)}).close()).catch((e) => { console.error(e.message); process.exit(3); })`;
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('exit', (exitCode) => resolve({ code: exitCode, stderr }));
  });
}

describe('recs.db opened by several processes at once', () => {
  it('comes up in every one of them, fresh', async () => {
    const failures: string[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const dir = mkdtempSync(join(tmpdir(), 'recs-open-race-'));
      try {
        const runs = await Promise.all(Array.from({ length: AT_ONCE }, () => openIn(dir)));
        for (const run of runs) if (run.code !== 0) failures.push(run.stderr.trim());
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }
    expect(failures).toEqual([]);
  }, 120_000);

  it("waits for another replica's schema transaction however slow the disk makes it, rather than failing the start", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'recs-open-race-'));
    // another process's first open, holding the write lock on the fresh file (a commit with
    // synchronous=FULL on a busy disk) for far longer than a statement's wait (50 ms)
    const other = new Database(join(dir, 'recs.db'));
    try {
      other.pragma('journal_mode = WAL');
      other.exec('BEGIN IMMEDIATE');
      const opening = openIn(dir);
      await new Promise((resolve) => setTimeout(resolve, 600));
      other.exec('COMMIT');
      const run = await opening;
      expect(run.stderr.trim()).toBe('');
      expect(run.code).toBe(0);
    } finally {
      other.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
