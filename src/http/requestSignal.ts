import { getEventListeners } from 'node:events';
import type { ServerResponse } from 'node:http';
import { abandon, CLIENT_GONE } from '../shared/callSignal.js';

/**
 * The deadline of one request, counted from when it is made. Its `signal` is made on first use,
 * so a request that never waits on a backend pays nothing; the object passes for CallOptions as
 * it is.
 *
 * Why not AbortSignal.any([controller.signal, AbortSignal.timeout(ms)]): on Node 20 that pair
 * costs about 100 µs a request in timers, weak references and garbage (measured, BENCHMARKS.md),
 * more than a cached answer takes altogether. One controller and one plain timer cost about 1 µs,
 * and a cached answer, or an embedded one, never asks for the signal at all.
 *
 * Why a class: an object literal with a getter (`{ get signal() {...} }`) costs about 0.5 µs to
 * make on Node 20's V8 and ends up in the old generation; made once a request, it took the
 * cached path's scavenges from 1 ms to 8 ms (BENCHMARKS.md). A class instance costs 5 ns.
 */
export class RequestDeadline {
  private readonly started = Date.now();
  private controller: AbortController | undefined;

  constructor(
    private readonly res: ServerResponse,
    private readonly deadlineMs: number,
  ) {}

  /**
   * Aborted when the deadline passes (reason: a TimeoutError DOMException, as AbortSignal.timeout
   * gives, which the REST backend counts as an upstream failure) or when the connection closes
   * (which it also does after the answer is sent; then, with no call waiting on it, it is marked
   * abandoned rather than aborted: see src/shared/callSignal.ts).
   */
  get signal(): AbortSignal {
    if (this.controller === undefined) {
      const made = new AbortController();
      this.controller = made;
      if (this.res.destroyed) {
        made.abort(CLIENT_GONE);
      } else {
        const left = Math.max(0, this.deadlineMs - (Date.now() - this.started));
        const timer = setTimeout(() => made.abort(new DOMException('The request deadline passed', 'TimeoutError')), left);
        this.res.once('close', () => {
          clearTimeout(timer);
          // a call waiting on the signal is stopped; with none waiting (every answer's end) the
          // signal is only marked, which later calls heed (src/shared/callSignal.ts)
          if (getEventListeners(made.signal, 'abort').length > 0) made.abort(CLIENT_GONE);
          else abandon(made.signal);
        });
      }
    }
    return this.controller.signal;
  }
}
