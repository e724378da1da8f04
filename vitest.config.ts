import { createRequire } from 'node:module';
import path from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { defineConfig } from 'vitest/config';

const ROOT = path.dirname(new URL(import.meta.url).pathname);

/**
 * Worker threads start from dist/ (test/helpers/distWorkers.ts), as processes do: from src/ each
 * started tsx first, seconds a worker on a loaded machine. Needs the build of globalSetup.
 */
export const workersFromDist = {
  name: 'workers-from-dist',
  enforce: 'pre' as const,
  resolveId(source: string, importer: string | undefined): string | null {
    if (source !== './threads.js' || importer === undefined || path.dirname(importer) !== path.join(ROOT, 'src/recommender')) return null;
    return path.join(ROOT, 'test/helpers/distWorkers.ts');
  },
};

/**
 * Test files known to run longest (by name, whatever their folder or kind), longest first. On a fresh
 * clone vitest has no durations and starts the largest files first: a long small file started last
 * would run on while the other worker waits.
 */
const LONGEST = ['liveStore', 'startup', 'servedIngest', 'prune', 'ingestApi', 'ingestForwarding', 'protection', 'lingeringClose', 'load', 'crash'];

/** Vitest's order (failed, then longest as last run, else largest first), with LONGEST ahead of it. */
class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (file: TestSpecification): number => {
      const at = LONGEST.indexOf(path.basename(file.moduleId).split('.')[0]!);
      return at < 0 ? LONGEST.length : at;
    };
    const sorted = await super.sort(files);
    return sorted.map((file, at) => ({ file, at })).sort((a, b) => rank(a.file) - rank(b.file) || a.at - b.at).map(({ file }) => file);
  }
}

export default defineConfig({
  plugins: [workersFromDist],
  resolve: {
    // graphql 16 has no "exports": Node loads its CommonJS entry for `import 'graphql'` (so do
    // Apollo and graphql-tools at run time), while Vite would pick its "module" build for our
    // code, and a schema made by one copy is refused by the other. The tests load what Node does.
    alias: [{ find: /^graphql$/, replacement: createRequire(import.meta.url).resolve('graphql') }],
  },
  test: {
    include: ['test/**/*.test.ts'],
    // tests start the gateway as `npm start` does, from dist/: built here once, not per process
    globalSetup: ['test/helpers/build.ts'],
    // Tests share one machine's Redis and PostgreSQL under their own prefixes and databases;
    // two files at a time keeps the 2-core machine responsive.
    maxWorkers: 2,
    // a worker runs file after file in one module graph: a file isolated imported Apollo, graphql
    // and the sources again. A file that sets something global (a tracer provider) undoes it after.
    isolate: false,
    sequence: { sequencer: LongestFirst },
    // CI also writes a JSON summary, from which .ci/run prints the plain "N passed, N failed" line
    reporters: process.env.CI ? ['default', 'json'] : ['default'],
    outputFile: { json: '.vitest-results.json' },
    testTimeout: 90_000,
    hookTimeout: 120_000,
  },
});
