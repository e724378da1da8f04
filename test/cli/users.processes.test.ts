import { afterAll, describe, expect, it } from 'vitest';
import { basicAuthorization } from '../../src/auth/authorization.js';
import { gql, runCli, startServe, type ServeProcess } from '../helpers/processes.js';
import { restServeEnv, startUpstream } from '../helpers/harness.js';
import { sharedRecsStoreKinds, tempDir } from '../helpers/stores.js';

const CREATE = `mutation { createApiKey(input: { name: "phone" }) { key } }`;
const VIEWER = `{ apiKeys { name } }`;

describe('recs-gateway user passwd, remove and list', () => {
  const dirs: { remove(): void }[] = [];
  const servers: ServeProcess[] = [];
  const disposers: (() => Promise<void>)[] = [];
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()));
    for (const d of dirs) d.remove();
    for (const dispose of disposers) await dispose();
  });
  const dataDir = (): string => {
    const d = tempDir();
    dirs.push(d);
    return d.dir;
  };
  const status = async (url: string, authorization: string): Promise<number> => (await gql(url, VIEWER, {}, { authorization })).status;

  it('changes a password and removes a user at once for a running gateway (SQLite)', async () => {
    const env = { DATA_DIR: dataDir() };
    expect((await runCli(['user', 'add', 'root', '--admin', '--password', 'root-password'], env)).code).toBe(0);
    expect((await runCli(['user', 'add', 'erin', '--domain', 'shop.example'], env, 'erin-password\n')).code).toBe(0);
    const server = await startServe(env);
    servers.push(server);
    const old = basicAuthorization('erin', 'erin-password', 'shop.example');
    const created = await gql(server.url, CREATE, {}, { authorization: old });
    const key = (created.body.data!.createApiKey as { key: string }).key;
    expect(await status(server.url, old)).toBe(200);

    const changed = await runCli(['user', 'passwd', 'erin', '--domain', 'shop.example'], env, 'erin-new-password\n');
    expect([changed.code, changed.stdout, changed.stderr]).toEqual([0, 'Changed the password of erin@shop.example\n', '']);
    // the old password was verified and remembered: the store's change ends that at once
    expect(await status(server.url, old)).toBe(401);
    expect(await status(server.url, basicAuthorization('erin', 'erin-new-password', 'shop.example'))).toBe(200);
    expect(await status(server.url, key)).toBe(200);

    const listed = await runCli(['user', 'list'], env);
    expect(listed.code).toBe(0);
    expect(listed.stdout.split('\n')[0]).toMatch(/^NAME\s+ROLE\s+CREATED\s+ID$/);
    expect(listed.stdout).toMatch(/\nerin@shop\.example\s+user\s+\d{4}-\d\d-\d\dT[^ ]+Z\s+[0-9a-f-]{36}\n/);
    expect(listed.stdout).toMatch(/\nroot\s+admin\s/);
    expect(listed.stdout).not.toMatch(/scrypt|\$|password/i);

    const removed = await runCli(['user', 'remove', 'erin', '--domain', 'shop.example'], env);
    expect([removed.code, removed.stdout]).toEqual([0, 'Removed erin@shop.example and 1 key\n']);
    expect(await status(server.url, key)).toBe(401);
    expect(await status(server.url, basicAuthorization('erin', 'erin-new-password', 'shop.example'))).toBe(401);
    expect((await runCli(['user', 'list'], env)).stdout).not.toContain('erin');
  });

  it('refuses careless calls with one line and changes nothing', async () => {
    const env = { DATA_DIR: dataDir() };
    expect((await runCli(['user', 'add', 'solo', '--admin', '--password', 'solo-password'], env)).code).toBe(0);
    const cases: [string[], string | undefined, RegExp][] = [
      [['user', 'passwd', 'nobody'], 'long-enough\n', /^no user nobody\n$/],
      [['user', 'passwd', 'solo'], 'short\n', /^a password has at least 8 characters\n$/],
      [['user', 'passwd', 'solo'], '', /^no password given: write it to standard input\n$/],
      [['user', 'remove', 'solo'], undefined, /^solo is the only administrator: add another/],
      [['user', 'remove', 'nobody\u0001'], undefined, /^no user nobody/],
    ];
    for (const [args, input, message] of cases) {
      const run = await runCli(args, env, input);
      expect(run.code, args.join(' ')).toBe(2);
      expect(run.stderr).toMatch(message);
      expect(run.stderr).not.toMatch(/\n\s+at /);
    }
    // a password in argv would show in `ps`: passwd takes it from standard input only
    for (const args of [['user', 'passwd', 'solo', '--password', 'in-argv-1'], ['user', 'list', 'extra'], ['user', 'remove'], ['user', 'frob']]) {
      const run = await runCli(args, env);
      expect(run.code, args.join(' ')).toBe(2);
      expect(run.stderr).toContain('Usage: recs-gateway user');
    }
    const server = await startServe(env);
    servers.push(server);
    expect(await status(server.url, basicAuthorization('solo', 'solo-password'))).toBe(200);
  });

  it('ends a changed password and a removed user on every replica of one PostgreSQL store', async () => {
    const shared = await sharedRecsStoreKinds('users', {}).find((kind) => kind.name === 'postgres')!.open();
    disposers.push(shared.dispose);
    const env = shared.env(0);
    expect((await runCli(['user', 'add', 'root', '--admin', '--password', 'root-password'], env)).code).toBe(0);
    expect((await runCli(['user', 'add', 'finn', '--password', 'finn-password'], env)).code).toBe(0);
    const [a, b] = await Promise.all([startServe(env), startServe(shared.env(1))]);
    servers.push(a, b);
    const old = basicAuthorization('finn', 'finn-password');
    const key = ((await gql(a.url, CREATE, {}, { authorization: old })).body.data!.createApiKey as { key: string }).key;
    for (const replica of [a, b]) expect([await status(replica.url, old), await status(replica.url, key)]).toEqual([200, 200]);

    expect((await runCli(['user', 'passwd', 'finn'], env, 'finn-new-password\n')).code).toBe(0);
    for (const replica of [a, b]) {
      expect(await status(replica.url, old)).toBe(401);
      expect(await status(replica.url, basicAuthorization('finn', 'finn-new-password'))).toBe(200);
    }
    expect((await runCli(['user', 'remove', 'finn'], env)).stdout).toBe('Removed finn and 1 key\n');
    for (const replica of [a, b]) {
      expect(await status(replica.url, key)).toBe(401);
      expect(await status(replica.url, basicAuthorization('finn', 'finn-new-password'))).toBe(401);
    }
  });

  it('ends them through a REST-mode front that asks the key service each time (AUTH_CACHE_TTL_MS=0)', async () => {
    const upstream = await startUpstream();
    disposers.push(() => upstream.stop());
    const front = await startServe({ ...restServeEnv(upstream, 'unused'), REDIS_URL: '', AUTH_CACHE_TTL_MS: '0' });
    servers.push(front);
    const old = basicAuthorization('bob', upstream.bob.password);
    expect([await status(front.url, old), await status(front.url, upstream.bob.key)]).toEqual([200, 200]);
    const env = { DATA_DIR: upstream.dataDir };
    expect((await runCli(['user', 'passwd', 'bob'], env, 'bob-new-password\n')).code).toBe(0);
    expect(await status(front.url, old)).toBe(401);
    expect(await status(front.url, basicAuthorization('bob', 'bob-new-password'))).toBe(200);
    expect((await runCli(['user', 'remove', 'bob'], env)).code).toBe(0);
    expect(await status(front.url, upstream.bob.key)).toBe(401);
    expect(await status(front.url, basicAuthorization('bob', 'bob-new-password'))).toBe(401);
  });
});
