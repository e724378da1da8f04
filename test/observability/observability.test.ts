import { PassThrough } from 'node:stream';
import { InMemorySpanExporter, NodeTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-node';
import { SpanKind } from '@opentelemetry/api';
import { principal } from '../helpers/liveEvents.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseItemRecord } from '../../src/model/itemRecord.js';
import { createRestBackend, type RestBackend } from '../../src/backends/rest/index.js';
import { CachingRecsService } from '../../src/cache/cachingRecs.js';
import { MemoryCache } from '../../src/cache/memory.js';
import { loadConfig } from '../../src/config/env.js';
import { createLogger } from '../../src/logger.js';
import { GatewayMetrics } from '../../src/observability/metrics.js';
import { combineObservers, tracingUpstreamObserver } from '../../src/observability/tracing.js';
import { createGateway, type Gateway } from '../../src/http/server.js';
import { gql } from '../helpers/processes.js';
import { forgetTracing } from '../helpers/tracing.js';
import { FakeKeyService, FakeRecsService, mountRest, type TestServer } from '../rest/helpers.js';

/**
 * The gateway in REST mode over the fake services, with metrics, an in-memory trace exporter and
 * a captured log: what an operator would see of a few requests.
 */
const exporter = new InMemorySpanExporter();
const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
provider.register();

let upstream: TestServer;
let keys: FakeKeyService;
let rest: RestBackend;
let gateway: Gateway;
let url: string;
let key: string;
const metrics = new GatewayMetrics();
const logLines: Record<string, unknown>[] = [];

beforeAll(async () => {
  keys = new FakeKeyService();
  upstream = await mountRest(keys, new FakeRecsService(parseItemRecord));
  const root = await keys.authenticate(keys.basic('root'));
  const gatewayKey = await keys.createKey(root, { name: 'gateway' });
  key = (await keys.createKey(await keys.authenticate(keys.basic('alice')), { name: 'alice-key' })).key;
  rest = createRestBackend({
    apiKeyServiceUrl: upstream.url,
    recsServiceUrl: upstream.url,
    recsApiKey: gatewayKey.key,
    authCacheTtlMs: 0,
    observer: combineObservers(metrics.upstreamObserver, tracingUpstreamObserver),
  });
  const cache = new MemoryCache();
  const stream = new PassThrough();
  stream.on('data', (chunk: Buffer) => {
    for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) logLines.push(JSON.parse(line) as Record<string, unknown>);
  });
  gateway = await createGateway({
    config: loadConfig({ DATA_DIR: '/nonexistent' }),
    backend: { keys: rest.keys, ingest: rest.ingest, recs: new CachingRecsService(rest.recs, cache), check: () => rest.check(), close: () => rest.close(), breakerState: () => rest.breakerState() },
    cache,
    metrics,
    log: createLogger({ level: 'info', destination: stream }),
  });
  url = await gateway.listen(0, '127.0.0.1');
});

afterAll(async () => {
  await gateway.stop();
  await upstream.close();
  await provider.shutdown();
  forgetTracing();
});

const RECS = `query Recs { item(itemId: 1) { name postBrowsedProducts(first: 3) { itemId name } } }`;

describe('observability of a GraphQL request in REST mode', () => {
  it('traces the request with the upstream calls as its children', async () => {
    exporter.reset();
    const response = await gql(url, RECS, {}, { authorization: key });
    expect(response.status).toBe(200);
    expect(response.body.data?.item?.name).toBe('Item 1');
    const spans = exporter.getFinishedSpans();
    const server = spans.filter((s) => s.kind === SpanKind.SERVER);
    expect(server).toHaveLength(1);
    expect(server[0]!.name).toBe('POST /graphql');
    expect(server[0]!.attributes['graphql.operation.name']).toBe('Recs');
    const clients = spans.filter((s) => s.kind === SpanKind.CLIENT);
    // the key check, the recommendation list and the items
    expect(clients.length).toBeGreaterThanOrEqual(2);
    const services = new Set(clients.map((s) => s.attributes['peer.service']));
    expect(services).toEqual(new Set(['apikeys', 'recommendations']));
    for (const span of clients) {
      expect(span.parentSpanContext?.spanId).toBe(server[0]!.spanContext().spanId);
      expect(span.spanContext().traceId).toBe(server[0]!.spanContext().traceId);
      expect(span.attributes['http.response.status_code']).toBe(200);
      // the query string (where the recommendations key travels) is never recorded
      expect(String(span.attributes['url.path'])).not.toContain('?');
    }
    expect(JSON.stringify(spans.map((s) => s.attributes))).not.toContain(key);
  });

  it('serves Prometheus metrics: operations by outcome, upstream calls, cache, batches, breakers', async () => {
    await gql(url, RECS, {}, { authorization: key }); // answered by the response cache, and counted
    // another selection of the same list: past the response cache, the list and items come from the shared cache
    await gql(url, 'query Other { item(itemId: 1) { postBrowsedProducts(first: 3) { itemId } } }', {}, { authorization: key });
    await gql(url, '{ viewer { isAdmin } }', {}, { authorization: key });
    await gql(url, 'query Broken { nope }', {}, { authorization: key });
    await gql(url, 'query Missing { item(itemId: 999) { name } }', {}, { authorization: key });
    const response = await fetch(`${url}/metrics`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await response.text();
    const value = (series: string): number => {
      const line = text.split('\n').find((l) => l.startsWith(`${series} `));
      return line === undefined ? Number.NaN : Number(line.slice(series.length + 1));
    };
    expect(value('recs_gateway_graphql_requests_total{operation="Recs",outcome="ok"}')).toBe(2);
    expect(value('recs_gateway_graphql_requests_total{operation="anonymous",outcome="ok"}')).toBe(1);
    expect(value('recs_gateway_graphql_requests_total{operation="invalid",outcome="GRAPHQL_VALIDATION_FAILED"}')).toBe(1);
    // a name only ever seen failing is not kept: its failures are counted as other
    expect(value('recs_gateway_graphql_requests_total{operation="other",outcome="NOT_FOUND"}')).toBe(1);
    expect(text).not.toContain('operation="Missing"');
    expect(value('recs_gateway_graphql_request_duration_seconds_count{operation="Recs"}')).toBe(2);
    expect(value('recs_gateway_upstream_requests_total{service="recommendations",method="GET",status="200"}')).toBeGreaterThanOrEqual(2);
    expect(value('recs_gateway_upstream_requests_total{service="apikeys",method="GET",status="200"}')).toBeGreaterThanOrEqual(4);
    expect(value('recs_gateway_cache_hits_total')).toBeGreaterThan(0);
    expect(value('recs_gateway_cache_misses_total')).toBeGreaterThan(0);
    expect(value('recs_gateway_cache_errors_total')).toBe(0);
    expect(value('recs_gateway_dataloader_batch_size_count{loader="items"}')).toBeGreaterThan(0);
    expect(value('recs_gateway_circuit_breaker_state{service="recommendations"}')).toBe(0);
    expect(value('recs_gateway_http_requests_total{route="/graphql",method="POST",status="200"}')).toBeGreaterThanOrEqual(3);
    expect(value('recs_gateway_rate_limit_decisions_total{outcome="allowed"}')).toBeGreaterThanOrEqual(5);
    // histograms as Prometheus reads them: cumulative buckets up to +Inf, which equals the count
    const count = value('recs_gateway_http_request_duration_seconds_count{route="/graphql"}');
    expect(count).toBeGreaterThanOrEqual(5);
    expect(value('recs_gateway_http_request_duration_seconds_bucket{le="+Inf",route="/graphql"}')).toBe(count);
    expect(value('recs_gateway_http_request_duration_seconds_bucket{le="0.005",route="/graphql"}')).toBeLessThanOrEqual(
      value('recs_gateway_http_request_duration_seconds_bucket{le="10",route="/graphql"}'),
    );
    expect(value('recs_gateway_http_request_duration_seconds_sum{route="/graphql"}')).toBeGreaterThan(0);
    expect(text).toContain('# TYPE recs_gateway_http_request_duration_seconds histogram');
    expect(text).not.toContain(key);
  });

  it('bounds operation names: truncated, kept once they succeeded, and "other" past the cap', async () => {
    const fresh = new GatewayMetrics();
    expect(fresh.operationLabel('x'.repeat(500), true)).toHaveLength(64);
    expect(fresh.operationLabel(null, true)).toBe('anonymous');
    expect(fresh.operationLabel('Named', false)).toBe('invalid');
    // an administrator's names, which no share bounds
    const admin = principal(true);
    fresh.graphqlAnswered('Failing', 'NOT_FOUND', performance.now(), undefined, admin);
    for (let i = 0; i < 300; i++) fresh.graphqlAnswered(fresh.operationLabel(`Op${i}`, true), 'ok', performance.now(), undefined, admin);
    fresh.graphqlAnswered('Op5', 'UNAUTHENTICATED', performance.now(), undefined, null);
    const { body } = await fresh.render();
    expect(body).toContain('recs_gateway_graphql_requests_total{operation="Op5",outcome="UNAUTHENTICATED"} 1');
    expect(body).toContain('recs_gateway_graphql_requests_total{operation="Op99",outcome="ok"} 1');
    expect(body).toContain('recs_gateway_graphql_requests_total{operation="other",outcome="ok"} 200');
    expect(body).toContain('recs_gateway_graphql_requests_total{operation="other",outcome="NOT_FOUND"} 1');
    expect(body).not.toContain('operation="Op100"');
  });

  it('writes one access-log line per request with its id, and no credential', async () => {
    const before = logLines.length;
    const response = await fetch(`${url}/graphql?via=test`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: key, 'x-request-id': 'req-abc-123' },
      body: JSON.stringify({ query: 'query Who { viewer { isAdmin } }' }),
    });
    expect(response.headers.get('x-request-id')).toBe('req-abc-123');
    await response.text();
    await fetch(`${url}/v1/items?ids=1,2&apiKey=${encodeURIComponent(key)}`).then((r) => r.text());
    await new Promise((r) => setTimeout(r, 50));
    const lines = logLines.slice(before).filter((l) => l.msg === 'request');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatchObject({ requestId: 'req-abc-123', method: 'POST', path: '/graphql', status: 200, operation: 'Who' });
    expect(typeof lines[0]!.durationMs).toBe('number');
    expect(lines[1]).toMatchObject({ method: 'GET', path: '/v1/items', status: 200 });
    expect(String(lines[1]!.requestId)).toMatch(/^[0-9a-f-]{36}$/);
    expect(JSON.stringify(logLines)).not.toContain(key);
  });

  it('names the operation type of a query the takeover answers and of a mutation Apollo answers', async () => {
    const types = async (query: string, takenOver: number): Promise<unknown[]> => {
      exporter.reset();
      const answeredBefore = gateway.takeoverStats!.answered;
      for (let n = 0; n < 3; n++) await gql(url, query, { id: '00000000-0000-4000-8000-000000000000' }, { authorization: key });
      expect(gateway.takeoverStats!.answered - answeredBefore).toBe(takenOver);
      return exporter.getFinishedSpans().filter((s) => s.kind === SpanKind.SERVER).map((s) => [s.attributes['graphql.operation.name'], s.attributes['graphql.operation.type']]);
    };
    // Apollo answers a query's first request, the takeover the others; mutations always go to Apollo
    expect(await types('query Typed { viewer { isAdmin } }', 2)).toEqual(Array(3).fill(['Typed', 'query']));
    expect(await types('mutation Drop($id: ID!) { deleteApiKey(id: $id) { ok } }', 0)).toEqual(Array(3).fill(['Drop', 'mutation']));
  });
});
