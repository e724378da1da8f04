import type { ServerResponse } from 'node:http';

/** A request's deadline: its `signal` is made on first use, so a request that never waits on a backend pays nothing. */
export interface RequestDeadline {
  /**
   * Aborted when the deadline passes (reason: a TimeoutError DOMException, as AbortSignal.timeout
   * gives, which the REST backend counts as an upstream failure) or when the connection closes
   * (which it also does after the answer is sent).
   */
  readonly signal: AbortSignal;
}

/**
 * The deadline of one request, counted from now. It passes for CallOptions as it is.
 *
 * Why not AbortSignal.any([controller.signal, AbortSignal.timeout(ms)]): on Node 20 that pair
 * costs about 100 µs a request in timers, weak references and garbage (measured, BENCHMARKS.md),
 * more than a cached answer takes altogether. One controller and one plain timer cost about 1 µs,
 * and a cached answer, or an embedded one, never asks for the signal at all.
 */
export function requestDeadline(res: ServerResponse, deadlineMs: number): RequestDeadline {
  const started = Date.now();
  let controller: AbortController | undefined;
  return {
    get signal(): AbortSignal {
      if (controller === undefined) {
        const made = new AbortController();
        controller = made;
        if (res.destroyed) {
          made.abort(new Error('client went away'));
        } else {
          const left = Math.max(0, deadlineMs - (Date.now() - started));
          const timer = setTimeout(() => made.abort(new DOMException('The request deadline passed', 'TimeoutError')), left);
          res.once('close', () => {
            clearTimeout(timer);
            made.abort(new Error('client went away'));
          });
        }
      }
      return controller.signal;
    },
  };
}
