import type { CallOptions } from '../ports/backend.js';
import { pastDeadline } from '../errors.js';

/** Request signals let go instead of aborted: aborting after every answer dispatches an Event no
 * one listens to. Work that would start later asks `isCancelled`, which counts the mark as an abort. */
const abandoned = new WeakSet<AbortSignal>();

export function abandon(signal: AbortSignal): void {
  abandoned.add(signal);
}

/** Whether work given `signal` should not start (or go on): aborted, or abandoned with its request. */
export function isCancelled(signal: AbortSignal | undefined): boolean {
  return signal !== undefined && (signal.aborted || abandoned.has(signal));
}

/** One shared abort reason: an Error per request would capture a stack nobody reads. */
export const CLIENT_GONE = (() => {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return new Error('client went away');
  } finally {
    Error.stackTraceLimit = limit;
  }
})();

/** Whether the caller's connection closed; a passed deadline is not gone, and is still answered. */
export function callerGone(signal: AbortSignal): boolean {
  return abandoned.has(signal) || (signal.aborted && signal.reason === CLIENT_GONE);
}

/** Work dropped because every requester had gone: not a failure to log; login limits still count the guess. */
export class CallerGone extends Error {
  constructor(what: string) {
    super(`${what}: every caller had gone`);
  }
}

/** One waiter for shared work: its call options, or null for a caller that never goes. */
export type Caller = CallOptions | null;

export function callerOf(options: CallOptions | undefined): Caller {
  return options ?? null;
}

export function callerWaits(caller: Caller): boolean {
  if (caller === null) return true;
  if (caller.waiting !== undefined) return caller.waiting();
  const signal = caller.signal;
  return signal === undefined || !callerGone(signal);
}

/** Work done once for several requests: its signal aborts only once every caller has gone or passed
 * its deadline, so the first leaving never fails the others and a later one never delays the first. */
export class SharedCall implements CallOptions {
  private readonly joiners: Joiner[] = [];
  private controller: AbortController | undefined;
  private readonly watched: [AbortSignal, () => void][] = [];
  private over = false;

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

  /** Whether every caller so far had gone or was past its deadline; a new caller restarts it. */
  get stopped(): boolean {
    return this.controller?.signal.aborted === true;
  }

  /** Whether the work stopped before `caller` joined while it was still waiting: it is owed its own answer. */
  stoppedWithout(caller: Caller): boolean {
    return this.stopped && !isCancelled(caller?.signal);
  }

  settled(): void {
    this.over = true;
    for (const [signal, listener] of this.watched.splice(0)) signal.removeEventListener('abort', listener);
  }

  private watch(joiner: Joiner): void {
    const signal = joiner.caller?.signal;
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

interface Joiner {
  caller: Caller;
  stop(error: unknown): void;
}
