import { describe, expect, it } from 'vitest';
import { ErrorCode, GatewayError, notFound } from '../src/errors.js';

describe('GatewayError', () => {
  it('captures no stack (it is an answer, not a fault) and leaves the global limit as it was', () => {
    const before = Error.stackTraceLimit;
    const error = notFound('No item with itemId 5');
    expect(error.stack).toBe('GatewayError: No item with itemId 5');
    expect(Error.stackTraceLimit).toBe(before);
    expect(new Error('a fault').stack!.split('\n').length).toBeGreaterThan(1);
  });

  it('keeps the stack of its cause, for the logs', () => {
    const cause = new Error('connection refused');
    const error = new GatewayError(ErrorCode.UPSTREAM_UNAVAILABLE, 'The recommendations service is unavailable', { cause });
    expect(error.originalError).toBe(cause);
    expect(cause.stack).toContain('errors.test.ts');
  });
});
