/** The part of autocannon's programmatic interface bench/run.ts uses (the package ships no types). */
declare module 'autocannon' {
  interface Result {
    duration: number;
    requests: { total: number; average: number };
    non2xx: number;
    errors: number;
    timeouts: number;
  }
  interface Instance extends PromiseLike<Result> {
    on(event: 'response', listener: (client: unknown, statusCode: number, bytes: number, ms: number) => void): this;
  }
  function autocannon(options: Record<string, unknown>): Instance;
  export default autocannon;
}
