import fc from 'fast-check';
import { GraphQLError } from 'graphql';
import { describe, expect, it } from 'vitest';
import { ErrorCode } from '../../src/errors.js';
import { gatewayFormatError } from '../../src/graphql/formatError.js';
import { checkEnvelope, MAX_JSON_DEPTH } from '../../src/graphql/envelope.js';
import { HttpError, parseBody, parseJson, parseJsonWithDepth } from '../../src/http/body.js';
import { createLogger } from '../../src/logger.js';
import { propertyRuns } from '../helpers/runs.js';

// Parts of the request path that need no HTTP to be tried: how a body is read as JSON, and what
// a client sees of an error (src/http/body.ts, src/graphql/formatError.ts).

describe('a request body', () => {
  it('is parsed as JSON for a JSON content type, kept as text for another, undefined when empty', () => {
    expect(parseBody('{"query":"{ viewer { username } }"}', 'application/json; charset=utf-8')).toMatchObject({ body: { query: '{ viewer { username } }' } });
    expect(parseBody('query=x', 'application/x-www-form-urlencoded')).toEqual({ body: 'query=x', depth: 0 });
    expect(parseBody('', 'application/json')).toEqual({ body: undefined, depth: 0 });
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
    const deep = '['.repeat(MAX_JSON_DEPTH + 9) + ']'.repeat(MAX_JSON_DEPTH + 9);
    expect(refusal(deep)).toEqual({ status: 400, message: `The request body nests deeper than ${MAX_JSON_DEPTH + 8} levels` });
    // as deep as allowed, and brackets inside strings do not count
    expect(refusal('['.repeat(MAX_JSON_DEPTH + 8) + ']'.repeat(MAX_JSON_DEPTH + 8))).toBeNull();
    expect(refusal(JSON.stringify({ query: '['.repeat(1000) }))).toBeNull();
  });

  it('is refused for depth exactly when its values nest deeper than the limit, whatever their strings hold', () => {
    const depthOf = (value: unknown): number =>
      typeof value === 'object' && value !== null ? 1 + Math.max(0, ...Object.values(value).map(depthOf)) : 0;
    // strings full of brackets, quotes and backslashes; values nested around the limit
    const text = fc.string({ unit: fc.constantFrom('[', ']', '{', '}', '"', '\\', 'a', ':', ',') , maxLength: 6 });
    const leaf = fc.oneof(text, fc.integer(), fc.constant(null));
    const nested = fc.tuple(fc.integer({ min: MAX_JSON_DEPTH, max: MAX_JSON_DEPTH + 12 }), leaf, fc.array(fc.oneof(fc.constant('array'), fc.constant('object'), text), { maxLength: 3 }))
      .map(([levels, inner, shape]) => {
        let value: unknown = inner;
        for (let n = 0; n < levels; n++) value = shape[n % Math.max(1, shape.length)] === 'object' ? { [String(shape[0] ?? 'k')]: value } : [value, ...shape.slice(1)];
        return value;
      });
    fc.assert(
      fc.property(nested, (value) => {
        const refused = (() => {
          try {
            // what the envelope is told of the body's depth bounds it
            expect(parseJsonWithDepth(JSON.stringify(value)).depth).toBeGreaterThanOrEqual(depthOf(value));
            return false;
          } catch (error) {
            if (!(error instanceof HttpError)) throw error;
            return true;
          }
        })();
        expect(refused).toBe(depthOf(value) > MAX_JSON_DEPTH + 8);
      }),
      { numRuns: propertyRuns(500, 2000) },
    );
  });
});

describe('the envelope of a POST body', () => {
  it('refuses variables nested past MAX_JSON_DEPTH within a body the text check lets through, told the body\'s depth', () => {
    for (let levels = MAX_JSON_DEPTH - 4; levels <= MAX_JSON_DEPTH + 6; levels++) {
      const text = `{"query":"{ viewer { id } }","variables":{"v":${'['.repeat(levels)}${']'.repeat(levels)}}}`;
      const { body, depth } = parseBody(text, 'application/json');
      const envelope = checkEnvelope('POST', { 'content-type': 'application/json' }, '', body, depth);
      // the variables object is one level, its arrays the others
      expect(envelope.ok, `${levels} levels`).toBe(1 + levels <= MAX_JSON_DEPTH);
      if (!envelope.ok) expect(envelope.error.message).toBe(`\`variables\` nests deeper than ${MAX_JSON_DEPTH} levels.`);
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
