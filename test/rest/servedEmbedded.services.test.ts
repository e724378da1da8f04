import { describe, expect, it } from 'vitest';
import { match } from '../helpers/matchers.js';
import { basicAuthorization } from '../../src/auth/authorization.js';
import { useEmbeddedGateway } from '../helpers/gateway.js';
import { storeKinds } from '../helpers/stores.js';

/**
 * The REST interfaces as the gateway serves them from its embedded backend, over HTTP, against
 * every row of upstream-facts.md (serveApiKeys.test.ts checks the handlers on fakes; this is the
 * real store and recommender behind them).
 */
const alice = basicAuthorization('alice', 'alice-password');
const bob = basicAuthorization('bob', 'bob-password', 'corp.example');
const root = basicAuthorization('root', 'root-password');
const PHONE = 31000005;

describe.each(storeKinds)('served REST interfaces, embedded backend on $name', (kind) => {
  const gw = useEmbeddedGateway(kind);

  async function call(method: string, path: string, auth?: string, body?: unknown) {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (auth !== undefined) headers.authorization = auth;
    const response = await fetch(`${gw.url}${path}`, { method, headers, body: body === undefined ? null : JSON.stringify(body) });
    const text = await response.text();
    return { status: response.status, headers: response.headers, body: JSON.parse(text) as unknown, text };
  }

  it('create 200 {ok,id,key}; list 200 sorted by name, {id,userId,name} and never the key; delete 200 DELETED', async () => {
    const a = await call('POST', '/api/v1/apikey', alice, { name: 'zeta' });
    const b = await call('POST', '/api/v1/apikey', alice, {});
    expect(a.status).toBe(200);
    expect(Object.keys(a.body as object).sort()).toEqual(['id', 'key', 'ok']);
    const { key, id } = a.body as { key: string; id: string };
    const list = await call('GET', '/api/v1/apikey', key);
    expect(list.status).toBe(200);
    const listed = list.body as { id: string; name: string; userId: string }[];
    expect(listed.map((k) => k.name)).toEqual(['key#1', 'zeta']);
    expect(listed[1]).toMatchObject({ id, name: 'zeta', userId: match.stringMatching(/^[0-9a-f-]{36}$/) });
    expect(list.text).not.toContain(key);
    const del = await call('DELETE', `/api/v1/apikey/${(b.body as { id: string }).id}`, key);
    expect([del.status, del.body]).toEqual([200, { result: 'DELETED', ok: true }]);
  });

  it('unknown id and another user’s key: the same 400 body; a non-UUID id: 404', async () => {
    const bobs = await call('POST', '/api/v1/apikey', bob, {});
    const foreign = (bobs.body as { id: string }).id;
    const notYours = await call('DELETE', `/api/v1/apikey/${foreign}`, alice);
    const unknown = await call('DELETE', '/api/v1/apikey/00000000-0000-4000-8000-000000000000', alice);
    expect([notYours.status, notYours.body]).toEqual([400, [{ id: '*', message: `API key not found: ${foreign}` }]]);
    expect([unknown.status, unknown.body]).toEqual([400, [{ id: '*', message: 'API key not found: 00000000-0000-4000-8000-000000000000' }]]);
    expect((await call('DELETE', '/api/v1/apikey/not-a-uuid', alice)).status).toBe(404);
    // the administrator may delete it
    expect((await call('DELETE', `/api/v1/apikey/${foreign}`, root)).status).toBe(200);
  });

  it('bad, unknown or deleted key and bad credentials: 401 with a JSON body; Basic and none carry WWW-Authenticate', async () => {
    const created = await call('POST', '/api/v1/apikey', alice, {});
    const { key, id } = created.body as { key: string; id: string };
    await call('DELETE', `/api/v1/apikey/${id}`, key);
    for (const [auth, challenge] of [
      [key, false],
      ['AAECAwQFBgcICQoLDA0ODw', false],
      [basicAuthorization('alice', 'wrong'), true],
      [undefined, true],
    ] as const) {
      const response = await call('GET', '/api/v1/apikey', auth);
      expect(response.status).toBe(401);
      expect(typeof response.body).toBe('object');
      expect(response.headers.get('www-authenticate') !== null).toBe(challenge);
    }
  });

  it("challenges a browser page's script (Sec-Fetch-Dest: empty) with Bearer, which opens no password box, on every route", async () => {
    for (const [method, path, body] of [['GET', '/api/v1/apikey', undefined], ['POST', '/api/v1/apikey', {}], ['POST', '/v1/events', []], ['PUT', '/v1/items', []]] as const) {
      for (const [dest, challenge] of [[undefined, 'Basic realm="recs-gateway"'], ['empty', 'Bearer realm="recs-gateway"'], ['EMPTY', 'Bearer realm="recs-gateway"'], ['document', 'Basic realm="recs-gateway"']] as const) {
        const headers: Record<string, string> = { 'content-type': 'application/json', ...(dest === undefined ? {} : { 'sec-fetch-dest': dest }) };
        const response = await fetch(`${gw.url}${path}`, { method, headers, body: body === undefined ? null : JSON.stringify(body) });
        await response.body?.cancel();
        expect([path, response.status, response.headers.get('www-authenticate')]).toEqual([path, 401, challenge]);
      }
    }
  });

  it("answers a key's creation over the body limit with 413 in the interface's error body, not GraphQL's", async () => {
    const response = await call('POST', '/api/v1/apikey', alice, { name: 'x'.repeat(1_100_000) });
    expect([response.status, response.body]).toEqual([413, [{ id: '*', message: 'Request body larger than 1048576 bytes' }]]);
  });

  it('validation errors: 400 [{id, message}]; another user’s create 403; an unknown username 400, not 500', async () => {
    const badName = await call('POST', '/api/v1/apikey', alice, { name: '-x' });
    expect(badName.status).toBe(400);
    expect(badName.body).toEqual([{ id: 'name', message: match.stringContaining('3 to 128 characters') }]);
    await call('POST', '/api/v1/apikey', alice, { name: 'taken' });
    expect((await call('POST', '/api/v1/apikey', alice, { name: 'taken' })).status).toBe(400);
    const forOther = await call('POST', '/api/v1/apikey', alice, { username: 'bob', userDomain: 'corp.example' });
    expect([forOther.status, forOther.body]).toEqual([403, [{ id: '*', message: 'Operation is not permitted' }]]);
    const ghost = await call('POST', '/api/v1/apikey', root, { username: 'ghost' });
    expect(ghost.status).toBe(400);
    expect(ghost.body).toEqual([{ id: 'username', message: 'User not found: ghost' }]);
  });

  /** POST /api/v1/apikey with a body as given, text and headers as sent: what a careless or hostile client may send. */
  async function createRaw(auth: string | undefined, body: string | Uint8Array | undefined, contentType?: string, extra: Record<string, string> = {}) {
    const headers: Record<string, string> = auth === undefined ? { ...extra } : { authorization: auth, ...extra };
    if (contentType !== undefined) headers['content-type'] = contentType;
    const response = await fetch(`${gw.url}/api/v1/apikey`, { method: 'POST', headers, body: body ?? null, signal: AbortSignal.timeout(10_000) });
    return { status: response.status, body: JSON.parse(await response.text()) as unknown };
  }
  const keyNames = async (auth: string) => ((await call('GET', '/api/v1/apikey', auth)).body as { name: string }[]).map((k) => k.name);

  it('a create body nested too deep or not JSON: 400 saying which, in the key interface\'s body, and no key', async () => {
    // the probe's body, valid JSON nested 200,000 deep, was told "must be a JSON object"
    const before = await keyNames(bob);
    const deep = `{"name":${'['.repeat(200_000)}${']'.repeat(200_000)}}`;
    expect(await createRaw(bob, deep, 'application/json')).toEqual({ status: 400, body: [{ id: '*', message: 'The request body nests deeper than 40 levels' }] });
    expect(await createRaw(bob, '{"name":', 'application/json')).toEqual({ status: 400, body: [{ id: '*', message: 'The request body is not valid JSON' }] });
    expect(await createRaw(bob, '[1]', 'application/json')).toEqual({ status: 400, body: [{ id: '*', message: 'The request body must be a JSON object' }] });
    expect(await keyNames(bob)).toEqual(before);
  });

  it('a create sent as anything but JSON: 415 unread, in the key interface\'s body, and no key; requests without a body need no Content-Type', async () => {
    // the probe: a text/plain POST, which any page can send cross-site with the Basic credentials a browser remembers, made a key
    const before = await keyNames(alice);
    const notJson = { status: 415, body: [{ id: '*', message: 'Send the body as JSON: Content-Type: application/json' }] };
    for (const [body, type] of [
      ['{}', 'text/plain'],
      ['{"name":"csrf-plain"}', 'text/plain;charset=UTF-8'],
      ['name=csrf-form', 'application/x-www-form-urlencoded'],
      ['--b\r\nContent-Disposition: form-data; name="name"\r\n\r\ncsrf-multi\r\n--b--\r\n', 'multipart/form-data; boundary=b'],
      ['{}', 'application/jsonp'],
      ['{}', 'application/json-seq'],
      ['{}', 'application/graphql-response+json'],
      [new TextEncoder().encode('{"name":"csrf-bytes"}'), undefined], // a body with no Content-Type at all
      [undefined, undefined],
    ] as const) {
      expect(await createRaw(alice, body, type), `${type}`).toEqual(notJson);
    }
    expect(await keyNames(alice)).toEqual(before);
    // credentials come first, as before: none or bad ones get 401, whatever the type
    expect((await createRaw(undefined, '{}', 'text/plain')).status).toBe(401);
    expect((await createRaw(basicAuthorization('alice', 'wrong'), '{}', 'text/plain')).status).toBe(401);
    // JSON, with a charset or none, in any case: taken
    // JSON, with parameters or none (an empty one, valid in RFC 9110), in any case: taken
    const json = [['json-bare', 'application/json'], ['json-utf8', 'Application/JSON; charset=UTF-8'], ['json-quoted', 'application/json;charset="utf-8"'], ['json-empty', 'application/json;'], ['json-version', 'application/json; version=2']];
    for (const [name, type] of json) {
      expect(await createRaw(alice, JSON.stringify({ name }), type), type).toMatchObject({ status: 200, body: { ok: true } });
    }
    expect(await keyNames(alice)).toEqual([...before, ...json.map(([name]) => name!)].sort());
    // compressed: refused unread, as the ingestion routes refuse it
    const gzip = await createRaw(alice, '{"name":"gzipped"}', 'application/json', { 'content-encoding': 'gzip' });
    expect(gzip.status).toBe(415);
    expect(JSON.stringify(gzip.body)).toContain('Content encodings');
    expect(await keyNames(alice)).not.toContain('gzipped');
    // a list and a delete take no body: with no Content-Type, or with the application/json api-keys.md has them carry, they are answered
    const { id } = (await createRaw(alice, '{"name":"to-delete"}', 'application/json')).body as { id: string };
    const list = await fetch(`${gw.url}/api/v1/apikey`, { headers: { authorization: alice }, signal: AbortSignal.timeout(10_000) });
    expect(list.status).toBe(200);
    const bare = await fetch(`${gw.url}/api/v1/apikey/${id}`, { method: 'DELETE', headers: { authorization: alice }, signal: AbortSignal.timeout(10_000) });
    expect([bare.status, await bare.json()]).toEqual([200, { result: 'DELETED', ok: true }]);
    const { id: other } = (await createRaw(alice, '{"name":"to-delete-2"}', 'application/json')).body as { id: string };
    expect((await call('DELETE', `/api/v1/apikey/${other}`, alice)).body).toEqual({ result: 'DELETED', ok: true });
  });

  it('postbrowse and nbp: at most 10 full records, most relevant first; items by id and by list', async () => {
    const { key } = (await call('POST', '/api/v1/apikey', alice, {})).body as { key: string };
    const q = (path: string) => call('GET', `${path}${path.includes('?') ? '&' : '?'}apiKey=${encodeURIComponent(key)}`);
    const pb = await q(`/v1/postbrowse?itemId=${PHONE}`);
    const nbp = await q(`/v1/nbp?itemId=${PHONE}`);
    for (const r of [pb, nbp]) {
      expect(r.status).toBe(200);
      const records = r.body as { itemId: number; name: string }[];
      expect(records).toHaveLength(10);
      expect(records.map((x) => x.itemId)).not.toContain(PHONE);
    }
    expect((nbp.body as { name: string }[])[0]!.name).toMatch(/Charger/);
    const one = await q(`/v1/items/${PHONE}`);
    expect(one.body).toMatchObject({ itemId: PHONE, name: 'Bramwick Deluxe Smartphone 100, Slate' });
    const many = await q(`/v1/items?ids=${PHONE},31000007,1`);
    expect((many.body as { items: { itemId: number }[] }).items.map((i) => i.itemId)).toEqual([PHONE, 31000007]);
    const tooMany = await q(`/v1/items?ids=${Array.from({ length: 21 }, (_, i) => 31000001 + i).join(',')}`);
    expect(tooMany.status).toBe(400);
    const unknown = await q('/v1/nbp?itemId=1');
    expect([unknown.status, unknown.body]).toEqual([400, { errors: [{ code: 4002, message: 'Invalid itemId' }] }]);
    const injected = await call('GET', `/v1/nbp?itemId=1%26apiKey%3Devil&apiKey=${encodeURIComponent(key)}`);
    expect(injected.status).toBe(400);
  });

  it('a bad, missing or deleted apiKey: 403 Account Inactive', async () => {
    for (const apiKey of ['', 'AAECAwQFBgcICQoLDA0ODw', 'not base64!']) {
      const response = await call('GET', `/v1/postbrowse?itemId=${PHONE}&apiKey=${encodeURIComponent(apiKey)}`);
      expect([response.status, response.body]).toEqual([403, { errors: [{ code: 403, message: 'Account Inactive' }] }]);
    }
    expect((await call('GET', `/v1/postbrowse?itemId=${PHONE}`)).status).toBe(403);
  });
});
