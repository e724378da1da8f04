import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const ROOT = new URL('../../', import.meta.url).pathname;
const DIST = path.join(ROOT, 'dist');
/** Written last by a build: dist/ is whole and as new as this file. */
const STAMP = path.join(DIST, '.tests-built');
const LOCK = path.join(ROOT, '.vitest-build.lock');
/** A lock older than this belongs to a build that died. */
const STALE_LOCK_MS = 5 * 60_000;

/** The newest modification time among what the build reads. */
function newestSource(): number {
  let newest = 0;
  const visit = (file: string): void => {
    const stat = fs.statSync(file);
    if (stat.isDirectory()) for (const entry of fs.readdirSync(file)) visit(path.join(file, entry));
    else newest = Math.max(newest, stat.mtimeMs);
  };
  for (const entry of ['src', 'tsconfig.json', 'tsconfig.build.json', 'package.json']) visit(path.join(ROOT, entry));
  return newest;
}

function upToDate(): boolean {
  try {
    return fs.statSync(STAMP).mtimeMs > newestSource();
  } catch {
    return false;
  }
}

/** Moves every file of `from` into `to` one rename at a time, so a process loading dist/ meanwhile reads whole files. */
function moveInto(from: string, to: string): void {
  fs.mkdirSync(to, { recursive: true });
  for (const entry of fs.readdirSync(from, { withFileTypes: true })) {
    const source = path.join(from, entry.name);
    if (entry.isDirectory()) moveInto(source, path.join(to, entry.name));
    else fs.renameSync(source, path.join(to, entry.name));
  }
}

async function acquireLock(): Promise<void> {
  for (;;) {
    try {
      fs.mkdirSync(LOCK);
      return;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const age = Date.now() - (fs.statSync(LOCK, { throwIfNoEntry: false })?.mtimeMs ?? Date.now());
      if (age > STALE_LOCK_MS) fs.rmSync(LOCK, { recursive: true, force: true });
      else await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}

/**
 * Vitest's global setup: builds dist/ once before any test file runs, so that tests start
 * `node bin/recs-gateway.js` (as `npm start` does) rather than the sources through tsx each time.
 * Skipped when dist/ is newer than every source; a second suite running meanwhile waits for the lock.
 */
export default async function buildOnce(): Promise<void> {
  if (upToDate()) return;
  await acquireLock();
  const out = path.join(ROOT, `dist-tests-${process.pid}`);
  try {
    if (upToDate()) return;
    const started = new Date();
    const tsc = path.join(ROOT, 'node_modules/typescript/bin/tsc');
    const built = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json', '--outDir', out], { cwd: ROOT, encoding: 'utf8' });
    if (built.status !== 0) throw new Error(`npm run build failed before the tests:\n${built.stdout}${built.stderr}`);
    moveInto(out, DIST);
    fs.writeFileSync(STAMP, '');
    // dated when the build began: a source saved during the build is built next time
    fs.utimesSync(STAMP, started, started);
  } finally {
    fs.rmSync(out, { recursive: true, force: true });
    fs.rmSync(LOCK, { recursive: true, force: true });
  }
}
