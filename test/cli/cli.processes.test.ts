import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { basicAuthorization } from '../../src/auth/authorization.js';
import { gql, runCli, startServe, type ServeProcess } from '../helpers/processes.js';
import { itemsFrom, storeCatalogue } from '../helpers/liveEvents.js';
import { DATABASE_URL, dropSchema, tempDir, testSchema } from '../helpers/stores.js';

const CREATE = `mutation { createApiKey(input: { name: "from-cli-test" }) { key id } }`;
const LIST = `{ apiKeys { id name } }`;

describe('the recs-gateway command line', () => {
  const dirs: { remove(): void }[] = [];
  const servers: ServeProcess[] = [];
  const schemas: string[] = [];
  const dataDir = () => {
    const d = tempDir();
    dirs.push(d);
    return d.dir;
  };
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()));
    for (const d of dirs) d.remove();
    for (const s of schemas) await dropSchema(s);
  });

  it('prints help for each command', async () => {
    const top = await runCli(['--help'], {});
    expect(top.code).toBe(0);
    expect(top.stdout).toContain('user add <username>');
    const add = await runCli(['user', 'add', '--help'], {});
    expect(add.stdout).toContain('--domain <domain>');
    const unknown = await runCli(['frobnicate'], {});
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('Unknown command: frobnicate');
  });

  it('prints its version, which a probe found reported as an unknown command', async () => {
    const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
    for (const flag of ['--version', '-v']) {
      const answer = await runCli([flag], {});
      expect([answer.code, answer.stdout, answer.stderr]).toEqual([0, `recs-gateway ${version}\n`, '']);
    }
  });

  it('says in one line that the build is missing, where an install skipped it', () => {
    // bin/ as installed, with no dist/ beside it
    const root = dataDir();
    mkdirSync(path.join(root, 'bin'));
    copyFileSync(new URL('../../bin/recs-gateway.js', import.meta.url), path.join(root, 'bin', 'recs-gateway.js'));
    writeFileSync(path.join(root, 'package.json'), '{"type":"module"}');
    const run = spawnSync(process.execPath, [path.join(root, 'bin', 'recs-gateway.js'), '--help'], { encoding: 'utf8', timeout: 20_000 });
    expect(run.status).toBe(1);
    expect(run.stderr).toBe('recs-gateway: the build is missing (dist/main.js): run `npm run build` (npm install runs it, unless scripts are off)\n');
  });

  it('stops a bad configuration with a clear message and no secret', async () => {
    const result = await runCli(['serve'], { PORT: 'eighty', DATABASE_URL: 'mysql://u:hunter2@h/db' });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('PORT must be a whole number from 0 to 65535, got "eighty"');
    expect(result.stderr).toContain('DATABASE_URL must be a URL starting with postgres:// or postgresql://');
    expect(result.stderr).not.toContain('hunter2');
  });

  it('adds a user with the password from stdin, and refuses a duplicate', async () => {
    const DATA_DIR = dataDir();
    const added = await runCli(['user', 'add', 'carol', '--domain', 'corp.example'], { DATA_DIR }, 'carol-password\n');
    expect(added.stderr).toBe('');
    expect(added.stdout).toMatch(/^Created user carol@corp\.example \([0-9a-f-]{36}\)\n$/);
    const again = await runCli(['user', 'add', 'carol', '--domain', 'corp.example', '--password', 'whatever1'], { DATA_DIR });
    expect(again.code).toBe(2);
    expect(again.stderr).toContain('the user carol@corp.example exists');

    // a catalogue of its own: on an empty store the start builds the demo shop, which is not the subject here
    await storeCatalogue({ kind: 'sqlite', dataDir: DATA_DIR }, itemsFrom(1, 12));
    const server = await startServe({ DATA_DIR });
    servers.push(server);
    // users existed: no first-start administrator
    expect(server.stderr()).not.toContain('administrator');
    const created = await gql(server.url, CREATE, {}, { authorization: basicAuthorization('carol', 'carol-password', 'corp.example') });
    expect(created.body.data?.createApiKey?.key).toMatch(/^[A-Za-z0-9+/]{22}$/);
  });

  it('creates the administrator on the very first start, shows its password once, and keeps keys across restarts', async () => {
    const DATA_DIR = dataDir();
    const first = await startServe({ DATA_DIR });
    const password = /password\n\n {4}(\S+)\n/.exec(first.stderr())?.[1];
    expect(password).toBeDefined();
    const admin = { authorization: basicAuthorization('admin', password!) };
    const created = await gql(first.url, CREATE, {}, admin);
    const { key, id } = created.body.data!.createApiKey as { key: string; id: string };
    expect(await first.stop()).toBe(0);

    const second = await startServe({ DATA_DIR, LOG_LEVEL: 'debug' });
    servers.push(second);
    expect(second.stderr()).not.toContain(password);
    const listed = await gql(second.url, LIST, {}, { authorization: key });
    expect(listed.body.data).toEqual({ apiKeys: [{ id, name: 'from-cli-test' }] });
    await gql(second.url, LIST, {}, { authorization: basicAuthorization('admin', 'a-wrong-password') });
    await gql(second.url, LIST, {}, { authorization: `Bearer ${key}x` });
    // nothing secret in the logs, even at debug level and on failures
    const logs = second.stdout() + second.stderr() + first.stdout();
    expect(logs.length).toBeGreaterThan(0);
    for (const secret of [key, password!, 'a-wrong-password', admin.authorization]) expect(logs).not.toContain(secret);
  });

  it('lets two processes on one PostgreSQL see each other’s keys', async () => {
    const schema = testSchema();
    schemas.push(schema);
    const url = new URL(DATABASE_URL);
    url.searchParams.set('options', `-c search_path=${schema}`);
    // the store creates the schema's tables; the schema itself must exist for search_path
    const { default: pg } = await import('pg');
    const client = new pg.Client({ connectionString: DATABASE_URL });
    await client.connect();
    await client.query(`CREATE SCHEMA ${schema}`);
    await client.end();

    const env = { DATABASE_URL: url.toString(), DATA_DIR: dataDir() };
    const added = await runCli(['user', 'add', 'dana', '--password', 'dana-password'], env);
    expect(added.code).toBe(0);
    await storeCatalogue({ kind: 'postgres', connectionString: DATABASE_URL, schema }, itemsFrom(1, 12));
    const [a, b] = await Promise.all([startServe(env), startServe(env)]);
    servers.push(a, b);
    const created = await gql(a.url, CREATE, {}, { authorization: basicAuthorization('dana', 'dana-password') });
    const { key, id } = created.body.data!.createApiKey as { key: string; id: string };
    const seen = await gql(b.url, LIST, {}, { authorization: key });
    expect(seen.body.data).toEqual({ apiKeys: [{ id, name: 'from-cli-test' }] });
    await gql(b.url, `mutation($id: ID!) { deleteApiKey(id: $id) { ok } }`, { id }, { authorization: key });
    expect((await gql(a.url, LIST, {}, { authorization: key })).status).toBe(401);
  });
});
