import { isObjectType } from 'graphql';
import { describe, expect, it } from 'vitest';
import { buildGatewaySchema } from '../../src/graphql/schema/schema.js';
import { ROUTES } from '../../src/http/routeTable.js';
import { API_KEY_SCOPES, FIELD_ACCESS, ROUTE_ACCESS, routeAccess } from '../../src/model/scopes.js';

/**
 * Every root field of the built schema and every route of the route table has its access placed
 * in src/model/scopes.ts: a new field or route fails here until it is given a scope (or said public).
 */
const schema = buildGatewaySchema({ introspection: true });
const PUBLIC_ROUTES = ['graphql', 'healthz', 'ide', 'metrics', 'openapi', 'readyz'];

describe('the scope table', () => {
  for (const typeName of ['Query', 'Mutation'] as const) {
    const type = schema.getType(typeName);
    if (!isObjectType(type)) throw new Error(`no ${typeName}`);
    const fields = Object.keys(type.getFields()).sort();

    it.each(fields)(`places ${typeName}.%s`, (field) => {
      expect(FIELD_ACCESS[typeName][field], `${typeName}.${field} has no scope in src/model/scopes.ts`).toBeDefined();
    });

    it(`names no ${typeName} field the schema lacks`, () => {
      expect(Object.keys(FIELD_ACCESS[typeName]).sort()).toEqual(fields);
    });
  }

  it('gives the fields the issue names the scopes it names', () => {
    const byScope = (scope: string) => [
      ...Object.entries(FIELD_ACCESS.Query).filter(([, a]) => a === scope).map(([f]) => f),
      ...Object.entries(FIELD_ACCESS.Mutation).filter(([, a]) => a === scope).map(([f]) => f),
    ].sort();
    expect(byScope('RECOMMENDATIONS_READ')).toEqual(['_entities', 'item', 'items', 'popularItems', 'postBrowsedProducts', 'productRecommendations', 'recommendations', 'recommendedForYou', 'trendingItems']);
    expect(byScope('EVENTS_WRITE')).toEqual(['recommendationStats', 'recordEvents', 'upsertItems']);
    expect(byScope('KEYS_MANAGE')).toEqual(['apiKeys', 'createApiKey', 'deleteApiKey', 'rotateApiKey', 'updateApiKey']);
  });

  const methods = ROUTES.flatMap((route) => route.methods.map((method) => [route.name, method] as const));
  it.each(methods)('places route %s %s', (name, method) => {
    const access = routeAccess(name, method);
    expect(access, `${name} ${method} has no scope in src/model/scopes.ts`).toBeDefined();
    if (PUBLIC_ROUTES.includes(name)) expect(access).toBe('public');
    else expect(API_KEY_SCOPES).toContain(access);
  });

  it('names no route the table lacks, and the twins of the fields', () => {
    expect(Object.keys(ROUTE_ACCESS).sort()).toEqual(ROUTES.map((route) => route.name).sort());
    expect(routeAccess('items', 'PUT')).toBe('EVENTS_WRITE');
    expect(routeAccess('items', 'GET')).toBe('RECOMMENDATIONS_READ');
    expect(routeAccess('events', 'POST')).toBe('EVENTS_WRITE');
    expect(routeAccess('statsImpressions', 'POST')).toBe('EVENTS_WRITE');
    expect(routeAccess('apikeyRotate', 'POST')).toBe('KEYS_MANAGE');
  });
});
