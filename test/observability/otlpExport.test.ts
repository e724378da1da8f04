import { describe, expect, it } from 'vitest';
import { startTracing, inServerSpan } from '../../src/observability/tracing.js';
import { startServer } from '../rest/helpers.js';
import { forgetTracing } from '../helpers/tracing.js';
import { promised } from '../../src/shared/promised.js';

describe('trace export', () => {
  it('is nothing to set up without an endpoint', async () => {
    const stop = await startTracing({ otlpEndpoint: null, serviceName: 'recs-gateway' });
    // no provider registered: spans are no-ops and carry no trace id
    await inServerSpan('noop', {}, (span) => promised(() => expect(span.isRecording()).toBe(false)));
    await stop();
  });

  it('sends spans over OTLP/HTTP to the configured endpoint, loading the SDK only then', async () => {
    const collector = await startServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
    try {
      const stop = await startTracing({ otlpEndpoint: `${collector.url}/`, serviceName: 'recs-gateway-test' });
      await inServerSpan('POST /graphql', { 'http.request.method': 'POST' }, (span) => promised(() => expect(span.isRecording()).toBe(true)));
      await stop(); // flushes the batch
      const posts = collector.requests.filter((r) => r.method === 'POST');
      expect(posts.map((r) => r.url)).toEqual(['/v1/traces']);
      expect(posts[0]!.body).toContain('recs-gateway-test');
    } finally {
      forgetTracing();
      await collector.close();
    }
  });
});
