import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuthorization } from '../../../../src/auth/authorization.js';
import { loadConfig } from '../../../../src/config/env.js';
import { createGateway, type Gateway } from '../../../../src/http/server.js';
import { createLogger } from '../../../../src/logger.js';
import { codeOf, embeddedWithUsers, graphqlClient, type TestGateway } from '../../../helpers/gateway.js';
import { match } from '../../../helpers/matchers.js';
import { storeKinds } from '../../../helpers/stores.js';

// Issue 41, finding 8: an administrator's createApiKey for a username holding a NUL answered 500
// on PostgreSQL (whose text takes no NUL), with a stack trace in the log. On SQLite and PostgreSQL
// alike: BAD_USER_INPUT (REST: 400 in the key interface's body), nothing logged.

const root = basicAuthorization('root', 'root-password');
const CREATE = 'mutation($u: String!, $d: String) { createApiKey(input: { username: $u, userDomain: $d, name: "for-them" }) { apiKey { userId } } }';
const LIST = 'query($u: String!) { apiKeys(username: $u) { id } }';

describe.each(storeKinds)('a username with a NUL or another control character ($name store)', (kind) => {
  let gateway: Gateway;
  let gql: TestGateway['gql'];
  let url: string;
  let dispose: () => Promise<void>;
  const lines: { level: number; msg: string; err?: { stack?: string } }[] = [];

  beforeAll(async () => {
    const opened = await kind.open();
    dispose = opened.dispose;
    const destination = new PassThrough();
    destination.on('data', (chunk: Buffer) => {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) lines.push(JSON.parse(line) as (typeof lines)[number]);
    });
    gateway = await createGateway({
      config: loadConfig({ DATA_DIR: '/nonexistent', AUTH_FAILURES_PER_MINUTE: '0', RATE_LIMIT_RPS: '0' }),
      backend: await embeddedWithUsers(opened.store),
      log: createLogger({ level: 'info', destination }),
    });
    url = await gateway.listen(0, '127.0.0.1');
    gql = graphqlClient(url);
  }, 60_000);
  afterAll(async () => {
    await gateway?.stop().catch(() => undefined);
    await dispose?.();
  });

  it('is BAD_USER_INPUT on username, over GraphQL and REST, with nothing in the log; a real username still works', async () => {
    for (const [username, domain] of [['ali\0ce', null], ['alice', 'corp\0example'], ['ali\u0007ce', null], ['\0', null]] as const) {
      const created = await gql(CREATE, { u: username, d: domain }, { authorization: root });
      expect([codeOf(created), created.body.errors?.[0]?.extensions?.field]).toEqual(['BAD_USER_INPUT', domain === null ? 'username' : 'userDomain']);
      const listed = await gql(LIST, { u: username }, { authorization: root });
      expect(codeOf(listed)).toBe(domain === null ? 'BAD_USER_INPUT' : undefined);
      const rest = await fetch(`${url}/api/v1/apikey`, {
        method: 'POST',
        headers: { authorization: root, 'content-type': 'application/json' },
        body: JSON.stringify({ username, ...(domain === null ? {} : { userDomain: domain }), name: 'for-them' }),
      });
      expect(rest.status).toBe(400);
      expect(await rest.json()).toEqual([{ id: domain === null ? 'username' : 'userDomain', message: match.stringContaining('control character') }]);
    }
    expect(lines.filter((line) => line.level >= 50 || line.err !== undefined)).toEqual([]);
    // the administrator still creates a key for alice, and lists hers
    const created = await gql<{ createApiKey: { apiKey: { userId: string } } }>(CREATE, { u: 'alice', d: null }, { authorization: root });
    expect(created.body.errors).toBeUndefined();
    expect(created.body.data!.createApiKey.apiKey.userId).toEqual(expect.any(String));
    expect(codeOf(await gql(LIST, { u: 'alice' }, { authorization: root }))).toBeUndefined();
  }, 30_000);
});
