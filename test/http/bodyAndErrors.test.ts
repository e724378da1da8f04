import fc from 'fast-check';
import { GraphQLError } from 'graphql';
import { describe, expect, it } from 'vitest';
import { ErrorCode } from '../../src/errors.js';
import { gatewayFormatError } from '../../src/graphql/pipeline/formatError.js';
import { HttpError, MAX_BODY_DEPTH, parseBody, parseJson } from '../../src/http/body.js';
import { createLogger } from '../../src/logger.js';
import { propertyRuns } from '../helpers/runs.js';

// Parts of the request path that need no HTTP to be tried: how a body is read as JSON, and what
// a client sees of an error (src/http/body.ts, src/graphql/pipeline/formatError.ts).

describe('a request body', () => {
  it('is parsed as JSON for a JSON content type, kept as text for another, undefined when empty', () => {
    expect(parseBody('{"query":"{ viewer { username } }"}', 'application/json; charset=utf-8')).toEqual({ query: '{ viewer { username } }' });
    expect(parseBody('query=x', 'application/x-www-form-urlencoded')).toBe('query=x');
    expect(parseBody('', 'application/json')).toBeUndefined();
  });

  it('is refused with 400 when it is not JSON, or nests deeper than the envelope allows, before JSON.parse', () => {
    const refusal = (text: string): unknown => {
      try {
        parseJson(text);
        return null;
      } catch (error) {
        return error instanceof HttpError ? { status: error.status, message: error.message } : error;
      }
    };
    expect(refusal('{"query": ')).toEqual({ status: 400, message: 'The request body is not valid JSON' });
    const deep = '['.repeat(MAX_BODY_DEPTH + 1) + ']'.repeat(MAX_BODY_DEPTH + 1);
    expect(refusal(deep)).toEqual({ status: 400, message: `The request body nests deeper than ${MAX_BODY_DEPTH} levels` });
    // as deep as allowed, and brackets inside strings do not count
    expect(refusal('['.repeat(MAX_BODY_DEPTH) + ']'.repeat(MAX_BODY_DEPTH))).toBeNull();
    expect(refusal(JSON.stringify({ query: '['.repeat(1000) }))).toBeNull();
  });

  it('is refused for depth exactly when its values nest deeper than the limit, whatever their strings hold', () => {
    const depthOf = (value: unknown): number =>
      typeof value === 'object' && value !== null ? 1 + Math.max(0, ...Object.values(value).map(depthOf)) : 0;
    // strings full of brackets, quotes and backslashes; values nested around the limit
    const text = fc.string({ unit: fc.constantFrom('[', ']', '{', '}', '"', '\\', 'a', ':', ',') , maxLength: 6 });
    const leaf = fc.oneof(text, fc.integer(), fc.constant(null));
    const nested = fc.tuple(fc.integer({ min: MAX_BODY_DEPTH - 8, max: MAX_BODY_DEPTH + 4 }), leaf, fc.array(fc.oneof(fc.constant('array'), fc.constant('object'), text), { maxLength: 3 }))
      .map(([levels, inner, shape]) => {
        let value: unknown = inner;
        for (let n = 0; n < levels; n++) value = shape[n % Math.max(1, shape.length)] === 'object' ? { [String(shape[0] ?? 'k')]: value } : [value, ...shape.slice(1)];
        return value;
      });
    fc.assert(
      fc.property(nested, (value) => {
        const refused = (() => {
          try {
            parseJson(JSON.stringify(value));
            return false;
          } catch (error) {
            if (!(error instanceof HttpError)) throw error;
            return true;
          }
        })();
        expect(refused).toBe(depthOf(value) > MAX_BODY_DEPTH);
      }),
      { numRuns: propertyRuns(500, 2000) },
    );
  });
});

describe('variables in a POST body', () => {
  it('are refused past MAX_BODY_DEPTH with the body, before JSON.parse', () => {
    for (let levels = MAX_BODY_DEPTH - 6; levels <= MAX_BODY_DEPTH + 2; levels++) {
      const text = `{"query":"{ viewer { id } }","variables":{"v":${'['.repeat(levels)}${']'.repeat(levels)}}}`;
      // the body and the variables object are two levels, the arrays the others
      if (2 + levels > MAX_BODY_DEPTH) expect(() => parseBody(text, 'application/json')).toThrow(`nests deeper than ${MAX_BODY_DEPTH} levels`);
      else expect(parseBody(text, 'application/json')).toMatchObject({ variables: { v: expect.any(Array) as unknown } });
    }
  });
});

describe('formatError', () => {
  const lines: string[] = [];
  const format = gatewayFormatError(createLogger({ level: 'error', destination: { write: (line: string) => lines.push(line) } as unknown as NodeJS.WritableStream }));

  it('passes a code of the closed set without its stack trace', () => {
    const formatted = format({ message: 'first must be from 1 to 10', extensions: { code: ErrorCode.BAD_USER_INPUT, stacktrace: ['at x'] } }, new GraphQLError('first must be from 1 to 10'));
    expect(formatted).toEqual({ message: 'first must be from 1 to 10', extensions: { code: ErrorCode.BAD_USER_INPUT } });
  });

  it('shows nothing of an unexpected error, and logs it whole', () => {
    const error = new Error('connection string postgres://u:secret@db');
    const formatted = format({ message: error.message, path: ['viewer'], extensions: { code: ErrorCode.INTERNAL_SERVER_ERROR } }, error);
    expect(formatted).toEqual({ message: 'Internal server error', path: ['viewer'], extensions: { code: ErrorCode.INTERNAL_SERVER_ERROR } });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('unexpected error in a GraphQL request');
  });
});
