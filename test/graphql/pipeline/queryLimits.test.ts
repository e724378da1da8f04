import { getIntrospectionQuery, parse, specifiedRules, validate } from 'graphql';
import { describe, expect, it } from 'vitest';
import { DEFAULT_LIMITS } from '../../../src/config/defaults.js';
import { queryLimitsRule } from '../../../src/graphql/pipeline/limits.js';
import { buildGatewaySchema } from '../../../src/graphql/schema/schema.js';

// The query limits are the first, cheap pass of validation (src/graphql/pipeline/limits.ts): linear in the
// document whatever it does with fragments, and a document over them gets their errors alone.

const schema = buildGatewaySchema({ introspection: true });
const rule = queryLimitsRule(DEFAULT_LIMITS);
const limitMessages = (query: string) => validate(schema, parse(query), [rule]).map((error) => error.message);
const copies = (field: string, times: number): string => Array.from({ length: times }, () => field).join(' ');

describe('the query limits', () => {
  it('count fields of one response name in one selection set, those its fragments bring in included', () => {
    expect(limitMessages(`{ ${copies('viewer { id }', 10)} }`)).toEqual([]);
    expect(limitMessages(`{ ${copies('viewer { id }', 11)} }`)).toEqual(['Query too complex: sameNameFields 11 exceeds the limit of 10']);
    // 4 of its own, 4 from a fragment, 3 from an inline fragment
    const spread = `{ ${copies('viewer { id }', 4)} ...F ... on Query { ${copies('viewer { id }', 3)} } } fragment F on Query { ${copies('viewer { id }', 4)} }`;
    expect(limitMessages(spread)).toEqual(['Query too complex: sameNameFields 11 exceeds the limit of 10']);
    // below the root, and through an alias
    expect(limitMessages(`{ viewer { ${copies('id', 6)} ${copies('id: username', 5)} } }`)).toEqual(['Query too complex: sameNameFields 11 exceeds the limit of 10']);
    // a fragment spread twice in one set is compared once by graphql-js, and counted once
    expect(limitMessages(`{ ...F ...F } fragment F on Query { ${copies('viewer { id }', 6)} }`)).toEqual([]);
  });

  it('measure a document whose fragments double at every level in linear time', () => {
    const levels = 40;
    const fragments = Array.from({ length: levels }, (_, n) => `fragment F${n} on Query { ...F${n + 1} ...F${n + 1} }`).join(' ');
    const query = `{ ...F0 } ${fragments} fragment F${levels} on Query { viewer { id } }`;
    const started = performance.now();
    const messages = limitMessages(query);
    // 2^40 fields if every spread were walked
    expect(performance.now() - started).toBeLessThan(1000);
    expect(messages).toEqual([`Query too complex: cost ${2 * 2 ** levels} exceeds the limit of ${DEFAULT_LIMITS.maxCost}`]);
  });

  it('give a document over them the same errors alone first as with every rule at once', () => {
    const query = `query Q($unused: Int) { ${copies('viewer { id }', 12)} nope }`;
    const alone = validate(schema, parse(query), [rule]).map((error) => error.message);
    const together = validate(schema, parse(query), [...specifiedRules, rule]).map((error) => error.message);
    expect(alone).toEqual(['Query too complex: sameNameFields 12 exceeds the limit of 10']);
    expect(together).toEqual(alone);
    // within the limits, the other rules report as ever
    expect(validate(schema, parse('query Q($unused: Int) { nope }'), [...specifiedRules, rule]).map((error) => error.message)).toEqual([
      'Cannot query field "nope" on type "Query".',
      'Variable "$unused" is never used in operation "Q".',
    ]);
  });
});

describe('aliases', () => {
  it('may be at most MAX_ALIAS_LENGTH characters: each is written for every value of its field', () => {
    expect(limitMessages(`{ ${'a'.repeat(100)}: viewer { id } }`)).toEqual([]);
    expect(limitMessages(`{ viewer { id ${'b'.repeat(101)}: username } }`)).toEqual(['Query too complex: aliasLength 101 exceeds the limit of 100']);
  });
});

describe('introspection', () => {
  const full = getIntrospectionQuery({ descriptions: true, specifiedByUrl: true, directiveIsRepeatable: true, schemaDescription: true, inputValueDeprecation: true, oneOf: true });
  const typeFields = (n: number, selection: string) => `{ ${Array.from({ length: n }, (_, i) => `t${i}: __type(name: "Item") ${selection}`).join(' ')} }`;

  it('passes the standard introspection query, the one GraphiQL and codegen send', () => {
    expect(limitMessages(getIntrospectionQuery())).toEqual([]);
    expect(limitMessages(full)).toEqual([]);
  });

  it('count __type fields as __schema fields are, each spread of a fragment counted', () => {
    expect(limitMessages(typeFields(5, '{ name }'))).toEqual([]);
    expect(limitMessages(typeFields(6, '{ name }'))).toEqual(['Query too complex: typeFields 6 exceeds the limit of 5']);
    expect(limitMessages('{ ...Q ...Q2 } fragment Q on Query { a: __type(name: "Item") { name } b: __type(name: "Item") { name } c: __type(name: "Item") { name } } fragment Q2 on Query { ...Q }')).toEqual([
      'Query too complex: typeFields 6 exceeds the limit of 5',
    ]);
  });

  it('count what introspection answers on the schema, not its lists as one', () => {
    const fullType = full.slice(full.indexOf('fragment FullType'));
    const limited = (query: string, maxIntrospectionCost: number) =>
      validate(schema, parse(query), [queryLimitsRule({ ...DEFAULT_LIMITS, maxIntrospectionCost })]).map((error) => error.extensions.limit);
    // one type's fields, arguments and their types, against every type's (a type named by a variable may be any)
    expect(limited(`{ __type(name: "Item") { ...FullType } } ${fullType}`, 2000)).toEqual([]);
    expect(limited(`query($name: String!) { __type(name: $name) { ...FullType } } ${fullType}`, 2000)).toEqual(['introspectionCost']);
    // the standard query's answer is about 4,200 fields: counted as that, not as its own 100 or so
    expect(limited(full, 3000)).toEqual(['introspectionCost']);
    expect(limited(full, 5000)).toEqual([]);
  });
});
