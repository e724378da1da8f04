import { getEventListeners } from 'node:events';
import type { ServerResponse } from 'node:http';
import { abandon, CLIENT_GONE } from '../shared/callSignal.js';

/** The deadline of one request. Its `signal` is made on first use, so a request that never waits on a backend pays
 * nothing; a class, not a literal with a getter, and no AbortSignal.any, to keep the cached path cheap. */
export class RequestDeadline {
  private readonly started = Date.now();
  private controller: AbortController | undefined;

  constructor(
    private readonly res: ServerResponse,
    private readonly deadlineMs: number,
  ) {}

  // aborted at the deadline or when the connection closes (after the answer: only marked abandoned)
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
          if (getEventListeners(made.signal, 'abort').length > 0) made.abort(CLIENT_GONE);
          else abandon(made.signal);
        });
      }
    }
    return this.controller.signal;
  }
}

const DEADLINE = Symbol('recs-gateway.deadline');
type WithDeadline = ServerResponse & { [DEADLINE]?: RequestDeadline };

/** The request's deadline, made where a stage first waits: the prelude's and the engine's are one. A property of
 * the response, not a WeakMap entry: an entry a request weighs on the collector on the cached path. */
export function deadlineOf(res: ServerResponse, deadlineMs: number): RequestDeadline {
  return ((res as WithDeadline)[DEADLINE] ??= new RequestDeadline(res, deadlineMs));
}
