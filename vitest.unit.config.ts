import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { defineConfig } from 'vitest/config';
import base from './vitest.config.js';

const ROOT = path.dirname(new URL(import.meta.url).pathname);

/** Calls that start a process: node's, and the test helpers' that wrap them. */
const STARTS = /\b(spawn|spawnSync|execFile|execFileSync|execSync|fork|startServe|runCli|runNode|OwnRedis\.start)\(/;
/** The helpers that define those wrappers: importing one of their constants starts nothing. */
const WRAPPERS = ['processes.ts', 'redis.ts', 'runNode.ts', 'build.ts'].map((name) => path.join(ROOT, 'test/helpers', name));

/** Whether `file`, or a test module it imports (transitively), starts a process. */
function startsProcesses(file: string, seen = new Set<string>()): boolean {
  if (seen.has(file) || WRAPPERS.includes(file)) return false;
  seen.add(file);
  const text = readFileSync(file, 'utf8');
  if (STARTS.test(text)) return true;
  for (const [, spec] of text.matchAll(/from '(\.[^']+)\.js'/g)) {
    const imported = path.resolve(path.dirname(file), `${spec}.ts`);
    if (imported.startsWith(path.join(ROOT, 'test')) && startsProcesses(imported, seen)) return true;
  }
  return false;
}

const inProcess = readdirSync(path.join(ROOT, 'test'), { recursive: true, encoding: 'utf8' })
  .filter((file) => file.endsWith('.test.ts'))
  .map((file) => path.join('test', file))
  .filter((file) => !startsProcesses(path.join(ROOT, file)))
  .sort();

// npm run test:unit: the test files that start no process (no gateway, no CLI, no Redis of their
// own), found by what they import, for a quick check between edits; npm test runs them all.
export default defineConfig({
  resolve: base.resolve,
  test: {
    ...base.test,
    include: inProcess,
    globalSetup: [],
  },
});
