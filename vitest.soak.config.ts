import { defineConfig } from 'vitest/config';
import base from './vitest.config.js';

// npm run test:soak: the long reliability runs (a minute of load, Redis cycled under load, a
// hundred crashes), kept out of npm test. One file at a time: they measure the machine.
export default defineConfig({
  // the same module resolution as npm test (one graphql-js, as Node loads it)
  resolve: base.resolve,
  test: {
    include: ['test/reliability/soak/*.soak.ts'],
    globalSetup: base.test?.globalSetup,
    maxWorkers: 1,
    testTimeout: 15 * 60_000,
    hookTimeout: 120_000,
  },
});
