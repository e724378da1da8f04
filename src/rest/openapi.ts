import { hash } from 'node:crypto';
import type { OpenAPIV3_1 } from 'openapi-types';
import { headers, parameters, paths, responses, securitySchemes, type PathItem } from './openapiPaths.js';
import { schemas } from './openapiSchemas.js';
import { statsPaths } from './openapiStats.js';
import type { RestResponse } from './types.js';

/** The OpenAPI 3.1 description of the REST interfaces, served at GET /openapi.json for REST clients and tools
 * (Mesh, Apollo Connectors, client generators). Written by hand next to the handlers; test/rest/openapi.test.ts
 * checks it against their real answers, so a change to either that the other misses fails there. */

/** The served document: its paths and the components it uses always there. */
export type OpenApiDocument = Omit<OpenAPIV3_1.Document, 'paths' | 'components'> & {
  paths: Record<string, PathItem>;
  components: Required<Pick<OpenAPIV3_1.ComponentsObject, 'schemas' | 'responses' | 'parameters' | 'headers' | 'securitySchemes'>>;
};

export const openApiDocument: OpenApiDocument = {
  openapi: '3.1.0',
  info: {
    title: 'recs-gateway REST interfaces',
    version: '1.0.0',
    description: 'The two REST interfaces recs-gateway serves from its backend, drop-in for clients of the real services: ' +
      'API key management (Concord\'s /api/v1/apikey) and product recommendations and lookup (the Walmart Open API\'s /v1). ' +
      'The same data is served as GraphQL at /graphql.',
    license: { name: 'UNLICENSED', identifier: 'UNLICENSED' },
  },
  tags: [
    { name: 'api-keys', description: 'Per-user API keys: create, list, delete.' },
    { name: 'recommendations', description: 'Recommended items anchored on one item, and the product lookup.' },
    { name: 'ingestion', description: 'The live recommender: events and item records in, for administrators.' },
  ],
  paths: { ...paths, ...statsPaths },
  components: { schemas, responses, parameters, headers, securitySchemes },
};

/** Encoded once: the description changes only with the code. */
const body = JSON.stringify(openApiDocument);
const etag = `"${hash('sha256', body, 'base64url').slice(0, 27)}"`;

/** Whether an If-None-Match value names this version (a list, weak or strong, or *). */
function matches(ifNoneMatch: string | undefined): boolean {
  if (ifNoneMatch === undefined) return false;
  return ifNoneMatch.split(',').some((tag) => {
    const value = tag.trim();
    return value === '*' || value === etag || value === `W/${etag}`;
  });
}

/** GET or HEAD /openapi.json (the router refuses other methods): the description, cacheable for five minutes and revalidated by its ETag. */
export function openApiResponse(ifNoneMatch: string | undefined): RestResponse {
  const headers = { etag, 'cache-control': 'public, max-age=300' };
  if (matches(ifNoneMatch)) return { status: 304, headers, body: '' };
  return {
    status: 200,
    headers: { ...headers, 'content-type': 'application/json; charset=utf-8', 'content-length': String(Buffer.byteLength(body)) },
    body,
  };
}
