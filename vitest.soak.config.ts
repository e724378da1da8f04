import { defineConfig } from 'vitest/config';

// npm run test:soak: the long reliability runs (a minute of load, Redis cycled under load, a
// hundred crashes), kept out of npm test. One file at a time: they measure the machine.
export default defineConfig({
  test: {
    include: ['test/reliability/soak/*.soak.ts'],
    maxWorkers: 1,
    testTimeout: 15 * 60_000,
    hookTimeout: 120_000,
  },
});
