import { defineConfig } from 'vitest/config';
import base, { workersFromDist } from './vitest.config.js';

/** The files whose properties (and repeated cases) run longer here: propertyRuns in test/helpers/runs.ts. */
const LONG_PROPERTIES = [
  'test/model/isoTime.test.ts',
  'test/http/bodyAndErrors.test.ts',
  'test/graphql/pipeline/executionPaths.test.ts',
  'test/recommender/groupCells.test.ts',
  'test/recommender/live.test.ts',
  'test/e2e/fuzz.test.ts',
  'test/backends/rest/ingestForwarding.processes.test.ts',
];

// npm run test:soak: the long reliability runs (a minute of load, Redis cycled under load, a
// hundred crashes, the heap under large queries) and the long property runs, kept out of
// npm test. One file at a time: they measure the machine.
export default defineConfig({
  // the same module resolution as npm test (one graphql-js, as Node loads it)
  resolve: base.resolve,
  plugins: [workersFromDist],
  test: {
    include: ['test/soak/*.soak.ts', ...LONG_PROPERTIES],
    env: { SOAK: '1' },
    globalSetup: base.test?.globalSetup,
    maxWorkers: 1,
    testTimeout: 15 * 60_000,
    hookTimeout: 120_000,
  },
});
