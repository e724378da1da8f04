import { hash, timingSafeEqual } from 'node:crypto';
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import type { BreakerState, UpstreamObserver } from '../ports/observers.js';
import type { CacheStats } from '../ports/cache.js';
import type { PrincipalModel } from '../ports/backend.js';
import type { RateLimitOutcome } from '../auth/rateLimit.js';
import { DEFAULT_METRICS_OPERATION_NAMES, DEFAULT_METRICS_OPERATION_NAMES_PER_USER } from '../config/defaults.js';
import { RequestCounter, RequestHistogram } from './requestMetrics.js';
import type { RequestRecord } from './requestScope.js';

const MAX_OPERATION_NAME_LENGTH = 64;
/** The labels that are not names, and `other`, for every name not (yet) kept. */
const FIXED_OPERATION_LABELS = new Set(['invalid', 'anonymous', 'other']);

const BREAKER_VALUE: Record<BreakerState, number> = { closed: 0, 'half-open': 1, open: 2 };

const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/**
 * The gateway's Prometheus metrics, in a registry of its own (never prom-client's global one, so
 * two gateways in one process, as in tests, do not share counters). Labels are bounded: routes
 * from a fixed set, error codes from the closed set, operation names capped in number and length,
 * never anything about the user or the credential.
 */
export class GatewayMetrics {
  readonly registry = new Registry();
  private readonly operationNames = new Set<string>();
  /** Names each user brought in (by user id, else credential), for their share. */
  private readonly namesBrought = new Map<string, number>();
  private readonly maxNames: number;
  private readonly maxNamesPerUser: number;

  // what every request, upstream call and batch records: see requestMetrics.ts for why these are
  // not prom-client's own
  private readonly httpRequests = new RequestCounter(
    'recs_gateway_http_requests_total',
    'HTTP requests answered, by route, method and status',
    ['route', 'method', 'status'],
    this.registry,
  );
  private readonly httpDuration = new RequestHistogram(
    'recs_gateway_http_request_duration_seconds',
    'Time to answer an HTTP request, by route',
    ['route'],
    LATENCY_BUCKETS,
    this.registry,
  );
  private readonly graphqlRequests = new RequestCounter(
    'recs_gateway_graphql_requests_total',
    'GraphQL operations, by operation name and outcome (ok, or the first error code)',
    ['operation', 'outcome'],
    this.registry,
  );
  private readonly graphqlDuration = new RequestHistogram(
    'recs_gateway_graphql_request_duration_seconds',
    'Time from receiving a GraphQL operation to its response, by operation name',
    ['operation'],
    LATENCY_BUCKETS,
    this.registry,
  );
  private readonly upstreamRequests = new RequestCounter(
    'recs_gateway_upstream_requests_total',
    'Calls to upstream services (each attempt), by service, method and HTTP status or error',
    ['service', 'method', 'status'],
    this.registry,
  );
  private readonly upstreamDuration = new RequestHistogram(
    'recs_gateway_upstream_request_duration_seconds',
    'Duration of upstream calls (each attempt), by service',
    ['service'],
    LATENCY_BUCKETS,
    this.registry,
  );
  private readonly dataloaderBatchSize = new RequestHistogram(
    'recs_gateway_dataloader_batch_size',
    'Keys per DataLoader batch, by loader',
    ['loader'],
    [1, 2, 5, 10, 20, 50, 100],
    this.registry,
  );

  /** Counts and times one HTTP request, when its response is done. */
  httpAnswered(route: string, method: string, status: number, seconds: number): void {
    this.httpRequests.inc(route, method, String(status));
    this.httpDuration.observe(seconds, route);
  }

  /**
   * Counts and times one answered operation (by Apollo, or by the response cache before it).
   * `operation` is operationLabel's answer; the metrics carry it only once it is a kept name.
   * `caller`: who asked (null without credentials: its name may not take a slot).
   */
  graphqlAnswered(operation: string, outcome: string, startedAt: number, record: RequestRecord | undefined, caller: PrincipalModel | null): void {
    const label = this.keptLabel(operation, outcome, caller);
    this.graphqlRequests.inc(label, outcome);
    this.graphqlDuration.observe((performance.now() - startedAt) / 1000, label);
    if (record && record.operation === undefined) record.operation = operation;
  }

  /**
   * The metric label of an operation name: the name once an operation under it has succeeded
   * for a caller with credentials (the first METRICS_OPERATION_NAMES such names), `other` for
   * any other name. Success is the test because a name that only ever fails (a typo, a probe, a
   * flood of invented names answered UNAUTHENTICATED or GRAPHQL_VALIDATION_FAILED) says nothing
   * an operator can act on by name. A slot is not first come, first served for anyone: a user
   * brings in at most METRICS_OPERATION_NAMES_PER_USER names (an administrator, who runs the
   * gateway, any number), so one client's invented names leave the rest to everyone else's.
   */
  private keptLabel(operation: string, outcome: string, caller: PrincipalModel | null): string {
    if (this.operationNames.has(operation) || FIXED_OPERATION_LABELS.has(operation)) return operation;
    if (outcome !== 'ok' || caller === null || this.operationNames.size >= this.maxNames) return 'other';
    if (!caller.user.isAdmin) {
      const user = caller.user.id ?? caller.credentialId;
      const brought = this.namesBrought.get(user) ?? 0;
      if (brought >= this.maxNamesPerUser) return 'other';
      this.namesBrought.set(user, brought + 1);
    }
    this.operationNames.add(operation);
    return operation;
  }

  private cacheStats: CacheStats | undefined;
  private breakers: (() => Record<string, BreakerState>) | undefined;
  private rateLimits: Readonly<Record<RateLimitOutcome, number>> | undefined;

  /**
   * `operationNames`: METRICS_OPERATION_NAMES, names kept as labels at most; `operationNamesPerUser`:
   * METRICS_OPERATION_NAMES_PER_USER, of those one user may bring in (see keptLabel).
   */
  constructor(options: { processMetrics?: boolean; operationNames?: number; operationNamesPerUser?: number } = {}) {
    this.maxNames = options.operationNames ?? DEFAULT_METRICS_OPERATION_NAMES;
    this.maxNamesPerUser = options.operationNamesPerUser ?? DEFAULT_METRICS_OPERATION_NAMES_PER_USER;
    // The cache, breakers and limiter keep their own counters; they are read at scrape time.
    const cacheStats = (): CacheStats | undefined => this.cacheStats;
    const breakers = (): Record<string, BreakerState> => this.breakers?.() ?? {};
    const rateLimits = (): Readonly<Record<string, number>> => this.rateLimits ?? {};
    const seen = { hits: 0, misses: 0, errors: 0 };
    const cacheCounter = (field: keyof CacheStats, name: string, help: string) =>
      new Counter({
        name,
        help,
        registers: [this.registry],
        collect() {
          const now = cacheStats()?.[field] ?? 0;
          if (now > seen[field]) this.inc(now - seen[field]);
          seen[field] = now;
        },
      });
    cacheCounter('hits', 'recs_gateway_cache_hits_total', 'Shared cache lookups that found a value');
    cacheCounter('misses', 'recs_gateway_cache_misses_total', 'Shared cache lookups that found nothing (including those while the store was down)');
    cacheCounter('errors', 'recs_gateway_cache_errors_total', 'Shared cache commands that failed, timed out, or were skipped while the store was down');
    new Gauge({
      name: 'recs_gateway_circuit_breaker_state',
      help: 'Circuit breaker of each upstream: 0 closed, 1 half-open, 2 open',
      labelNames: ['service'] as const,
      registers: [this.registry],
      collect() {
        for (const [service, state] of Object.entries(breakers())) this.set({ service }, BREAKER_VALUE[state]);
      },
    });
    const seenLimits: Record<string, number> = {};
    new Counter({
      name: 'recs_gateway_rate_limit_decisions_total',
      help: 'Rate limit decisions: allowed, principal_limited (over its rate), address_locked (too many failed authentications)',
      labelNames: ['outcome'] as const,
      registers: [this.registry],
      collect() {
        for (const [outcome, now] of Object.entries(rateLimits())) {
          const before = seenLimits[outcome] ?? 0;
          if (now > before) this.inc({ outcome }, now - before);
          seenLimits[outcome] = now;
        }
      },
    });
    if (options.processMetrics) collectDefaultMetrics({ register: this.registry, prefix: 'recs_gateway_' });
  }

  /** Reads these at scrape time. */
  watch(sources: {
    cache?: CacheStats;
    breakers?: () => Record<string, BreakerState>;
    rateLimits?: Readonly<Record<RateLimitOutcome, number>>;
  }): void {
    if (sources.cache) this.cacheStats = sources.cache;
    if (sources.breakers) this.breakers = sources.breakers;
    if (sources.rateLimits) this.rateLimits = sources.rateLimits;
  }

  /**
   * The name of an operation as its span and access-log line carry it: its name when the
   * document was valid (else `invalid`), `anonymous` without one, truncated. The metrics carry
   * it only once it is kept (graphqlAnswered).
   */
  operationLabel(name: string | null | undefined, resolved: boolean): string {
    if (!resolved) return 'invalid';
    if (!name) return 'anonymous';
    return name.slice(0, MAX_OPERATION_NAME_LENGTH);
  }

  /** Counts and times upstream calls (hand to the REST backend). */
  readonly upstreamObserver: UpstreamObserver = {
    start: (service, method) => {
      const started = performance.now();
      return (outcome) => {
        this.upstreamDuration.observe((performance.now() - started) / 1000, service);
        this.upstreamRequests.inc(service, method, outcome.status !== undefined ? String(outcome.status) : 'error');
      };
    },
  };

  /** Observes a DataLoader batch size (hand to createLoaders). */
  readonly onBatch = (loader: string, size: number): void => {
    this.dataloaderBatchSize.observe(size, loader);
  };

  /** The exposition text and its content type, for GET /metrics. */
  async render(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}

/**
 * Whether a request may read /metrics: always without a token (METRICS_TOKEN unset), else only
 * with `Authorization: Bearer <token>`. Compared as SHA-256 digests in constant time, so neither
 * the token's characters nor its length show in the time a refusal takes.
 */
export function metricsAuthorized(authorization: string | undefined, token: string | null | undefined): boolean {
  if (!token) return true;
  const sent = /^\s*bearer\s+(\S+)\s*$/i.exec(authorization ?? '')?.[1] ?? '';
  return timingSafeEqual(hash('sha256', sent, 'buffer'), hash('sha256', token, 'buffer'));
}
