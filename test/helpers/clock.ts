/**
 * A clock that moves only when a test says so, for what decides by time (a breaker's open
 * period, a cache's expiry): the test then asserts what happens at a time, not after a sleep
 * that a busy machine may stretch past the next deadline.
 */
export class ManualClock {
  private ms: number;

  constructor(start = Date.now()) {
    this.ms = start;
  }

  /** The current time in ms, for a `now` option (bound: pass it as it is). */
  readonly now = (): number => this.ms;

  advance(ms: number): void {
    this.ms += ms;
  }
}
