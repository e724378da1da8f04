import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuthorization } from '../../src/auth/authorization.js';
import { openApiDocument } from '../../src/rest/openapi.js';
import { embeddedWithUsers, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { storeKinds } from '../helpers/stores.js';

/**
 * /openapi.json: a valid OpenAPI 3.1 document (checked by @seriousme/openapi-schema-validator
 * against the official schemas, and each of its schemas compiled by Ajv in strict mode), and true
 * to the answers: real calls to a gateway on the embedded backend, each body validated against
 * the schema the description gives for its path, method and status, with every object closed so
 * that a field the description leaves out fails too.
 */
const alice = basicAuthorization('alice', 'alice-password');
const PHONE = 31000005;
const sqlite = storeKinds.find((kind) => kind.name === 'sqlite')!;

type Json = Record<string, unknown>;
interface Answer {
  status: number;
  headers: Headers;
  body: unknown;
}

/** A description whose every $ref is resolved, as the validator hands it back. */
let resolved: Json;
const ajv = new Ajv2020({ strict: true, allErrors: true });
ajv.addFormat('uuid', /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i);
ajv.addFormat('uri', { type: 'string', validate: (value) => URL.canParse(value) });
ajv.addFormat('date-time', { type: 'string', validate: (value) => /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/.test(value) && !Number.isNaN(Date.parse(value)) });
ajv.addFormat('int64', { type: 'number', validate: (value) => Number.isSafeInteger(value) });

/** The schema with every object that lists its properties closed to others. */
function closed(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(closed);
  if (typeof schema !== 'object' || schema === null) return schema;
  const out: Json = {};
  for (const [name, value] of Object.entries(schema)) {
    // property names and examples are data, not schemas
    out[name] = name === 'properties' ? Object.fromEntries(Object.entries(value as Json).map(([p, s]) => [p, closed(s)])) : name === 'examples' || name === 'const' ? value : closed(value);
  }
  if ('properties' in out && !('additionalProperties' in out)) out.additionalProperties = false;
  return out;
}

const served = (): Json => JSON.parse(JSON.stringify(openApiDocument)) as Json;

const validators = new Map<string, ValidateFunction>();

/** The closed schema of the JSON answer documented for path, method and status; fails when there is none. */
function documented(path: string, method: string, status: number): ValidateFunction {
  const id = `${method} ${path} ${status}`;
  let validate = validators.get(id);
  if (validate) return validate;
  const operation = ((resolved.paths as Json)[path] as Json | undefined)?.[method] as Json | undefined;
  expect(operation, `${method.toUpperCase()} ${path} is not described`).toBeDefined();
  const response = (operation!.responses as Json)[String(status)] as Json | undefined;
  expect(response, `${method.toUpperCase()} ${path} does not describe a ${status}`).toBeDefined();
  const schema = ((response!.content as Json)['application/json'] as Json).schema;
  validate = ajv.compile(closed(schema) as Json);
  validators.set(id, validate);
  return validate;
}

/** The answer is described: its status, its content type, its body, and the headers the description promises. */
function expectDescribed(answer: Answer, path: string, method: string): void {
  const validate = documented(path, method, answer.status);
  expect(answer.headers.get('content-type')).toMatch(/^application\/json/);
  const valid = validate(answer.body);
  expect(valid ? null : { body: answer.body, errors: validate.errors }, `${method.toUpperCase()} ${path} ${answer.status}`).toBeNull();
  const operation = ((resolved.paths as Json)[path] as Json)[method] as Json;
  const headers = ((operation.responses as Json)[String(answer.status)] as Json).headers as Json | undefined;
  if (answer.status === 429) expect(headers?.['Retry-After'] && answer.headers.get('retry-after')).toMatch(/^\d+$/);
  if (answer.headers.get('www-authenticate') !== null) expect(headers?.['WWW-Authenticate']).toBeDefined();
}

describe('the OpenAPI description', () => {
  it('is a valid OpenAPI 3.1 document whose schemas all compile strictly', async () => {
    const validator = new Validator();
    // as served: the JSON text, parsed (the resolver below wants no object twice in the tree)
    const result = await validator.validate(served());
    expect(result.errors ?? null).toBeNull();
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
    resolved = validator.resolveRefs();
    // every schema, in every place, is one strict Ajv accepts
    for (const [name, schema] of Object.entries((resolved.components as Json).schemas as Json)) {
      expect(() => ajv.compile(schema as Json), name).not.toThrow();
    }
    for (const [path, item] of Object.entries(resolved.paths as Json)) {
      for (const [method, operation] of Object.entries(item as Json)) {
        for (const status of Object.keys((operation as Json).responses as Json)) documented(path, method, Number(status));
      }
    }
  });

  it('covers every route the gateway serves', () => {
    expect(Object.keys(openApiDocument.paths).sort()).toEqual(['/api/v1/apikey', '/api/v1/apikey/{id}', '/api/v1/apikey/{id}/rotate', '/api/v1/apikey/{id}/usage', '/v1/events', '/v1/foryou', '/v1/items', '/v1/items/{itemId}', '/v1/nbp', '/v1/popular', '/v1/postbrowse', '/v1/stats', '/v1/stats/impressions', '/v1/trending']);
    expect(Object.keys(openApiDocument.components.securitySchemes).sort()).toEqual(['apiKeyHeader', 'apiKeyQuery', 'basicAuth', 'bearerKey']);
  });
});

describe('GET /openapi.json, and the answers it describes, over HTTP', () => {
  let gw: TestGateway;
  let limited: TestGateway;
  const disposers: (() => Promise<void>)[] = [];

  beforeAll(async () => {
    resolved ??= new Validator().resolveRefs({ specification: served() });
    for (const env of [{}, { AUTH_FAILURES_PER_MINUTE: '1', BODY_LIMIT_BYTES: '1024', INGEST_BODY_LIMIT_BYTES: '1024' }] as Record<string, string>[]) {
      const opened = await sqlite.open();
      disposers.push(opened.dispose);
      const started = await startTestGateway(await embeddedWithUsers(opened.store), env);
      disposers.unshift(() => started.stop());
      if (gw === undefined) gw = started;
      else limited = started;
    }
  });
  afterAll(async () => {
    for (const dispose of disposers) await dispose().catch(() => undefined);
  });

  async function call(method: string, path: string, auth?: string, body?: unknown, base = gw.url): Promise<Answer> {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (auth !== undefined) headers.authorization = auth;
    const response = await fetch(`${base}${path}`, { method, headers, body: body === undefined ? null : JSON.stringify(body) });
    return { status: response.status, headers: response.headers, body: JSON.parse(await response.text()) as unknown };
  }

  it('serves the description, cacheable and revalidated by its ETag', async () => {
    const response = await fetch(`${gw.url}/openapi.json`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    expect(response.headers.get('cache-control')).toBe('public, max-age=300');
    const etag = response.headers.get('etag');
    expect(etag).toMatch(/^"[\w-]+"$/);
    expect(await response.json()).toEqual(served());
    for (const ifNoneMatch of [etag!, `W/${etag}`, `"other", ${etag}`]) {
      const again = await fetch(`${gw.url}/openapi.json`, { headers: { 'if-none-match': ifNoneMatch } });
      expect([again.status, await again.text(), again.headers.get('etag')]).toEqual([304, '', etag]);
    }
    const stale = await fetch(`${gw.url}/openapi.json`, { headers: { 'if-none-match': '"other"' } });
    expect(stale.status).toBe(200);
    await stale.body?.cancel();
    const post = await fetch(`${gw.url}/openapi.json`, { method: 'POST' });
    expect([post.status, post.headers.get('allow')]).toEqual([405, 'GET, HEAD']);
    await post.body?.cancel();
  });

  it('the key interface: create, list, delete and their failures answer as described', async () => {
    const created = await call('POST', '/api/v1/apikey', alice, { name: 'openapi-check', expiresInDays: 30 });
    expect(created.status).toBe(200);
    expectDescribed(created, '/api/v1/apikey', 'post');
    const { key, id } = created.body as { key: string; id: string };
    for (const answer of [
      await call('POST', '/api/v1/apikey', alice, {}),
      await call('POST', '/api/v1/apikey', alice, { name: '-x' }),
      await call('POST', '/api/v1/apikey', alice, { name: 'openapi-check' }),
      await call('POST', '/api/v1/apikey', alice, { username: 'bob', userDomain: 'corp.example' }),
      await call('POST', '/api/v1/apikey', 'AAECAwQFBgcICQoLDA0ODw', {}),
    ]) {
      expectDescribed(answer, '/api/v1/apikey', 'post');
    }
    const list = await call('GET', '/api/v1/apikey', `Bearer ${key}`);
    expect((list.body as { name: string }[]).map((k) => k.name)).toEqual(['key#1', 'openapi-check']);
    expectDescribed(list, '/api/v1/apikey', 'get');
    expectDescribed(await call('GET', '/api/v1/apikey', key), '/api/v1/apikey', 'get');
    for (const auth of [undefined, basicAuthorization('alice', 'wrong'), 'AAECAwQFBgcICQoLDA0ODw']) {
      const refused = await call('GET', '/api/v1/apikey', auth);
      expect(refused.status).toBe(401);
      expectDescribed(refused, '/api/v1/apikey', 'get');
    }
    const statuses: number[] = [];
    for (const target of ['not-a-uuid', '00000000-0000-4000-8000-000000000000', id]) {
      const answer = await call('DELETE', `/api/v1/apikey/${target}`, key);
      statuses.push(answer.status);
      expectDescribed(answer, '/api/v1/apikey/{id}', 'delete');
    }
    expect(statuses).toEqual([404, 400, 200]);
    // the key deleted: 401
    const gone = await call('DELETE', `/api/v1/apikey/${id}`, key);
    expect(gone.status).toBe(401);
    expectDescribed(gone, '/api/v1/apikey/{id}', 'delete');
  });

  it('the recommendation interface: postbrowse, nbp, trending, popular, foryou, items and their failures answer as described', async () => {
    const { key } = (await call('POST', '/api/v1/apikey', alice, {})).body as { key: string };
    const apiKey = encodeURIComponent(key);
    const cases: [string, string, number][] = [
      [`/v1/postbrowse?itemId=${PHONE}&apiKey=${apiKey}`, '/v1/postbrowse', 200],
      [`/v1/nbp?itemId=${PHONE}&apiKey=${apiKey}`, '/v1/nbp', 200],
      [`/v1/nbp?itemId=1&apiKey=${apiKey}`, '/v1/nbp', 400],
      [`/v1/nbp?itemId=abc&apiKey=${apiKey}`, '/v1/nbp', 400],
      [`/v1/postbrowse?itemId=${PHONE}&apiKey=AAECAwQFBgcICQoLDA0ODw`, '/v1/postbrowse', 403],
      [`/v1/postbrowse?itemId=${PHONE}`, '/v1/postbrowse', 403],
      [`/v1/items/${PHONE}?apiKey=${apiKey}`, '/v1/items/{itemId}', 200],
      [`/v1/items/999999?apiKey=${apiKey}`, '/v1/items/{itemId}', 400],
      [`/v1/items/${PHONE}?apiKey=not%20base64`, '/v1/items/{itemId}', 403],
      [`/v1/items?ids=${PHONE},31000007,1&apiKey=${apiKey}`, '/v1/items', 200],
      [`/v1/items?ids=abc&apiKey=${apiKey}`, '/v1/items', 400],
      [`/v1/items?ids=${PHONE}&apiKey=`, '/v1/items', 403],
      [`/v1/trending?apiKey=${apiKey}`, '/v1/trending', 200],
      [`/v1/trending?first=0&apiKey=${apiKey}`, '/v1/trending', 400],
      [`/v1/trending?category=Electronics&first=50&apiKey=${apiKey}`, '/v1/trending', 200],
      [`/v1/popular?kind=POST_BROWSE&first=3&apiKey=${apiKey}`, '/v1/popular', 200],
      [`/v1/popular?kind=SOMETHING&apiKey=${apiKey}`, '/v1/popular', 400],
      ['/v1/popular', '/v1/popular', 403],
      [`/v1/foryou?sessionId=s-1&apiKey=${apiKey}`, '/v1/foryou', 200],
      [`/v1/foryou?userId=u-1&count=3&inStock=true&apiKey=${apiKey}`, '/v1/foryou', 200],
      [`/v1/foryou?count=3&apiKey=${apiKey}`, '/v1/foryou', 400],
      ['/v1/foryou?sessionId=s-1', '/v1/foryou', 403],
    ];
    for (const [target, path, status] of cases) {
      const answer = await call('GET', target);
      expect(answer.status, target).toBe(status);
      expectDescribed(answer, path, 'get');
    }
    // the records carry real data, of many fields: the closed schema saw every one
    const records = (await call('GET', `/v1/postbrowse?itemId=${PHONE}&apiKey=${apiKey}`)).body as Json[];
    expect(records).toHaveLength(10);
    expect(new Set(records.flatMap((record) => Object.keys(record))).size).toBeGreaterThan(20);
  });

  it('the live recommender\'s twins: POST /v1/events and PUT /v1/items and their failures answer as described', async () => {
    const root = basicAuthorization('root', 'root-password');
    const view = { kind: 'view', itemId: PHONE, sessionId: 's-1', time: '2026-01-02T03:04:05Z' };
    const cases: [string, string, string | undefined, unknown, number, string][] = [
      ['POST', '/v1/events', root, [view, { kind: 'purchase', itemId: String(PHONE), orderId: 'o-1', time: Date.now() }], 200, gw.url],
      ['POST', '/v1/events', root, [{ kind: 'view', itemId: PHONE }], 400, gw.url],
      ['POST', '/v1/events', undefined, [view], 401, gw.url],
      ['POST', '/v1/events', alice, [view], 403, gw.url],
      ['POST', '/v1/events', root, Array.from({ length: 40 }, () => view), 413, limited.url],
      ['POST', '/v1/events', alice, Array.from({ length: 40 }, () => view), 403, limited.url],
      ['PUT', '/v1/items', root, [{ itemId: PHONE, name: 'Vireo Labs Phone 6', customerRating: '4.5' }], 200, gw.url],
      ['PUT', '/v1/items', root, [{ itemId: PHONE }], 400, gw.url],
      ['PUT', '/v1/items', alice, [{ itemId: PHONE, name: 'x' }], 403, gw.url],
      ['POST', '/v1/stats/impressions', root, [{ kind: 'FOR_YOU', variant: 'A', hour: Math.floor(Date.now() / 3_600_000), impressions: 2 }], 200, gw.url],
      ['POST', '/v1/stats/impressions', root, [{ kind: 'FOR_YOU', variant: 'A', hour: -1, impressions: 2 }], 400, gw.url],
      ['POST', '/v1/stats/impressions', undefined, [], 401, gw.url],
      ['POST', '/v1/stats/impressions', alice, [], 403, gw.url],
      ['POST', '/v1/stats/impressions', root, Array.from({ length: 40 }, () => ({ kind: 'FOR_YOU', variant: 'A', hour: 1, impressions: 1 })), 413, limited.url],
    ];
    for (const [method, path, auth, body, status, base] of cases) {
      const answer = await call(method, path, auth, body, base);
      expect(answer.status, `${method} ${path} ${status}`).toBe(status);
      expectDescribed(answer, path, method.toLowerCase());
    }
  }, 30_000);

  it('a key\'s creation over the body limit: 413 in the key interface\'s error body, as described', async () => {
    const tooLarge = await call('POST', '/api/v1/apikey', alice, { name: 'x'.repeat(4096) }, limited.url);
    expect(tooLarge.status).toBe(413);
    expectDescribed(tooLarge, '/api/v1/apikey', 'post');
  });

  it('429 from either interface, with Retry-After, as described', async () => {
    const bad = 'AAECAwQFBgcICQoLDA0ODw';
    // one failed authentication a minute per address: the second is refused before any lookup
    const first = await call('GET', '/api/v1/apikey', bad, undefined, limited.url);
    expect(first.status).toBe(401);
    const keys = await call('GET', '/api/v1/apikey', bad, undefined, limited.url);
    expect(keys.status).toBe(429);
    expectDescribed(keys, '/api/v1/apikey', 'get');
    const recs = await call('GET', `/v1/nbp?itemId=${PHONE}&apiKey=${bad}`, undefined, undefined, limited.url);
    expect(recs.status).toBe(429);
    expectDescribed(recs, '/v1/nbp', 'get');
  });
});
