import {
  getNamedType, isCompositeType, isObjectType, Kind, type ConstDirectiveNode, type GraphQLCompositeType, type GraphQLField,
} from 'graphql';
import { describe, expect, it } from 'vitest';
import { basicAuthorization } from '../../../src/auth/authorization.js';
import { buildGatewaySchema } from '../../../src/graphql/schema/schema.js';
import { codeOf, useEmbeddedGateway } from '../../helpers/gateway.js';
import { storeKinds } from '../../helpers/stores.js';

// The takeover answers again the exact queries Apollo accepted, with the headers Apollo gave them;
// these tests hold it to what Apollo does where it might differ.

const alice = basicAuthorization('alice', 'alice-password');
const ITEM = 'query Item($id: ItemId!) { item(itemId: $id) { itemId name } }';

interface Hint { maxAge?: number; scope?: string; inherit: boolean }

function hintOf(directives: readonly ConstDirectiveNode[] | undefined): Hint | null {
  const directive = directives?.find((d) => d.name.value === 'cacheControl');
  if (directive === undefined) return null;
  const hint: Hint = { inherit: false };
  for (const argument of directive.arguments ?? []) {
    const { value } = argument;
    if (argument.name.value === 'maxAge' && value.kind === Kind.INT) hint.maxAge = Number(value.value);
    if (argument.name.value === 'scope' && value.kind === Kind.ENUM) hint.scope = value.value;
    if (argument.name.value === 'inheritMaxAge' && value.kind === Kind.BOOLEAN) hint.inherit = value.value;
  }
  return hint;
}

describe('the schema\'s cache hints', () => {
  it('make a query\'s cache policy depend on its root fields alone, never on what they answer', () => {
    // Apollo applies a field's hint only when the field runs: a nested hint stricter than its
    // root's would make the policy of an empty list differ from a full one's, which the takeover,
    // learning the policy once an operation, could not see
    const schema = buildGatewaySchema({ introspection: true });
    const violations: string[] = [];
    for (const root of Object.values(schema.getQueryType()!.getFields())) {
      const rootType = getNamedType(root.type);
      const rootHint = hintOf(root.astNode?.directives) ?? (isCompositeType(rootType) ? hintOf(rootType.astNode?.directives) : null);
      const maxAge = rootHint?.maxAge ?? 0;
      const seen = new Set<GraphQLCompositeType>();
      const walk = (type: GraphQLCompositeType, path: string): void => {
        if (seen.has(type) || !isObjectType(type)) return;
        seen.add(type);
        for (const field of Object.values(type.getFields()) as GraphQLField<unknown, unknown>[]) {
          const target = getNamedType(field.type);
          const hint = hintOf(field.astNode?.directives) ?? (isCompositeType(target) ? hintOf(target.astNode?.directives) : null);
          const stricter = hint !== null && !hint.inherit && ((hint.maxAge ?? 0) < maxAge || (hint.scope === 'PRIVATE' && rootHint?.scope !== 'PRIVATE'));
          if (stricter && root.name !== '_entities') violations.push(`${path}.${field.name}`);
          if (isCompositeType(target)) walk(target, `${path}.${field.name}`);
        }
      };
      if (isCompositeType(rootType)) walk(rootType, root.name);
    }
    expect(violations).toEqual([]);
  });
});

describe.each(storeKinds.slice(0, 1))('the takeover, $name store', (kind) => {
  const gw = useEmbeddedGateway(kind);

  it('answers a query Apollo accepted, with Apollo\'s headers, for any variables', async () => {
    const first = await gw.gql(ITEM, { id: 31000005 }, { authorization: alice });
    const answered = gw.gateway.takeoverStats!.answered;
    // ids not asked before: the response cache holds none of these answers
    for (const id of [31000007, 31000010, 31000015]) {
      const again = await gw.gql<{ item: { itemId: number } }>(ITEM, { id }, { authorization: alice });
      expect(again.status).toBe(200);
      expect(again.body.data?.item.itemId).toBe(id);
      expect(again.headers.get('cache-control')).toBe(first.headers.get('cache-control'));
      expect(again.headers.get('content-type')).toBe(first.headers.get('content-type'));
    }
    expect(gw.gateway.takeoverStats!.answered).toBe(answered + 3);
  });

  it('hands a run with errors back to Apollo, whose answer the client gets', async () => {
    await gw.gql(ITEM, { id: 31000005 }, { authorization: alice });
    const handedBack = gw.gateway.takeoverStats!.handedBack;
    const missing = await gw.gql(ITEM, { id: 99999999 }, { authorization: alice });
    expect(codeOf(missing)).toBe('NOT_FOUND');
    expect(missing.headers.get('cache-control')).toBe('no-store');
    const anonymous = await gw.gql(ITEM, { id: 31000005 });
    expect(codeOf(anonymous)).toBe('UNAUTHENTICATED');
    expect(anonymous.status).toBe(401);
    const badVariable = await gw.gql(ITEM, { id: 'x' }, { authorization: alice });
    expect(badVariable.status).toBe(400);
    expect(codeOf(badVariable)).toBe('BAD_USER_INPUT');
    expect(gw.gateway.takeoverStats!.handedBack).toBe(handedBack + 3);
  });

  it('never takes a mutation, a request with extensions or another operation name', async () => {
    const drop = 'mutation Drop($id: ID!) { deleteApiKey(id: $id) { ok } }';
    const id = '00000000-0000-4000-8000-000000000000';
    const before = gw.gateway.takeoverStats!.answered;
    for (let n = 0; n < 3; n++) await gw.gql(drop, { id }, { authorization: alice });
    const named = await fetch(`${gw.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: alice },
      body: JSON.stringify({ query: ITEM, operationName: 'Other', variables: { id: 31000005 } }),
    });
    expect(named.status).toBe(400);
    const withExtensions = await fetch(`${gw.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: alice },
      body: JSON.stringify({ query: ITEM, variables: { id: 31000005 }, extensions: {} }),
    });
    expect(withExtensions.status).toBe(200);
    expect(gw.gateway.takeoverStats!.answered).toBe(before);
  });
});
