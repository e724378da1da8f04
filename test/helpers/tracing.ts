import { context, propagation, trace } from '@opentelemetry/api';
import { vi } from 'vitest';

/**
 * Undoes a test file's tracer provider, for the next file in the same worker (files share the
 * worker's modules and globals): the globals go, and src/observability/tracing.ts, whose tracer
 * keeps the provider it first traced with, is imported anew.
 */
export function forgetTracing(): void {
  trace.disable();
  context.disable();
  propagation.disable();
  vi.resetModules();
}
