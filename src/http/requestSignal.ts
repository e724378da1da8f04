import type { ServerResponse } from 'node:http';

/**
 * The signal of one request: aborted when its deadline passes (reason: a TimeoutError
 * DOMException, as AbortSignal.timeout gives, which the REST backend counts as an upstream
 * failure) or when the connection closes (which it also does after the answer is sent).
 *
 * Why not AbortSignal.any([controller.signal, AbortSignal.timeout(ms)]): on Node 20 that pair
 * costs about 100 µs a request in timers, weak references and garbage (measured, BENCHMARKS.md),
 * more than a cached answer takes altogether; one controller and one plain timer cost about 1 µs.
 */
export function requestSignal(res: ServerResponse, deadlineMs: number): AbortSignal {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new DOMException('The request deadline passed', 'TimeoutError')), deadlineMs);
  res.once('close', () => {
    clearTimeout(timer);
    controller.abort(new Error('client went away'));
  });
  return controller.signal;
}
