import { getIntrospectionQuery } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuthorization } from '../../src/auth/authorization.js';
import { codeOf, embeddedWithUsers, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { storeKinds } from '../helpers/stores.js';

// Issue 41: what an outside probe of `npm start` still made work against the GraphQL route, each
// over real HTTP on the embedded backend, bounded in requests, with a valid client answered too.

const alice = basicAuthorization('alice', 'alice-password');
const ITEM = 31000005;
const CACHED = `{ item(itemId: ${ITEM}) { itemId name } }`;

/** A gateway over the demo shop on a fresh SQLite store, with `env`; stopped with its store. */
async function gatewayWith(env: Record<string, string> = {}): Promise<TestGateway & { dispose(): Promise<void> }> {
  const opened = await storeKinds[0]!.open();
  const gateway = await startTestGateway(await embeddedWithUsers(opened.store), env);
  return {
    ...gateway,
    async dispose() {
      await gateway.stop();
      await opened.dispose();
    },
  };
}

/** 30 aliases of `__type(name: "Query")` through fragments that reach every field's type's fields: 2.3 MB before issue 41. */
export const TYPE_ALIASES_QUERY = [
  `{ ${Array.from({ length: 30 }, (_, i) => `a${i}: __type(name: "Query") { ...T }`).join(' ')} }`,
  'fragment T on __Type { fields(includeDeprecated: true) { name description args { ...V } type { ...R } } }',
  'fragment V on __InputValue { name description type { ...R } }',
  'fragment R on __Type { name fields { ...F } ofType { name fields { ...F } ofType { name fields { ...F } ofType { name fields { ...F } } } } }',
  'fragment F on __Field { name description deprecationReason args { name description } type { kind name description ofType { kind name description ofType { name } } } }',
].join('\n');

describe('introspection (finding 1)', () => {
  let gw: Awaited<ReturnType<typeof gatewayWith>>;
  beforeAll(async () => {
    gw = await gatewayWith();
  });
  afterAll(() => gw.dispose());

  it('refuses an anonymous body whose __type aliases multiply the answer, on both paths, and answers the standard query and a valid key', async () => {
    const full = getIntrospectionQuery({ descriptions: true, specifiedByUrl: true, directiveIsRepeatable: true, schemaDescription: true, inputValueDeprecation: true, oneOf: true });
    // five aliases are within MAX_TYPE_FIELDS, and what they answer is not
    const five = TYPE_ALIASES_QUERY.replace(/^\{.*\}$/m, `{ ${Array.from({ length: 5 }, (_, i) => `a${i}: __type(name: "Query") { ...T }`).join(' ')} }`);
    // Apollo answers first; its 200 to the standard query teaches the prepared path the content type, which answers after
    for (const path of ['apollo', 'prepared']) {
      const refused = await gw.gql(TYPE_ALIASES_QUERY);
      expect(refused.status, path).toBe(400);
      expect(codeOf(refused)).toBe('QUERY_TOO_COMPLEX');
      expect(refused.body.errors?.[0]?.message).toContain('typeFields 30 exceeds the limit of 5');
      const counted = await gw.gql(five);
      expect(counted.status, path).toBe(400);
      expect(counted.body.errors?.[0]?.extensions).toMatchObject({ code: 'QUERY_TOO_COMPLEX', limit: 'introspectionCost', max: 10_000 });
      expect(counted.body.errors?.[0]?.message).toContain('MAX_INTROSPECTION_COST');
      const standard = await gw.gql<{ __schema: { types: unknown[] } }>(full);
      expect(standard.status, path).toBe(200);
      expect(standard.body.data?.__schema.types.length).toBeGreaterThan(20);
    }
    expect(gw.gateway.preparedStats?.refused).toBeGreaterThanOrEqual(2);
    const valid = await gw.gql<{ item: { itemId: number } }>(CACHED, undefined, { authorization: alice });
    expect(valid.body.data?.item.itemId).toBe(ITEM);
  });
});
