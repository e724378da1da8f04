import { createRequire } from 'node:module';
import { defineConfig } from 'vitest/config';

export default defineConfig({
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
    // CI also writes a JSON summary, from which .ci/run prints the plain "N passed, N failed" line
    reporters: process.env.CI ? ['default', 'json'] : ['default'],
    outputFile: { json: '.vitest-results.json' },
    testTimeout: 90_000,
    hookTimeout: 120_000,
  },
});
