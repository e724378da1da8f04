/**
 * A benchmark target (not a test): the gateway as `recs-gateway serve` builds it, from the same
 * environment variables, in its own process so that the load generator does not share its core.
 * Prints one JSON line {"url": ...} once it listens. Bench-only switches, never read by src/:
 *   BENCH_STUB_AUTH=1      authenticate() returns a fixed principal without any lookup, to
 *                          measure what authentication costs (the header is still required)
 *   BENCH_COUNT_CALLS=1    counts requests by path; GET /__bench/calls returns and resets them
 *                          (used on the upstream, to count the calls a query causes)
 *   BENCH_TIME_AUTH=1      times every authenticateKnown() and authenticate() call (a
 *                          verified key is answered synchronously, so the time around the call
 *                          is its whole work);
 *                          GET /__bench/auth returns {calls, ns} and resets them
 *   BENCH_DIST=<dir>       the build to run, a directory beside dist/ (default dist)
 *   BENCH_STATS=1          GET /__bench/stats returns the takeover's and the response
 *                          cache's counters since start
 *   BENCH_PHASES=1         times the phases of each request sent with `x-bench-phases: 1` (made
 *                          one at a time): before the first upstream call, the upstream calls,
 *                          after the last one, and the process's CPU time in each; GET
 *                          /__bench/phases returns their medians in ms and resets them. Other
 *                          requests are not timed: reading the CPU time is a system call, four a
 *                          request, which would slow the requests the latency is measured on.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type * as AuthModule from '../../src/auth/authorization.js';
import type * as MainModule from '../../src/main.js';
import type { PrincipalModel } from '../../src/ports/backend.js';
import type * as CacheModule from '../../src/cache/index.js';
import type * as ConfigModule from '../../src/config/env.js';
import type * as MetricsModule from '../../src/observability/metrics.js';
import type * as TracingModule from '../../src/observability/tracing.js';
import type * as RateLimitModule from '../../src/auth/rateLimit.js';
import type * as ServerModule from '../../src/http/server.js';

// The compiled dist/ (bench/run.ts builds it first), as `npm start` runs it. Through tsx the
// server was about a third slower: esbuild's keep-names wraps every closure made per request.
// BENCH_DIST names another build beside dist/ (bench/ab.ts compares two builds side by side).
const dist = (file: string): string => new URL(`../../${process.env.BENCH_DIST ?? 'dist'}/${file}`, import.meta.url).href;

/** Per-request phase timings, wall and CPU, for requests made one at a time (BENCH_PHASES). */
class Phases {
  private readonly samples: Record<string, number[]> = {};
  /** Whether the request under way is timed. */
  private timing = false;
  private start = 0;
  private firstCall = 0;
  private lastAnswer = 0;
  private cpuStart = 0;
  private cpuFirstCall = 0;
  private cpuLastAnswer = 0;

  readonly observer = {
    start: () => {
      if (!this.timing) return () => undefined;
      if (this.firstCall === 0) {
        this.firstCall = performance.now();
        this.cpuFirstCall = cpuMs();
      }
      return () => {
        this.lastAnswer = performance.now();
        this.cpuLastAnswer = cpuMs();
      };
    },
  };

  begin(): void {
    this.timing = true;
    this.start = performance.now();
    this.cpuStart = cpuMs();
    this.firstCall = 0;
  }

  end(): void {
    const now = performance.now();
    this.timing = false;
    this.add('whole', now - this.start);
    if (this.firstCall === 0) return;
    const cpu = cpuMs();
    this.add('before', this.firstCall - this.start);
    this.add('upstream', this.lastAnswer - this.firstCall);
    this.add('after', now - this.lastAnswer);
    this.add('cpuBefore', this.cpuFirstCall - this.cpuStart);
    this.add('cpuDuringUpstream', this.cpuLastAnswer - this.cpuFirstCall);
    this.add('cpuAfter', cpu - this.cpuLastAnswer);
  }

  /** The median of each phase in ms, and the count; resets. */
  medians(): Record<string, number> {
    const result: Record<string, number> = {};
    for (const [name, values] of Object.entries(this.samples)) {
      values.sort((a, b) => a - b);
      result[name] = values[values.length >> 1]!;
      result.requests = Math.max(result.requests ?? 0, values.length);
      delete this.samples[name];
    }
    return result;
  }

  private add(name: string, ms: number): void {
    (this.samples[name] ??= []).push(ms);
  }
}

function cpuMs(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}
const { openBackend } = (await import(dist('main.js'))) as typeof MainModule;
const { openCache } = (await import(dist('cache/index.js'))) as typeof CacheModule;
const { loadConfig } = (await import(dist('config/env.js'))) as typeof ConfigModule;
const { createGateway } = (await import(dist('http/server.js'))) as typeof ServerModule;
const { RateLimiter } = (await import(dist('auth/rateLimit.js'))) as typeof RateLimitModule;
const { credentialId, withAuthorization } = (await import(dist('auth/authorization.js'))) as typeof AuthModule;
const { GatewayMetrics } = (await import(dist('observability/metrics.js'))) as typeof MetricsModule;
const { combineObservers, tracingUpstreamObserver } = (await import(dist('observability/tracing.js'))) as typeof TracingModule;

const config = loadConfig(process.env);
const cache = openCache(config);
// metrics and the upstream observers as `recs-gateway serve` has them (src/main.ts)
const metrics = new GatewayMetrics({ processMetrics: true });
const phases = process.env.BENCH_PHASES === '1' ? new Phases() : null;
const observers = [metrics.upstreamObserver, tracingUpstreamObserver, ...(phases ? [phases.observer] : [])];
const backend = await openBackend(config, { cache, upstreamObserver: combineObservers(...observers) });

if (process.env.BENCH_STUB_AUTH === '1') {
  const fixed: Omit<PrincipalModel, 'authorization'> = {
    user: { id: '00000000-0000-4000-8000-000000000000', username: 'bench', domain: null, isAdmin: false },
    authenticatedBy: 'API_KEY',
    keyId: null,
    credentialId: credentialId('bench'),
  };
  backend.keys.authenticate = (authorization: string) => Promise.resolve(withAuthorization(fixed, authorization));
  backend.keys.authenticateKnown = (authorization: string) => withAuthorization(fixed, authorization);
}

const authTime = { calls: 0, ns: 0 };
if (process.env.BENCH_TIME_AUTH === '1') {
  const keys = backend.keys;
  const authenticate = keys.authenticate.bind(keys);
  keys.authenticate = (authorization, options) => {
    const started = process.hrtime.bigint();
    const principal = authenticate(authorization, options);
    authTime.ns += Number(process.hrtime.bigint() - started);
    authTime.calls += 1;
    return principal;
  };
  // the hot path asks this first; a call it cannot answer is counted with the authenticate after it
  const known = keys.authenticateKnown?.bind(keys);
  if (known) {
    keys.authenticateKnown = (authorization, connection) => {
      const started = process.hrtime.bigint();
      const principal = known(authorization, connection);
      authTime.ns += Number(process.hrtime.bigint() - started);
      if (principal !== undefined) authTime.calls += 1;
      return principal;
    };
  }
}

// the rate limits as `recs-gateway serve` sets them up: in Redis when REDIS_URL is set
const limiter = RateLimiter.open(config.rateLimits, { url: config.redisUrl, keyPrefix: config.redisKeyPrefix });
const gateway = await createGateway({ config, backend, cache, limiter, metrics });

/** Puts `handle` before the gateway's own request listeners; it returns true when it has answered. */
function intercept(handle: (req: IncomingMessage, res: ServerResponse) => boolean): void {
  const listeners = gateway.httpServer.listeners('request') as ((req: IncomingMessage, res: ServerResponse) => void)[];
  gateway.httpServer.removeAllListeners('request');
  gateway.httpServer.on('request', (req: IncomingMessage, res: ServerResponse) => {
    if (handle(req, res)) return;
    for (const listener of listeners) listener(req, res);
  });
}

const answerJson = (res: ServerResponse, value: unknown): void => {
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(value));
};

if (process.env.BENCH_COUNT_CALLS === '1') {
  const calls: Record<string, number> = {};
  intercept((req, res) => {
    const path = (req.url ?? '/').split('?')[0]!;
    if (path === '/__bench/calls') {
      answerJson(res, calls);
      for (const name of Object.keys(calls)) delete calls[name];
      return true;
    }
    const route = path.startsWith('/v1/items/') ? '/v1/items/:id' : path;
    calls[route] = (calls[route] ?? 0) + 1;
    return false;
  });
}

if (process.env.BENCH_TIME_AUTH === '1') {
  intercept((req, res) => {
    if (req.url !== '/__bench/auth') return false;
    answerJson(res, authTime);
    authTime.calls = 0;
    authTime.ns = 0;
    return true;
  });
}

if (process.env.BENCH_STATS === '1') {
  intercept((req, res) => {
    if (req.url !== '/__bench/stats') return false;
    answerJson(res, { takeover: gateway.takeoverStats, responseCache: gateway.responseCacheStats });
    return true;
  });
}

if (phases) {
  intercept((req, res) => {
    if (req.url === '/__bench/phases') {
      answerJson(res, phases.medians());
      return true;
    }
    if (req.headers['x-bench-phases'] !== '1') return false;
    phases.begin();
    res.on('finish', () => phases.end());
    return false;
  });
}

const url = await gateway.listen(0, '127.0.0.1');
process.stdout.write(`${JSON.stringify({ url })}\n`);
const stop = (): void => {
  gateway.stop().then(
    () => process.exit(0),
    () => process.exit(1),
  );
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);

