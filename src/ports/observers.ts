/** Observer types of their own, so the REST backend and observability need not know each other. */

/** How one upstream attempt ended, as told to an observer. */
export interface UpstreamOutcome {
  /** The HTTP status, when a response came. */
  status?: number;
  /** The transport error's code (ECONNREFUSED, ...), when no response came. */
  error?: string;
}

/** Watches upstream attempts; `path` never carries the query string, which may hold a key. */
export interface UpstreamObserver {
  start(service: string, method: string, path: string): (outcome: UpstreamOutcome) => void;
}

export type BreakerState = 'closed' | 'open' | 'half-open';
