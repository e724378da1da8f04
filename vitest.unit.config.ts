import { configDefaults, defineConfig } from 'vitest/config';
import base from './vitest.config.js';

// npm run test:unit: the in-process test files (no process, no Redis or PostgreSQL), for a quick
// check between edits; npm test runs them all. Their names say so, and test/layers.test.ts holds
// the names to what the files do.
export default defineConfig({
  resolve: base.resolve,
  test: {
    ...base.test,
    exclude: [...configDefaults.exclude, 'test/**/*.processes.test.ts', 'test/**/*.services.test.ts'],
    globalSetup: [],
  },
});
