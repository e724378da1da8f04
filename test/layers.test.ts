import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

// The layout of src/ (README, "Architecture"): which part may import which. Arrows point down:
// a part imports only the parts listed for it, and every part listed sits below it. A new
// top-level folder or file of src/ must be given its place here before anything imports it.
const FOUNDATION = ['config', 'ports', 'model', 'shared', 'errors.ts', 'logger.ts'];
const ALLOWED: Record<string, readonly string[]> = {
  // the composition root: config -> stores, caches, backends -> server; signals
  'main.ts': ['cli', 'http', 'graphql', 'rest', 'backends', 'recommender', 'observability', 'auth', 'cache', ...FOUNDATION],
  // the command line's offline work (import, evaluate; manifest checks documents against the
  // schema), and start-up's error reporting; the server never imports them
  cli: ['backends', 'recommender', 'graphql', ...FOUNDATION],
  // node:http: routes, bodies, the lifecycle
  http: ['graphql', 'rest', 'observability', 'auth', 'cache', ...FOUNDATION],
  // GraphQL execution and the served REST interfaces: they see ports, never a backend
  graphql: ['__generated__', 'observability', 'cache', ...FOUNDATION],
  __generated__: ['graphql', 'ports'],
  rest: [...FOUNDATION],
  // the implementations behind ports/backend.ts
  backends: ['recommender', 'auth', 'cache', ...FOUNDATION],
  // the recommender's request-time kernel: catalogue, event log, model, co-occurrence, sessions,
  // recommend, live updates; it sees the foundation only
  recommender: [...FOUNDATION],
  observability: ['auth', ...FOUNDATION],
  auth: ['cache', ...FOUNDATION],
  cache: [...FOUNDATION],
  // the foundation: settings and their defaults, the interfaces, the error codes, the logger
  config: ['ports', 'model', 'errors.ts', 'logger.ts'],
  // item and event validation; small concurrency helpers; the interfaces alone
  model: ['ports', 'errors.ts'],
  shared: ['ports', 'errors.ts'],
  ports: ['errors.ts'],
  'errors.ts': [],
  'logger.ts': [],
};

const ROOT = path.resolve(import.meta.dirname, '..');
const SRC = path.join(ROOT, 'src');

// The recommender is a library: src/, bench/ and test/ reach it through src/recommender/index.ts.
// White-box tests of its kernels (the second build thread, the group cells) may import those.
const WHITE_BOX = ['test/recommender/parallelBuild.test.ts', 'test/recommender/groupCells.test.ts'];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return entry.name.endsWith('.ts') ? [full] : [];
  });
}

/** The part of src/ a file belongs to: its top-level folder, or its own name at the top. */
const partOf = (file: string): string => path.relative(SRC, file).split(path.sep)[0]!;

/** The relative module specifiers of a file: static imports, re-exports and dynamic imports. */
function relativeImports(text: string): string[] {
  const specifiers: string[] = [];
  for (const match of text.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)'(\.{1,2}\/[^']+)'/g)) specifiers.push(match[1]!);
  return specifiers;
}

const files = sourceFiles(SRC);

// A test's kind shows in its name: x.test.ts runs in-process, x.services.test.ts uses Redis or
// PostgreSQL, x.processes.test.ts starts processes. npm run test:unit leaves out the last by name.
const TEST = path.join(ROOT, 'test');
/** Calls that start a process: node's, a browser's, and the test helpers' that wrap them. */
const STARTS = /\b(spawn|spawnSync|execFile|execFileSync|execSync|fork|launch|launchPersistentContext|startServe|startUpstream|runCli|runNode|OwnRedis\.start|OwnRedisCluster\.start)\(/;
/** The helpers that define those wrappers: importing one of their constants starts nothing. */
const WRAPPERS = ['processes.ts', 'redis.ts', 'runNode.ts', 'build.ts', 'harness.ts'].map((name) => path.join(TEST, 'helpers', name));

/** Whether `file`, or a test module it imports (transitively), starts a process. */
function startsProcesses(file: string, seen = new Set<string>()): boolean {
  if (seen.has(file) || WRAPPERS.includes(file)) return false;
  seen.add(file);
  const text = readFileSync(file, 'utf8');
  if (STARTS.test(text)) return true;
  for (const [, spec] of text.matchAll(/from '(\.[^']+)\.js'/g)) {
    const imported = path.resolve(path.dirname(file), `${spec}.ts`);
    if (imported.startsWith(TEST) && startsProcesses(imported, seen)) return true;
  }
  return false;
}

describe('the layout of src/', () => {
  it('gives every top-level part a place', () => {
    const parts = [...new Set(files.map(partOf))].sort();
    expect(parts.filter((part) => !(part in ALLOWED))).toEqual([]);
  });

  it('has no arrow pointing up: each part imports only what it may', () => {
    const wrong: string[] = [];
    let seen = 0;
    for (const file of files) {
      const from = partOf(file);
      for (const specifier of relativeImports(readFileSync(file, 'utf8'))) {
        const to = partOf(path.resolve(path.dirname(file), specifier).replace(/\.js$/, '.ts'));
        seen += 1;
        if (to !== from && !ALLOWED[from]?.includes(to)) wrong.push(`${path.relative(SRC, file)} imports ${specifier} (${from} -> ${to})`);
      }
    }
    expect(seen).toBeGreaterThan(200);
    expect(wrong).toEqual([]);
  });

  it('is acyclic as declared: no part allows one that allows it back', () => {
    const reaches = (from: string, to: string, seen = new Set<string>()): boolean =>
      (ALLOWED[from] ?? []).some((next) => next === to || (!seen.has(next) && seen.add(next) && reaches(next, to, seen)));
    // __generated__ is graphql's own output (its resolver types name graphql's context)
    const cycles = Object.keys(ALLOWED).filter((part) => part !== 'graphql' && part !== '__generated__' && reaches(part, part));
    expect(cycles).toEqual([]);
  });

  it('reaches the recommender through its index alone (src/recommender/index.ts)', () => {
    const recommender = path.join(SRC, 'recommender');
    const entry = path.join(recommender, 'index.ts');
    const outside = [...files.filter((file) => partOf(file) !== 'recommender'), ...sourceFiles(path.join(ROOT, 'bench')), ...sourceFiles(path.join(ROOT, 'test'))]
      .filter((file) => !WHITE_BOX.includes(path.relative(ROOT, file).split(path.sep).join('/')));
    const wrong: string[] = [];
    for (const file of outside) {
      for (const specifier of relativeImports(readFileSync(file, 'utf8'))) {
        const target = path.resolve(path.dirname(file), specifier).replace(/\.js$/, '.ts');
        if (path.dirname(target) === recommender && target !== entry) wrong.push(`${path.relative(ROOT, file)} imports ${specifier}`);
      }
    }
    expect(outside.length).toBeGreaterThan(100);
    expect(wrong).toEqual([]);
  });

  it('reads the environment in config alone (main.ts hands process.env to it)', () => {
    const readers = files
      .filter((file) => /process\.env\b/.test(readFileSync(file, 'utf8')))
      .map((file) => path.relative(SRC, file).split(path.sep).join('/'))
      .filter((file) => !file.startsWith('config/') && file !== 'main.ts');
    expect(readers).toEqual([]);
  });
});

describe('the names of test files', () => {
  const tests = sourceFiles(TEST).filter((file) => file.endsWith('.test.ts'));
  const named = (file: string): boolean => file.endsWith('.processes.test.ts');
  const relative = (file: string): string => path.relative(ROOT, file).split(path.sep).join('/');

  it('say .processes. of every file that starts a process, itself or through what it imports', () => {
    expect(tests.length).toBeGreaterThan(100);
    expect(tests.filter((file) => !named(file) && startsProcesses(file)).map(relative)).toEqual([]);
  });

  it('say .processes. only of files that start one', () => {
    expect(tests.filter((file) => named(file) && !startsProcesses(file)).map(relative)).toEqual([]);
  });
});
