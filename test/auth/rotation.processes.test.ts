import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuthorization } from '../../src/auth/authorization.js';
import { firstAdmin, gql, runCli, startServe, type ServeProcess } from '../helpers/processes.js';
import { sharedRecsStoreKinds, type SharedRecsStore } from '../helpers/stores.js';

/**
 * rotateApiKey across two gateway processes on one PostgreSQL store: the new value works at once
 * on both, the old one until its grace period ends and then on neither within a second.
 */
const ROTATE = `mutation($id: ID!, $grace: Int) { rotateApiKey(id: $id, gracePeriodSeconds: $grace) { ok id key apiKey { id name scopes } } }`;
const CREATE = `mutation($input: CreateApiKeyInput!) { createApiKey(input: $input) { id key } }`;
const VIEWER = '{ viewer { authenticatedBy } }';
const postgres = sharedRecsStoreKinds('rotation', { REDIS_URL: '', OTEL_EXPORTER_OTLP_ENDPOINT: '' }).find((kind) => kind.name === 'postgres')!;
const alice = basicAuthorization('alice', 'alice-password');

describe('rotating a key, two gateway processes on one PostgreSQL store', () => {
  let store: SharedRecsStore;
  let one: ServeProcess;
  let two: ServeProcess;
  let admin: string;

  beforeAll(async () => {
    store = await postgres.open();
    // one after the other: the first makes the administrator and prints its password
    one = await startServe(store.env(0));
    two = await startServe(store.env(1));
    admin = firstAdmin(one);
    expect((await runCli(['user', 'add', 'alice', '--password', 'alice-password'], store.env(0))).code).toBe(0);
  }, 120_000);
  afterAll(async () => {
    await Promise.all([one?.stop(), two?.stop()]);
    await store?.dispose();
  });

  async function newKey(name: string, scopes?: string[]): Promise<{ id: string; key: string }> {
    const created = await gql(one.url, CREATE, { input: { name, ...(scopes ? { scopes } : {}) } }, { authorization: admin });
    expect(created.body.errors).toBeUndefined();
    return created.body.data!.createApiKey as unknown as { id: string; key: string };
  }

  const works = async (url: string, key: string): Promise<number> => (await gql(url, VIEWER, {}, { authorization: key })).status;

  it('keeps the old value working through a short grace period, then stops it on both within a second', async () => {
    const { id, key: old } = await newKey('short-grace', ['RECOMMENDATIONS_READ', 'KEYS_MANAGE']);
    // each replica has verified the old value, so a stale memory of it would show
    for (const url of [one.url, two.url]) expect(await works(url, old)).toBe(200);
    const rotated = await gql(one.url, ROTATE, { id, grace: 2 }, { authorization: admin });
    expect(rotated.body.errors).toBeUndefined();
    const payload = rotated.body.data!.rotateApiKey as unknown as { ok: boolean; id: string; key: string; apiKey: { id: string; name: string; scopes: string[] } };
    expect(payload).toMatchObject({ ok: true, id, apiKey: { id, name: 'short-grace', scopes: ['RECOMMENDATIONS_READ', 'KEYS_MANAGE'] } });
    expect(payload.key).not.toBe(old);
    const ended = Date.now() + 2000;
    for (const url of [one.url, two.url]) {
      expect(await works(url, payload.key)).toBe(200);
      expect(await works(url, old)).toBe(200);
    }
    // the rotated key keeps its scopes: the new value is as narrow as the old
    const events = await gql(two.url, 'mutation { recordEvents(events: [{ kind: VIEW, itemId: 1, sessionId: "r" }]) { accepted } }', {}, { authorization: payload.key });
    expect(events.body.errors).toMatchObject([{ extensions: { code: 'FORBIDDEN', scope: 'EVENTS_WRITE' } }]);
    for (const url of [one.url, two.url]) {
      await expect.poll(() => works(url, old), { timeout: Math.max(0, ended - Date.now()) + 1000, interval: 100 }).toBe(401);
    }
    expect(Date.now() - ended).toBeLessThan(2000);
    for (const url of [one.url, two.url]) expect(await works(url, payload.key)).toBe(200);
  });

  it('stops the old value at once on both with a grace period of 0, also through the REST twin', async () => {
    const { id, key: old } = await newKey('no-grace');
    for (const url of [one.url, two.url]) expect(await works(url, old)).toBe(200);
    const response = await fetch(`${two.url}/api/v1/apikey/${id}/rotate`, {
      method: 'POST',
      headers: { authorization: admin, 'content-type': 'application/json' },
      body: JSON.stringify({ gracePeriodSeconds: 0 }),
    });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { ok: boolean; id: string; key: string; apiKey: { name: string } };
    expect(body).toMatchObject({ ok: true, id, apiKey: { name: 'no-grace' } });
    for (const url of [two.url, one.url]) {
      await expect.poll(() => works(url, old), { timeout: 1000, interval: 50 }).toBe(401);
      expect(await works(url, body.key)).toBe(200);
    }
  });

  it('keeps a day of grace by default, and refuses a grace period out of bounds', async () => {
    const { id, key: old } = await newKey('default-grace');
    const rotated = await gql(one.url, `mutation($id: ID!) { rotateApiKey(id: $id) { key } }`, { id }, { authorization: admin });
    expect(rotated.body.errors).toBeUndefined();
    expect(await works(two.url, old)).toBe(200);
    for (const grace of [-1, 30 * 86_400 + 1]) {
      const refused = await gql(one.url, ROTATE, { id, grace }, { authorization: admin });
      expect(refused.body.errors).toMatchObject([{ extensions: { code: 'BAD_USER_INPUT', field: 'gracePeriodSeconds' } }]);
    }
    const rest = await fetch(`${one.url}/api/v1/apikey/${id}/rotate`, {
      method: 'POST', headers: { authorization: admin, 'content-type': 'application/json' }, body: '{"gracePeriodSeconds":"soon"}',
    });
    expect(rest.status).toBe(400);
    expect(await rest.json()).toEqual([{ id: 'gracePeriodSeconds', message: 'gracePeriodSeconds must be a whole number of seconds' }]);
  });

  it("answers another user's key and an unknown id alike: NOT_FOUND", async () => {
    const { id } = await newKey('admins-own');
    const stranger = await gql(two.url, ROTATE, { id, grace: 0 }, { authorization: alice });
    expect(stranger.body.errors).toMatchObject([{ extensions: { code: 'NOT_FOUND' } }]);
    const unknown = await gql(two.url, ROTATE, { id: '00000000-0000-4000-8000-000000000000', grace: 0 }, { authorization: alice });
    expect(unknown.body.errors).toMatchObject([{ extensions: { code: 'NOT_FOUND' } }]);
    expect(stranger.body.errors![0]!).toMatchObject({ message: `API key not found: ${id}` });
  });
});
