import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { report } from '../helpers/harness.js';

const ROOT = new URL('../../', import.meta.url).pathname;
const require = createRequire(path.join(ROOT, 'package.json'));

/** The version of a package as installed (its own package.json), not as declared. */
function installed(name: string): string {
  // the package's main entry sits somewhere below its root: walk up to its package.json
  let dir = path.dirname(require.resolve(name));
  for (;;) {
    try {
      const manifest = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as { name?: string; version: string };
      if (manifest.name === name) return manifest.version;
    } catch {
      // no package.json at this level
    }
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`no package.json for ${name}`);
    dir = parent;
  }
}

const atLeast = (version: string, floor: string): boolean => {
  const [a, b] = [version, floor].map((v) => v.split(/[.-]/).slice(0, 3).map(Number));
  for (let i = 0; i < 3; i++) if (a![i] !== b![i]) return a![i]! > b![i]!;
  return true;
};

describe('dependencies', () => {
  it.each([
    ['graphql', '16.8.1'],
    ['@apollo/server', '5.5.0'],
  ])('%s is %s or later as installed', (name, floor) => {
    const version = installed(name);
    report(`installed ${name}`, { version, floor });
    expect(atLeast(version, floor)).toBe(true);
  });

  it('npm audit --audit-level=high finds nothing (skipped when the registry cannot be reached)', (context) => {
    const audit = spawnSync('npm', ['audit', '--audit-level=high', '--json'], { cwd: ROOT, encoding: 'utf8', timeout: 45_000 });
    let parsed: { metadata?: { vulnerabilities?: Record<string, number> }; message?: string } = {};
    try {
      parsed = JSON.parse(audit.stdout) as typeof parsed;
    } catch {
      // no JSON: npm itself failed
    }
    const counts = parsed.metadata?.vulnerabilities;
    if (counts === undefined) {
      // no report at all: the registry could not be asked (offline CI), which is no finding
      report('npm audit', { result: 'no report', detail: (parsed.message ?? audit.error?.message ?? 'npm audit gave no JSON').slice(0, 120) });
      context.skip();
      return;
    }
    report('npm audit', { ...counts });
    expect((counts.high ?? 0) + (counts.critical ?? 0)).toBe(0);
  }, 60_000);
});
