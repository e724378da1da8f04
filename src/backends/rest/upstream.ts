import { setTimeout as sleep } from 'node:timers/promises';
import type { IncomingHttpHeaders } from 'node:http';
import type { Socket } from 'node:net';
import { Pool, buildConnector } from 'undici';
import type { Dispatcher } from 'undici';
import { ErrorCode, GatewayError, pastDeadline, upstreamUnavailable } from '../../errors.js';
import { CircuitBreaker } from './breaker.js';
import type { AttemptOutcome, BreakerState } from './breaker.js';
import type { UpstreamObserver } from '../../ports/observers.js';
import { isCancelled } from '../../shared/callSignal.js';
import { RetryBudget } from './retryBudget.js';

/** How one upstream is called; every field is set (createRestBackend fills in the defaults). */
export interface UpstreamSettings {
  connectTimeoutMs: number;
  headersTimeoutMs: number;
  bodyTimeoutMs: number;
  connections: number;
  keepAliveTimeoutMs: number;
  retries: number;
  retryBaseDelayMs: number;
  retryMaxDelayMs: number;
  maxRetryAfterMs: number;
  retryBudgetRatio: number;
  retryBudgetReserve: number;
  breakerFailures: number;
  breakerOpenMs: number;
  maxResponseBytes: number;
}

export interface UpstreamRequest {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Path and query, relative to the base URL's path. */
  path: string;
  headers?: Record<string, string>;
  body?: string;
  signal?: AbortSignal | undefined;
  /** Whether a 5xx counts against the breaker; false where a client can provoke one at will. Default true. */
  serverErrorIsFailure?: boolean;
  /** Whether a GET answered 429 is tried again (within the retry budget). Default true. */
  retryRateLimited?: boolean;
}

export type { UpstreamObserver, UpstreamOutcome } from '../../ports/observers.js';

export interface UpstreamResponse {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
}

/** The headers of a request that brings none of its own: one object for all (undici only reads it). */
const ACCEPT_JSON: Readonly<Record<string, string>> = Object.freeze({ accept: 'application/json' });

/** Statuses worth another try of an idempotent request. */
const RETRYABLE_STATUSES = new Set([429, 502, 503, 504]);

/** Errors where the request most likely never reached the application: safe to retry a GET. */
const CONNECTION_ERROR_CODES = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH',
  'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED',
]);

const DESCRIPTIONS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  UND_ERR_CONNECT_TIMEOUT: 'connect timeout',
  UND_ERR_HEADERS_TIMEOUT: 'no response in time (headers timeout)',
  UND_ERR_BODY_TIMEOUT: 'response body stalled (body timeout)',
  UND_ERR_SOCKET: 'connection closed by the upstream',
  ENOTFOUND: 'host not found',
};

class ResponseTooLarge extends Error {}

function errorCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

function describe(error: unknown): string {
  if (error instanceof ResponseTooLarge) return error.message;
  const code = errorCode(error);
  return (code && DESCRIPTIONS[code]) ?? (code ? `request failed (${code})` : 'request failed');
}

/** The deadline passing counts against the upstream; the client going away (or an abandoned signal) does not. */
function abortOutcome(signal: AbortSignal): AttemptOutcome {
  const reason: unknown = signal.reason;
  return reason instanceof Error && reason.name === 'TimeoutError' ? 'failure' : 'neutral';
}

const ignore = (): void => undefined;

/** What a write gets from a connection the peer has closed or reset: its answer may still be there to read. */
const WRITE_ON_CLOSED = new Set(['EPIPE', 'ECONNRESET']);

/** Lets a socket's answer outlive a failed write: an upstream may answer (a 403, a 413) before it
 * has read the body and close; node would destroy the socket with the answer unread. */
function answersOutliveWrites(socket: Socket): void {
  const write = socket._write.bind(socket);
  const writev = socket._writev?.bind(socket);
  const keepAnswer = (callback: (error?: Error | null) => void) => (error?: Error | null): void =>
    callback(error != null && WRITE_ON_CLOSED.has(errorCode(error) ?? '') ? null : error);
  socket._write = (chunk: unknown, encoding, callback) => write(chunk, encoding, keepAnswer(callback));
  if (writev !== undefined) socket._writev = (chunks, callback) => writev(chunks, keepAnswer(callback));
}

/** One response collected as text straight from undici's dispatch callbacks: `pool.request()`
 * makes a stream per body, a cost for a body read whole anyway. Past `maxBytes` it aborts. */
class TextResponse implements Dispatcher.DispatchHandler {
  private chunks: Buffer[] = [];
  private size = 0;
  private status = 0;
  private headers: IncomingHttpHeaders = {};
  private controller: Dispatcher.DispatchController | undefined;
  private settled = false;
  private readonly onAbort: (() => void) | undefined;

  constructor(
    private readonly maxBytes: number,
    private signal: AbortSignal | undefined,
    private resolve: (response: UpstreamResponse) => void,
    private reject: (error: unknown) => void,
  ) {
    if (signal) {
      this.onAbort = () => this.abort(signal.reason ?? new Error('aborted'));
      signal.addEventListener('abort', this.onAbort, { once: true });
    }
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.settled) controller.abort(new Error('aborted'));
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders): void {
    // a 1xx is informational: the answer's own status and headers follow
    if (statusCode < 200) return;
    this.status = statusCode;
    this.headers = headers;
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.size += chunk.length;
    if (this.size > this.maxBytes) {
      this.abort(new ResponseTooLarge(`response larger than ${this.maxBytes} bytes`));
      return;
    }
    this.chunks.push(chunk);
  }

  onResponseEnd(): void {
    const { chunks, size, resolve } = this;
    if (!this.settle()) return;
    resolve({ status: this.status, headers: this.headers, text: chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks, size).toString('utf8') });
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    const { reject } = this;
    if (this.settle()) reject(error);
  }

  /** Rejects with `reason` and stops the request (its connection is closed). */
  private abort(reason: unknown): void {
    const { reject, controller } = this;
    if (!this.settle()) return;
    reject(reason);
    controller?.abort(reason instanceof Error ? reason : new Error(String(reason)));
  }

  /** Marks the response settled and lets go of its body: undici keeps a finished handler queued for
   * a while, and what it holds would be carried into the old generation. */
  private settle(): boolean {
    if (this.settled) return false;
    this.settled = true;
    this.chunks = [];
    this.resolve = ignore;
    this.reject = ignore;
    this.controller = undefined;
    if (this.onAbort) this.signal!.removeEventListener('abort', this.onAbort);
    this.signal = undefined;
    return true;
  }
}

/** The longest wait an upstream's Retry-After is taken at: a day. */
const MAX_RETRY_AFTER_MS = 86_400_000;

/** Retry-After in ms, at most a day (unbounded, a long number is Infinity); undefined when absent or unreadable. */
export function parseRetryAfter(value: string | string[] | undefined, now = Date.now()): number | undefined {
  const text = Array.isArray(value) ? value[0] : value;
  if (text === undefined || text.trim() === '') return undefined;
  if (/^\s*\d+\s*$/.test(text)) return Math.min(Number(text) * 1000, MAX_RETRY_AFTER_MS);
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.min(Math.max(0, at - now), MAX_RETRY_AFTER_MS);
}

/** One upstream service: a keep-alive pool, timeouts, retries of idempotent requests within a
 * budget, and a circuit breaker. Turns transport failures into UPSTREAM_UNAVAILABLE; statuses are
 * returned as they are, for the service's client to map. */
export class Upstream {
  private readonly pool: Pool;
  private readonly basePath: string;
  private readonly breaker: CircuitBreaker;
  private readonly budget: RetryBudget;

  constructor(
    readonly service: string,
    baseUrl: string,
    private readonly settings: UpstreamSettings,
    private readonly observer?: UpstreamObserver,
    /** The breaker's clock; tests advance their own instead of sleeping. */
    now: () => number = Date.now,
  ) {
    const url = new URL(baseUrl);
    // the pool takes the origin only: a base URL may carry a path prefix
    this.basePath = url.pathname.replace(/\/+$/, '');
    // undici's own connector, as the pool would build it from connectTimeout, its sockets wrapped
    const connect = buildConnector({ timeout: settings.connectTimeoutMs });
    this.pool = new Pool(url.origin, {
      connections: settings.connections,
      connect: (options, callback) => connect(options, (...made) => {
        // undefined, not null as typed, when the connection failed
        if (made[1] != null) answersOutliveWrites(made[1]);
        callback(...made);
      }),
      headersTimeout: settings.headersTimeoutMs,
      bodyTimeout: settings.bodyTimeoutMs,
      keepAliveTimeout: settings.keepAliveTimeoutMs,
    });
    this.breaker = new CircuitBreaker(settings.breakerFailures, settings.breakerOpenMs, now);
    this.budget = new RetryBudget(settings.retryBudgetRatio, settings.retryBudgetReserve);
  }

  get breakerState(): BreakerState {
    return this.breaker.state;
  }

  async request(req: UpstreamRequest): Promise<UpstreamResponse> {
    const { signal } = req;
    // Only GET is retried: a POST or DELETE that timed out may well have been applied.
    const retriesAllowed = req.method === 'GET' ? this.settings.retries : 0;
    this.budget.deposit();
    for (let attempt = 0; ; attempt++) {
      if (isCancelled(signal)) throw this.deadline();
      if (!this.breaker.tryAcquire()) {
        throw new GatewayError(
          ErrorCode.UPSTREAM_UNAVAILABLE,
          `The ${this.service} service is unavailable: circuit open after repeated failures`,
          { service: this.service, retryAfter: Math.max(1, Math.ceil(this.breaker.retryInMs / 1000)) },
        );
      }
      let response: UpstreamResponse;
      try {
        response = await this.once(req);
      } catch (error) {
        if (isCancelled(signal)) {
          this.breaker.record(abortOutcome(signal!));
          throw this.deadline(error);
        }
        const code = errorCode(error);
        // a request undici refuses to send says nothing about the upstream's health
        this.breaker.record(code === 'UND_ERR_INVALID_ARG' ? 'neutral' : 'failure');
        if (attempt < retriesAllowed && code !== undefined && CONNECTION_ERROR_CODES.has(code) && this.budget.tryWithdraw()) {
          await this.pause(this.backoff(attempt), signal);
          continue;
        }
        throw upstreamUnavailable(this.service, describe(error), error);
      }
      const serverError = response.status >= 500 && req.serverErrorIsFailure !== false;
      this.breaker.record(serverError ? 'failure' : 'success');
      if (attempt < retriesAllowed && RETRYABLE_STATUSES.has(response.status) && (response.status !== 429 || req.retryRateLimited !== false)) {
        const retryAfter = parseRetryAfter(response.headers['retry-after']);
        // A Retry-After beyond the cap says "not now": hand the status back instead of waiting.
        const waitable = retryAfter === undefined || retryAfter <= this.settings.maxRetryAfterMs;
        if (waitable && this.budget.tryWithdraw()) {
          await this.pause(retryAfter ?? this.backoff(attempt), signal);
          continue;
        }
      }
      return response;
    }
  }

  /** A cheap request that proves the upstream answers HTTP ('ok', or why not); bypasses breaker and retries. */
  async ping(path: string, timeoutMs: number): Promise<string> {
    try {
      const res = await this.once({ method: 'GET', path, signal: AbortSignal.timeout(timeoutMs) });
      return res.status >= 500 ? `HTTP ${res.status}` : 'ok';
    } catch (error) {
      return errorCode(error) === undefined && error instanceof Error && error.name === 'TimeoutError'
        ? 'no answer in time'
        : describe(error);
    }
  }

  close(): Promise<void> {
    return this.pool.close();
  }

  private async once(req: UpstreamRequest): Promise<UpstreamResponse> {
    const done = this.observer?.start(this.service, req.method, this.basePath + req.path.split('?')[0]);
    if (!done) return this.attempt(req);
    try {
      const response = await this.attempt(req);
      done({ status: response.status });
      return response;
    } catch (error) {
      done({ error: errorCode(error) ?? (error instanceof Error ? error.name : 'error') });
      throw error;
    }
  }

  private attempt(req: UpstreamRequest): Promise<UpstreamResponse> {
    const { signal } = req;
    // the reason as the caller's signal gives it (request() tells a deadline from it)
    if (signal?.aborted) return Promise.reject(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
    const options: Dispatcher.DispatchOptions = {
      method: req.method,
      path: this.basePath + req.path,
      headers: req.headers ? { accept: 'application/json', ...req.headers } : ACCEPT_JSON,
      body: req.body ?? null,
    };
    return new Promise((resolve, reject) => {
      this.pool.dispatch(options, new TextResponse(this.settings.maxResponseBytes, signal, resolve, reject));
    });
  }

  private backoff(attempt: number): number {
    // Full jitter: concurrent callers that failed together do not come back together.
    return Math.random() * Math.min(this.settings.retryMaxDelayMs, this.settings.retryBaseDelayMs * 2 ** attempt);
  }

  private async pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
    try {
      await sleep(ms, undefined, signal ? { signal } : {});
    } catch (error) {
      throw this.deadline(error);
    }
  }

  private deadline(cause?: unknown): GatewayError {
    return pastDeadline(this.service, cause);
  }
}
