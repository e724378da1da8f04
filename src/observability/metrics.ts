import { hash, timingSafeEqual } from 'node:crypto';
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import type { BreakerState, UpstreamObserver } from '../ports/observers.js';
import type { CacheStats } from '../ports/cache.js';
import type { PrincipalModel, RoleStateModel } from '../ports/backend.js';
import type { RateLimitOutcome } from '../auth/rateLimit.js';
import { DEFAULT_METRICS_OPERATION_NAMES, DEFAULT_METRICS_OPERATION_NAMES_PER_USER } from '../config/defaults.js';
import { RequestCounter, RequestHistogram } from './requestMetrics.js';
import { kindOfCode, LIST_CODES, variantOfCode } from '../model/trackingId.js';
import { CLICK, IMPRESSION, PURCHASE } from './listCounter.js';
import type { RequestRecord } from './requestScope.js';

const MAX_OPERATION_NAME_LENGTH = 64;
const FIXED_OPERATION_LABELS = new Set(['invalid', 'anonymous', 'other']);

const BREAKER_VALUE: Record<BreakerState, number> = { closed: 0, 'half-open': 1, open: 2 };

const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** Prometheus metrics in a registry of its own, so gateways sharing a process do not share counters.
 * Labels are bounded: never anything about the user or the credential. */
export class GatewayMetrics {
  readonly registry = new Registry();
  private readonly operationNames = new Set<string>();
  private readonly namesBrought = new Map<string, number>();
  private readonly maxNames: number;
  private readonly maxNamesPerUser: number;

  // see requestMetrics.ts for why these are not prom-client's own
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

  httpAnswered(route: string, method: string, status: number, seconds: number): void {
    this.httpRequests.inc(route, method, String(status));
    this.httpDuration.observe(seconds, route);
  }

  /** Counts and times an answered operation; `caller` null without credentials, whose names take no slot. */
  graphqlAnswered(operation: string, outcome: string, startedAt: number, record: RequestRecord | undefined, caller: PrincipalModel | null): void {
    const label = this.keptLabel(operation, outcome, caller);
    this.graphqlRequests.inc(label, outcome);
    this.graphqlDuration.observe((performance.now() - startedAt) / 1000, label);
    if (record && record.operation === undefined) record.operation = operation;
  }

  /** An operation name becomes a label only once it succeeded for a caller with credentials, and each
   * user brings in a capped number, so invented names cannot take every slot. */
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
  private roleState: (() => RoleStateModel) | undefined;
  private lists: Float64Array | undefined;

  constructor(options: { processMetrics?: boolean; operationNames?: number; operationNamesPerUser?: number } = {}) {
    this.maxNames = options.operationNames ?? DEFAULT_METRICS_OPERATION_NAMES;
    this.maxNamesPerUser = options.operationNamesPerUser ?? DEFAULT_METRICS_OPERATION_NAMES_PER_USER;
    // the cache, breakers and limiter keep their own counters, read at scrape time
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
      help: 'Rate limit decisions: allowed, principal_limited (over its rate), key_limited (over its own rateLimitPerSecond), quota_exceeded (past its dailyQuota), address_locked (too many failed authentications)',
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
    const role = (): RoleStateModel | undefined => this.roleState?.();
    new Gauge({
      name: 'recs_gateway_role_info',
      help: 'The process\'s RECS_ROLE (serve or learn; absent for all), and whether a learner holds the store\'s lock (serve: any; learn: this one)',
      labelNames: ['role', 'learner_active'] as const,
      registers: [this.registry],
      collect() {
        this.reset();
        const state = role();
        if (state) this.set({ role: state.role, learner_active: String(state.learnerActive) }, 1);
      },
    });
    new Gauge({
      name: 'recs_gateway_published_lists_age_seconds',
      help: 'Seconds since the learner last published lists or said they were current (serve and learn roles)',
      registers: [this.registry],
      collect() {
        this.reset();
        const age = role()?.listsAgeSeconds;
        if (age !== undefined && age !== null) this.set(age);
      },
    });
    // ListCounter's totals: slot code × 3 + event (listCounter.ts), read at scrape time
    const lists = (): Float64Array | undefined => this.lists;
    const listCounter = (event: number, name: string, help: string): void => {
      const seenLists = new Float64Array(LIST_CODES);
      new Counter({
        name,
        help,
        labelNames: ['kind', 'variant'] as const,
        registers: [this.registry],
        collect() {
          const totals = lists();
          for (let code = 0; code < LIST_CODES; code++) {
            const now = totals?.[code * 3 + event] ?? 0;
            this.inc({ kind: kindOfCode(code), variant: variantOfCode(code) }, Math.max(0, now - seenLists[code]!));
            seenLists[code] = now;
          }
        },
      });
    };
    listCounter(IMPRESSION, 'recs_gateway_recommendation_impressions_total', 'Recommendation lists served (a connection with a trackingId), from the response cache too, by kind and variant');
    listCounter(CLICK, 'recs_gateway_recommendation_clicks_total', 'VIEW events naming a recommendation list by trackingId, by kind and variant');
    listCounter(PURCHASE, 'recs_gateway_recommendation_purchases_total', 'PURCHASE events naming a recommendation list by trackingId, by kind and variant');
    if (options.processMetrics) collectDefaultMetrics({ register: this.registry, prefix: 'recs_gateway_' });
  }

  watch(sources: {
    cache?: CacheStats;
    breakers?: () => Record<string, BreakerState>;
    rateLimits?: Readonly<Record<RateLimitOutcome, number>>;
    role?: () => RoleStateModel;
    lists?: Float64Array;
  }): void {
    if (sources.role) this.roleState = sources.role;
    if (sources.lists) this.lists = sources.lists;
    if (sources.cache) this.cacheStats = sources.cache;
    if (sources.breakers) this.breakers = sources.breakers;
    if (sources.rateLimits) this.rateLimits = sources.rateLimits;
  }

  /** An operation's name as spans and access logs carry it: `invalid`, `anonymous`, or the name truncated. */
  operationLabel(name: string | null | undefined, resolved: boolean): string {
    if (!resolved) return 'invalid';
    if (!name) return 'anonymous';
    return name.slice(0, MAX_OPERATION_NAME_LENGTH);
  }

  readonly upstreamObserver: UpstreamObserver = {
    start: (service, method) => {
      const started = performance.now();
      return (outcome) => {
        this.upstreamDuration.observe((performance.now() - started) / 1000, service);
        this.upstreamRequests.inc(service, method, outcome.status !== undefined ? String(outcome.status) : 'error');
      };
    },
  };

  readonly onBatch = (loader: string, size: number): void => {
    this.dataloaderBatchSize.observe(size, loader);
  };

  async render(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}

/** Whether a request may read /metrics; compared as SHA-256 digests in constant time, hiding the token's length. */
export function metricsAuthorized(authorization: string | undefined, token: string | null | undefined): boolean {
  if (!token) return true;
  const sent = /^\s*bearer\s+(\S+)\s*$/i.exec(authorization ?? '')?.[1] ?? '';
  return timingSafeEqual(hash('sha256', sent, 'buffer'), hash('sha256', token, 'buffer'));
}
