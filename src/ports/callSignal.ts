import type { CallOptions } from './backend.js';

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

/**
 * The reason a request's signal is aborted with once its connection closes, which it does after
 * every answer: one object for all, since an Error made per request captured a stack each time
 * (1.7% of a cold REST-mode request's CPU, BENCHMARKS.md "ninth pass"); nobody reads its stack.
 */
export const CLIENT_GONE = (() => {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return new Error('client went away');
  } finally {
    Error.stackTraceLimit = limit;
  }
})();

/**
 * Whether the caller that gave `signal` has gone: its connection closed (aborted with CLIENT_GONE,
 * or abandoned). Not a passed deadline: that caller is still there, and is answered.
 */
export function callerGone(signal: AbortSignal): boolean {
  return abandoned.has(signal) || (signal.aborted && signal.reason === CLIENT_GONE);
}

/**
 * Work not done because everyone who asked for it has gone (a password check still queued when
 * every request waiting for it had closed its connection). No one reads the answer it gets, so it
 * is no failure of ours to log; the login limits still count the guess as a wrong one (RateLimiter).
 */
export class CallerGone extends Error {
  constructor(what: string) {
    super(`${what}: every caller had gone`);
  }
}

/**
 * One waiter for shared work, as kept while the work waits for its turn: the call's options (a
 * request's deadline, or a call that answers for several requests: CallOptions.waiting), or null
 * for a caller with none (it never goes). The signal is read only when asked (callerWaits), so a
 * sign-in that never waits for a turn makes none: a RequestDeadline made after its connection
 * closed gives one aborted with CLIENT_GONE.
 */
export type Caller = CallOptions | null;

export function callerOf(options: CallOptions | undefined): Caller {
  return options ?? null;
}

/** Whether `caller` still waits for the answer. */
export function callerWaits(caller: Caller): boolean {
  if (caller === null) return true;
  if (caller.waiting !== undefined) return caller.waiting();
  const signal = caller.signal;
  return signal === undefined || !callerGone(signal);
}
