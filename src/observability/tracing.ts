import { ProxyTracerProvider, SpanKind, SpanStatusCode, trace, type Attributes, type Span } from '@opentelemetry/api';
import type { UpstreamObserver } from '../ports/observers.js';
import type { Config } from '../config/env.js';

/**
 * Only @opentelemetry/api is imported here: without a registered SDK every call below is a
 * no-op, so tracing costs nothing unless OTEL_EXPORTER_OTLP_ENDPOINT is set (startTracing then
 * loads the SDK) or a test registers a provider of its own.
 */
const tracer = trace.getTracer('recs-gateway');

/** Starts exporting traces when configured; resolves with how to flush and stop. */
export async function startTracing(config: Pick<Config, 'otlpEndpoint' | 'serviceName'>): Promise<() => Promise<void>> {
  if (config.otlpEndpoint === null) return () => Promise.resolve();
  // loaded only here, so a gateway without an endpoint never pays for the SDK
  const [{ NodeTracerProvider, BatchSpanProcessor }, { OTLPTraceExporter }, { resourceFromAttributes }] = await Promise.all([
    import('@opentelemetry/sdk-trace-node'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/resources'),
  ]);
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ 'service.name': config.serviceName }),
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url: `${config.otlpEndpoint.replace(/\/+$/, '')}/v1/traces` }))],
  });
  provider.register();
  return () => provider.shutdown();
}

/** What the global provider delegates to while no SDK is registered. */
const NO_TRACING = new ProxyTracerProvider().getDelegate();

/**
 * Whether a tracer provider is registered (by startTracing, or by a test). Until one is, every
 * span is a no-op, and the request path does not even make one: the no-op span and its context
 * cost about 3% of a cached answer.
 */
export function tracingActive(): boolean {
  const provider = trace.getTracerProvider();
  return !(provider instanceof ProxyTracerProvider) || provider.getDelegate() !== NO_TRACING;
}

/** Runs `fn` in a server span that is the active context for everything it calls (upstream spans nest under it). */
export function inServerSpan<T>(name: string, attributes: Attributes, fn: (span: Span) => Promise<T>): Promise<T> {
  return tracer.startActiveSpan(name, { kind: SpanKind.SERVER, attributes }, async (span) => {
    try {
      return await fn(span);
    } catch (error) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.name : 'error' });
      throw error;
    } finally {
      span.end();
    }
  });
}

/** A client span per upstream attempt, child of whatever span is active when it starts. */
export const tracingUpstreamObserver: UpstreamObserver = {
  start(service, method, path) {
    // no span at all while no provider is registered, as on the request path: the no-op span
    // and its attributes were 0.4% of a cold REST-mode request's CPU (BENCHMARKS.md, ninth pass)
    if (!tracingActive()) return endNothing;
    const span = tracer.startSpan(`${method} ${service}`, {
      kind: SpanKind.CLIENT,
      attributes: { 'http.request.method': method, 'url.path': path, 'peer.service': service },
    });
    return (outcome) => {
      if (outcome.status !== undefined) span.setAttribute('http.response.status_code', outcome.status);
      if (outcome.error !== undefined) span.setAttribute('error.type', outcome.error);
      if (outcome.error !== undefined || (outcome.status ?? 0) >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    };
  },
};

const endNothing = (): void => undefined;

/** Several observers as one. */
export function combineObservers(...observers: UpstreamObserver[]): UpstreamObserver {
  return {
    start(service, method, path) {
      const ends = observers.map((observer) => observer.start(service, method, path));
      return (outcome) => {
        for (const end of ends) end(outcome);
      };
    },
  };
}
