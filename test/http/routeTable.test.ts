import { describe, expect, it } from 'vitest';
import { intakeOf, routeOf } from '../../src/http/routeTable.js';

// The prelude reads a body by its kind in the route table: a wrong kind here reads what nobody may send.
const kindOf = (method: string, path: string) => {
  const route = routeOf(path);
  return route === null ? null : intakeOf(route, method).body;
};

describe('the route table as the prelude reads it', () => {
  it('reads a body only where an interface takes one, of the kind it takes', () => {
    expect(kindOf('POST', '/graphql')).toBe('operation');
    expect(kindOf('POST', '/api/v1/apikey')).toBe('ordinary');
    expect(kindOf('POST', '/api/v1/apikey/')).toBe('ordinary');
    expect(kindOf('POST', '/v1/events')).toBe('batch');
    expect(kindOf('PUT', '/v1/items')).toBe('batch');
  });

  it('reads none for a method or a path that takes no body, whatever a careless client sends', () => {
    for (const [method, path] of [
      ['GET', '/graphql'], ['PUT', '/graphql'], ['GET', '/api/v1/apikey'], ['DELETE', '/api/v1/apikey/6f0c7b1e-0000-4000-8000-000000000000'],
      ['POST', '/api/v1/apikey/6f0c7b1e-0000-4000-8000-000000000000'], ['PUT', '/v1/events'], ['GET', '/v1/events'], ['GET', '/v1/items'],
      ['POST', '/v1/items'], ['POST', '/v1/postbrowse'], ['GET', '/healthz'], ['POST', '/metrics'],
    ] as const) {
      expect(kindOf(method, path), `${method} ${path}`).toBe('none');
    }
  });

  it('takes the method in any case, as node hands it over', () => {
    expect(kindOf('post', '/v1/events')).toBe('batch');
    expect(kindOf('put', '/v1/items')).toBe('batch');
  });
});
