import { ProxyTracerProvider, SpanKind, SpanStatusCode, trace, type Attributes, type Span } from '@opentelemetry/api';
import type { UpstreamObserver } from '../ports/observers.js';
import type { Config } from '../config/env.js';

/** Only @opentelemetry/api here: without a registered SDK every call is a no-op, so tracing off costs nothing. */
const tracer = trace.getTracer('recs-gateway');

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

const NO_TRACING = new ProxyTracerProvider().getDelegate();

/** Whether a tracer provider is registered; until one is, the request path makes no span at all. */
export function tracingActive(): boolean {
  const provider = trace.getTracerProvider();
  return !(provider instanceof ProxyTracerProvider) || provider.getDelegate() !== NO_TRACING;
}

/** Runs `fn` in a server span, the active context for everything it calls. */
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
    // no span at all while no provider is registered, as on the request path
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
