/**
 * A request's signal that was let go instead of aborted. Every answer ends with its connection's
 * 'close', and aborting the request's signal there cost about 4 µs on Node 20 (an Event made and
 * dispatched) even when nothing listened, which after an answer is nearly always: 2% of a cold
 * REST-mode request's CPU (BENCHMARKS.md, "eleventh pass"). Where nothing listens, the signal is
 * marked here instead; whoever would start work on it later asks `isCancelled`, which counts the
 * mark as an abort. A call waiting on the signal when the connection closes has a listener on it,
 * and that signal is aborted as before.
 */
const abandoned = new WeakSet<AbortSignal>();

/** Marks `signal` as its request's end: isCancelled is true for it from now on. */
export function abandon(signal: AbortSignal): void {
  abandoned.add(signal);
}

/** Whether work given `signal` should not start (or go on): aborted, or abandoned with its request. */
export function isCancelled(signal: AbortSignal | undefined): boolean {
  return signal !== undefined && (signal.aborted || abandoned.has(signal));
}
