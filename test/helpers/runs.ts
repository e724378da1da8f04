/**
 * How many times a property (or a repeated case) runs: `suite` in npm test, `soak` in
 * npm run test:soak, which runs the files that call this too, with SOAK=1 (vitest.soak.config.ts).
 */
export function propertyRuns(suite: number, soak: number): number {
  return process.env.SOAK === '1' ? soak : suite;
}
