import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { match } from '../helpers/matchers.js';
import { parseItemRecord } from '../../src/model/itemRecord.js';
import { FakeKeyService, FakeRecsService, mountRest } from './helpers.js';
import type { TestServer } from './helpers.js';

let keys: FakeKeyService;
let server: TestServer;
const CHALLENGE = 'Basic realm="recs-gateway"';

beforeAll(async () => {
  keys = new FakeKeyService();
  server = await mountRest(keys, new FakeRecsService(parseItemRecord));
});
afterAll(() => server.close());
beforeEach(() => {
  keys.keys.length = 0;
});

async function call(method: string, path: string, init: { auth?: string; body?: string } = {}) {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (init.auth !== undefined) headers.authorization = init.auth;
  const res = await fetch(`${server.url}${path}`, { method, headers, body: init.body ?? null });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: JSON.parse(text) as unknown };
}

describe('POST /api/v1/apikey', () => {
  it('creates a key for the caller: 200 {ok,id,key}, a 22-character base64 key, default name key#1', async () => {
    const res = await call('POST', '/api/v1/apikey', { auth: keys.basic('alice'), body: '{}' });
    expect(res.status).toBe(200);
    const body = res.body as { ok: boolean; id: string; key: string };
    expect(body).toEqual({ ok: true, id: match.stringMatching(/^[0-9a-f-]{36}$/), key: match.stringMatching(/^[A-Za-z0-9+/]{22}$/) });
    expect(keys.keys[0]).toMatchObject({ id: body.id, name: 'key#1', userId: keys.users[0]?.id });
  });

  it('authenticates by the new key, bare or Bearer', async () => {
    const { body } = await call('POST', '/api/v1/apikey', { auth: keys.basic('alice'), body: '{"name":"ci-key"}' });
    const { key } = body as { key: string };
    for (const auth of [key, `Bearer ${key}`]) {
      const list = await call('GET', '/api/v1/apikey', { auth });
      expect(list.status).toBe(200);
      expect((list.body as { name: string }[]).map((k) => k.name)).toEqual(['ci-key']);
    }
  });

  it('answers 403 Operation is not permitted for another user, for a non-administrator', async () => {
    const res = await call('POST', '/api/v1/apikey', { auth: keys.basic('alice'), body: '{"username":"bob","userDomain":"corp"}' });
    expect(res).toMatchObject({ status: 403, body: [{ id: '*', message: 'Operation is not permitted' }] });
    expect(keys.keys).toHaveLength(0);
  });

  it('lets an administrator create for another user, and answers an unknown username with 400, not 500', async () => {
    const ok = await call('POST', '/api/v1/apikey', { auth: keys.basic('root'), body: '{"username":"bob","userDomain":"corp"}' });
    expect(ok.status).toBe(200);
    expect(keys.keys[0]?.userId).toBe(keys.users[1]?.id);
    const unknown = await call('POST', '/api/v1/apikey', { auth: keys.basic('root'), body: '{"username":"nobody"}' });
    expect(unknown).toMatchObject({ status: 400, body: [{ id: 'username', message: 'Unknown user: nobody' }] });
  });

  it('answers validation errors with 400 [{id: field, message}]', async () => {
    const bad = await call('POST', '/api/v1/apikey', { auth: keys.basic('alice'), body: '{"name":"x"}' });
    expect(bad).toMatchObject({ status: 400, body: [{ id: 'name' }] });
    await call('POST', '/api/v1/apikey', { auth: keys.basic('alice'), body: '{"name":"dup-name"}' });
    const dup = await call('POST', '/api/v1/apikey', { auth: keys.basic('alice'), body: '{"name":"dup-name"}' });
    expect(dup).toMatchObject({ status: 400, body: [{ id: 'name', message: 'Duplicate name: dup-name' }] });
    const typed = await call('POST', '/api/v1/apikey', { auth: keys.basic('alice'), body: '{"name":42}' });
    expect(typed).toMatchObject({ status: 400, body: [{ id: 'name', message: 'name must be a string' }] });
    const days = await call('POST', '/api/v1/apikey', { auth: keys.basic('alice'), body: '{"expiresInDays":-1}' });
    expect(days).toMatchObject({ status: 400, body: [{ id: 'expiresInDays' }] });
  });

  it('refuses a field a key\'s creation does not take, naming it and what it likely misspells, and makes no key', async () => {
    const fields = 'username, userDomain, name, expiresInDays, scopes, rateLimitPerSecond, dailyQuota';
    for (const [body, id, message] of [
      ['{"nmae":"x-typo"}', 'nmae', `unknown field: a key's creation takes only ${fields}; did you mean name?`],
      ['{"name":"ok-name","expiresInDay":5}', 'expiresInDay', `unknown field: a key's creation takes only ${fields}; did you mean expiresInDays?`],
      ['{"scope":"read"}', 'scope', `unknown field: a key's creation takes only ${fields}; did you mean scopes?`],
    ]) {
      expect(await call('POST', '/api/v1/apikey', { auth: keys.basic('alice'), body })).toMatchObject({ status: 400, body: [{ id, message }] });
    }
    expect(keys.keys).toEqual([]);
  });

  it.each(['[1,2]', '"text"', 'null', '{not json', ''])('answers a body that is not a JSON object (%s) with 400', async (body) => {
    const res = await call('POST', '/api/v1/apikey', { auth: keys.basic('alice'), body });
    expect(res).toMatchObject({ status: 400, body: [{ id: '*', message: 'The request body must be a JSON object' }] });
  });
});

describe('GET /api/v1/apikey', () => {
  it('lists the caller\'s keys only, sorted by name, {id,userId,name} and never a key value', async () => {
    for (const name of ['zeta', 'alpha', 'mid-key']) {
      await call('POST', '/api/v1/apikey', { auth: keys.basic('alice'), body: JSON.stringify({ name }) });
    }
    await call('POST', '/api/v1/apikey', { auth: keys.basic('bob'), body: '{"name":"bobs"}' });
    const res = await call('GET', '/api/v1/apikey', { auth: keys.basic('alice') });
    expect(res.status).toBe(200);
    const list = res.body as Record<string, unknown>[];
    expect(list.map((k) => k.name)).toEqual(['alpha', 'mid-key', 'zeta']);
    expect(list[0]).toEqual({
      id: match.any(String), userId: keys.users[0]?.id, name: 'alpha',
      createdAt: '2024-01-02T03:04:05.000Z', expiresAt: null, lastUsedAt: null, scopes: ['RECOMMENDATIONS_READ', 'EVENTS_WRITE', 'KEYS_MANAGE'],
      rateLimitPerSecond: null, dailyQuota: null,
    });
    expect(JSON.stringify(list)).not.toContain(keys.keys[0]?.key);
  });
});

describe('DELETE /api/v1/apikey/{id}', () => {
  it('deletes: 200 {"result":"DELETED","ok":true}, and the key stops working', async () => {
    const { body } = await call('POST', '/api/v1/apikey', { auth: keys.basic('alice'), body: '{}' });
    const { id, key } = body as { id: string; key: string };
    const res = await call('DELETE', `/api/v1/apikey/${id}`, { auth: keys.basic('alice') });
    expect(res).toEqual({ status: 200, headers: match.anything(), body: { result: 'DELETED', ok: true } });
    expect((await call('GET', '/api/v1/apikey', { auth: key })).status).toBe(401);
  });

  it('answers an unknown id and another user\'s key alike: 400 API key not found', async () => {
    const { body } = await call('POST', '/api/v1/apikey', { auth: keys.basic('bob'), body: '{}' });
    const { id } = body as { id: string };
    const unknownId = '00000000-0000-4000-8000-000000000000';
    const unknown = await call('DELETE', `/api/v1/apikey/${unknownId}`, { auth: keys.basic('alice') });
    const notYours = await call('DELETE', `/api/v1/apikey/${id}`, { auth: keys.basic('alice') });
    expect(unknown).toMatchObject({ status: 400, body: [{ id: '*', message: `API key not found: ${unknownId}` }] });
    expect(notYours).toMatchObject({ status: 400, body: [{ id: '*', message: `API key not found: ${id}` }] });
    expect(keys.keys).toHaveLength(1);
  });

  it('answers a non-UUID id with 404, before anything is looked up', async () => {
    const before = keys.authenticateCalls;
    for (const id of ['abc', '1%27%20OR%201=1', 'a/b']) {
      const res = await call('DELETE', `/api/v1/apikey/${id}`, { auth: keys.basic('alice') });
      expect(res.status).toBe(404);
    }
    expect(keys.authenticateCalls).toBe(before);
  });
});

describe('authentication and methods', () => {
  it('answers missing credentials with 401, a JSON body and the Basic challenge', async () => {
    const res = await call('GET', '/api/v1/apikey');
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe(CHALLENGE);
    expect(res.body).toEqual([{ id: '*', message: match.any(String) }]);
  });

  it('challenges bad Basic credentials, but not a bad key', async () => {
    const basic = await call('GET', '/api/v1/apikey', { auth: `Basic ${Buffer.from('alice:wrong').toString('base64')}` });
    expect(basic.status).toBe(401);
    expect(basic.headers.get('www-authenticate')).toBe(CHALLENGE);
    for (const auth of ['AAECAwQFBgcICQoLDA0ODw', 'Bearer AAECAwQFBgcICQoLDA0ODw', 'not a key!']) {
      const res = await call('GET', '/api/v1/apikey', { auth });
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toBeNull();
    }
  });

  it('answers a wrong method with 405 and Allow', async () => {
    const put = await call('PUT', '/api/v1/apikey', { auth: keys.basic('alice') });
    expect(put.status).toBe(405);
    expect(put.headers.get('allow')).toBe('GET, POST');
    const get = await call('GET', '/api/v1/apikey/00000000-0000-4000-8000-000000000000', { auth: keys.basic('alice') });
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('DELETE, PATCH');
  });

  it('leaves other paths alone (null: the next handler decides)', async () => {
    const res = await call('GET', '/api/v1/apikeys');
    expect(res).toMatchObject({ status: 404, body: { message: 'not found' } });
  });
});
