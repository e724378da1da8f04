import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { basicAuthorization } from '../src/auth/authorization.js';
import { ErrorCode } from '../src/errors.js';
import { codeOf, useEmbeddedGateway } from './helpers/gateway.js';
import { storeKinds } from './helpers/stores.js';

// The README's list of error codes is the closed set clients code against: a probe found two codes
// in answers (OPERATION_RESOLUTION_FAILURE, PERSISTED_QUERY_NOT_SUPPORTED) that it did not name,
// behind a "…", and BAD_USER_INPUT promised an extensions.field that coercion errors lack.

const README = readFileSync(new URL('../README.md', import.meta.url), 'utf8');

/** The codes named in the first column of the README's "Errors" table. */
function documentedCodes(): Set<string> {
  const section = README.slice(README.indexOf('\n## Errors\n'), README.indexOf('\n## Security\n'));
  const codes = new Set<string>();
  for (const line of section.split('\n')) {
    const first = /^\| ([^|]+) \|/.exec(line)?.[1];
    for (const [, code] of first?.matchAll(/`([A-Z_]+)`/g) ?? []) codes.add(code!);
  }
  return codes;
}

describe('the error codes', () => {
  it('are the ones the README lists, each of them and no other', () => {
    expect([...documentedCodes()].sort()).toEqual(Object.values(ErrorCode).sort());
  });

  describe('as answers give them', () => {
    const gw = useEmbeddedGateway(storeKinds[0]!);
    const alice = { authorization: basicAuthorization('alice', 'alice-password') };

    it('OPERATION_RESOLUTION_FAILURE for two operations and no operationName, or a name of none of them', async () => {
      const two = 'query A { viewer { username } } query B { viewer { username } }';
      const unnamed = await gw.gql(two, {}, alice);
      expect([unnamed.status, codeOf(unnamed)]).toEqual([400, 'OPERATION_RESOLUTION_FAILURE']);
      const res = await fetch(`${gw.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...alice },
        body: JSON.stringify({ query: two, operationName: 'Z' }),
      });
      const body = (await res.json()) as { errors: { extensions: { code: string } }[] };
      expect([res.status, body.errors[0]!.extensions.code]).toEqual([400, 'OPERATION_RESOLUTION_FAILURE']);
    });

    it('BAD_USER_INPUT with a field from the checks, and the path in the message from coercion', async () => {
      const query = 'query Recs($first: Int) { productRecommendations(itemId: 31000005, first: $first) { itemId } }';
      const checked = await gw.gql(query, { first: 0 }, alice);
      expect(codeOf(checked)).toBe('BAD_USER_INPUT');
      expect(checked.body.errors![0]!.extensions!.field).toBe('first');
      const coerced = await gw.gql(query, { first: 'ten' }, alice);
      expect([coerced.status, codeOf(coerced)]).toEqual([400, 'BAD_USER_INPUT']);
      expect(coerced.body.errors![0]!.message).toContain('Variable "$first" got invalid value; Int cannot represent');
      expect(coerced.body.errors![0]!.extensions!.field).toBeUndefined();
    });
  });
});
