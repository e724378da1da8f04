import type { CallOptions } from './backend.js';
import { pastDeadline } from '../errors.js';

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

/**
 * Work done once for several requests (the rate limiter's sign-in for a credential sent again from
 * one address), as the options it runs with:
 * waiting while any of them is, and a signal (for a service over HTTP, which aborts its call with
 * it) aborted only once every one of them has gone (CLIENT_GONE) or is past its deadline (a
 * deadline's reason). Where the service heeds that signal, each request is answered by the work or
 * at its own deadline, whichever comes first (pastDeadline): the first's leaving must not fail the
 * others, and a later one must not keep the first waiting past its deadline. (Its own signal and a
 * listener on each caller's cost a few microseconds: REST mode's shared lists and items, on the
 * cold path, let a caller ask again instead: CachingRecsService.) The signal is made when first read
 * and only then are the callers' read, so work whose service never reads it (the embedded key
 * service, which answers past a deadline as well) makes none.
 */
export class SharedCall implements CallOptions {
  private readonly joiners: Joiner[] = [];
  private controller: AbortController | undefined;
  /** The callers' signals listened to, and their listeners, to let go once the work is settled. */
  private readonly watched: [AbortSignal, () => void][] = [];
  private over = false;

  /** `service`: who is waited for, named in the deadline's error; `clientAddress`: CallOptions'. */
  constructor(
    private readonly service: string,
    readonly clientAddress?: string,
  ) {}

  get signal(): AbortSignal {
    if (this.controller === undefined) {
      this.controller = new AbortController();
      for (const joiner of this.joiners) this.watch(joiner);
      this.check();
    }
    return this.controller.signal;
  }

  /** `answer` for `caller`, or its deadline's error first where the service heeds deadlines. */
  join<T>(caller: Caller, answer: Promise<T>): Promise<T> {
    // settled: nothing is left to wait for, and a listener would only cost the caller's close
    if (this.over) return answer;
    return new Promise<T>((resolve, reject) => {
      const joiner: Joiner = { caller, stop: reject };
      this.joiners.push(joiner);
      answer.then(resolve, reject);
      if (this.controller !== undefined && !this.controller.signal.aborted) this.watch(joiner);
    });
  }

  waiting(): boolean {
    return this.joiners.some((joiner) => callerWaits(joiner.caller));
  }

  /** Whether the work was stopped: every caller so far had gone or was past its deadline. A new caller starts it again. */
  get stopped(): boolean {
    return this.controller?.signal.aborted === true;
  }

  /**
   * Whether the work was stopped for every caller before `caller` while `caller` itself was not
   * gone nor past its deadline: it joined after, and is owed an answer of its own.
   */
  stoppedWithout(caller: Caller): boolean {
    return this.stopped && !isCancelled(caller?.signal);
  }

  /** The work is over: its callers' signals are let go (a closing connection then only marks its own). */
  settled(): void {
    this.over = true;
    for (const [signal, listener] of this.watched.splice(0)) signal.removeEventListener('abort', listener);
  }

  /** Answers the joiner at its signal's abort (at once if that has come), and stops the work once no one waits. */
  private watch(joiner: Joiner): void {
    const signal = joiner.caller?.signal;
    // a caller without a signal waits for as long as the work takes
    if (signal === undefined) return;
    if (isCancelled(signal)) return joiner.stop(pastDeadline(this.service));
    const listener = (): void => {
      joiner.stop(pastDeadline(this.service));
      this.check();
    };
    signal.addEventListener('abort', listener, { once: true });
    this.watched.push([signal, listener]);
  }

  private check(): void {
    const controller = this.controller!;
    if (controller.signal.aborted) return;
    const signals: AbortSignal[] = [];
    for (const { caller } of this.joiners) {
      const signal = caller?.signal;
      if (signal === undefined || !isCancelled(signal)) return;
      signals.push(signal);
    }
    if (signals.length === 0) return;
    // one still there but past its deadline is answered as such, not as a caller gone
    const passed = signals.find((signal) => !callerGone(signal));
    controller.abort(passed === undefined ? CLIENT_GONE : passed.reason);
  }
}

/** A request waiting for a SharedCall, and how to answer it before the work ends. */
interface Joiner {
  caller: Caller;
  stop(error: unknown): void;
}
