import type { BreakerState } from '../../ports/observers.js';

export type { BreakerState };

/** How one upstream attempt ended, as far as the breaker cares. */
export type AttemptOutcome = 'success' | 'failure' | 'neutral';

/** A consecutive-failure circuit breaker for one upstream. While open it answers "no" without any
 * I/O, so a dead upstream costs callers nothing but a map lookup; after `openMs` exactly one probe
 * is let through (half-open), and its outcome decides whether to close or to open again. */
export class CircuitBreaker {
  private consecutiveFailures = 0;
  private openedAt = 0;
  private probeInFlight = false;
  private current: BreakerState = 'closed';

  constructor(
    private readonly failureThreshold: number,
    private readonly openMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  get state(): BreakerState {
    // The open -> half-open move is time-driven; report it without waiting for a request.
    if (this.current === 'open' && this.now() - this.openedAt >= this.openMs) return 'half-open';
    return this.current;
  }

  /** Milliseconds until a probe will be let through; 0 unless open. */
  get retryInMs(): number {
    return this.current === 'open' ? Math.max(0, this.openMs - (this.now() - this.openedAt)) : 0;
  }

  /** Whether an attempt may go upstream now; when it returns true, `record` must follow. */
  tryAcquire(): boolean {
    if (this.current === 'closed') return true;
    if (this.current === 'open') {
      if (this.now() - this.openedAt < this.openMs) return false;
      this.current = 'half-open';
    }
    if (this.probeInFlight) return false;
    this.probeInFlight = true;
    return true;
  }

  record(outcome: AttemptOutcome): void {
    if (this.current === 'half-open') {
      this.probeInFlight = false;
      if (outcome === 'success') this.close();
      else if (outcome === 'failure') this.open();
      // neutral (the caller went away): the next request probes instead
      return;
    }
    if (outcome === 'success') this.consecutiveFailures = 0;
    else if (outcome === 'failure' && ++this.consecutiveFailures >= this.failureThreshold) this.open();
  }

  private open(): void {
    this.current = 'open';
    this.openedAt = this.now();
  }

  private close(): void {
    this.current = 'closed';
    this.consecutiveFailures = 0;
  }
}
