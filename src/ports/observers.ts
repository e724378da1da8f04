/**
 * What the server's observers (metrics, traces) watch in a backend, as types of their own: the
 * REST backend reports through them and observability reads them, neither knowing the other.
 */

/** How one upstream attempt ended, as told to an observer. */
export interface UpstreamOutcome {
  /** The HTTP status, when a response came. */
  status?: number;
  /** The transport error's code (ECONNREFUSED, UND_ERR_HEADERS_TIMEOUT, ...), when none came. */
  error?: string;
}

/**
 * Watches upstream attempts (metrics, traces) without the caller knowing about either: `start`
 * is called as an attempt begins, in the caller's async context, and the function it returns when
 * the attempt ends. `path` never carries the query string (it may hold a key).
 */
export interface UpstreamObserver {
  start(service: string, method: string, path: string): (outcome: UpstreamOutcome) => void;
}

/** What a circuit breaker is doing, as exposed for metrics. */
export type BreakerState = 'closed' | 'open' | 'half-open';
