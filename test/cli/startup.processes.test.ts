import { once } from 'node:events';
import { chmodSync, existsSync, statSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { RecsStore } from '../../src/backends/embedded/store.js';
import { freePort } from '../helpers/redis.js';
import { runCli, startServe, type RunResult, type ServeProcess } from '../helpers/processes.js';
import { itemsFrom, storeCatalogue } from '../helpers/liveEvents.js';
import { runNode } from '../helpers/runNode.js';
import { DATABASE_URL, tempDir } from '../helpers/stores.js';

/** One line on stderr, naming the problem, with no stack trace: what every failed start prints. */
function expectOneLine(result: RunResult, pattern: RegExp): void {
  expect(result.code).toBe(1);
  expect(result.stderr).toMatch(/^recs-gateway: [^\n]+\n$/);
  expect(result.stderr).toMatch(pattern);
  expect(result.stderr).not.toMatch(/\n\s+at /);
}

const mode = (file: string): number => statSync(file).mode & 0o777;

describe('a start that cannot succeed', () => {
  const dirs: { dir: string; remove(): void }[] = [];
  const servers: ServeProcess[] = [];
  const dataDir = () => {
    const d = tempDir();
    dirs.push(d);
    return d.dir;
  };
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()));
    for (const d of dirs) d.remove();
  });

  it('stops on a busy port with one line, before opening a store or building the model', async () => {
    const busy = net.createServer();
    busy.listen(0, '127.0.0.1');
    await once(busy, 'listening');
    const { port } = busy.address() as net.AddressInfo;
    try {
      const DATA_DIR = path.join(dataDir(), 'data');
      const result = await runCli(['serve'], { PORT: String(port), HOST: '127.0.0.1', DATA_DIR, LOG_LEVEL: 'info' });
      expectOneLine(result, new RegExp(`port ${port} is already in use \\(set PORT`));
      // no slow work was done: no store made, no model built
      expect(existsSync(DATA_DIR)).toBe(false);
      expect(result.stdout).not.toContain('recommender');
    } finally {
      busy.close();
    }
  });

  it('names an unusable PostgreSQL in one line, never its password', async () => {
    const closed = await freePort();
    const cases: [string, RegExp][] = [
      [`postgres://postgres:hunter2@127.0.0.1:${closed}/test`, new RegExp(`PostgreSQL at 127\\.0\\.0\\.1:${closed}/test \\(DATABASE_URL\\): connection refused`)],
      [withDatabase(DATABASE_URL, 'recs_no_such_database', 'hunter2'), /database "recs_no_such_database" does not exist/],
      [withUser(DATABASE_URL, 'recs_no_such_role', 'hunter2'), /role "recs_no_such_role" does not exist|password authentication failed/],
    ];
    for (const [url, pattern] of cases) {
      const result = await runCli(['serve'], { PORT: '0', DATA_DIR: dataDir(), DATABASE_URL: url });
      expectOneLine(result, pattern);
      expect(result.stderr + result.stdout).not.toContain('hunter2');
    }
  });

  it('stops on a search_path naming a missing schema as soon as on a missing database', async () => {
    const database = new URL(DATABASE_URL).pathname.slice(1);
    const timed = async (url: string): Promise<[RunResult, number]> => {
      const started = performance.now();
      const result = await runCli(['serve'], { PORT: '0', DATA_DIR: dataDir(), DATABASE_URL: url });
      return [result, performance.now() - started];
    };
    const [noDatabase, noDatabaseMs] = await timed(withDatabase(DATABASE_URL, 'recs_no_such_database', 'hunter2'));
    expectOneLine(noDatabase, /database "recs_no_such_database" does not exist/);
    // a search_path naming a schema nobody created (the README's `?options=-c search_path=shop_a`)
    const [noSchema, noSchemaMs] = await timed(withSearchPath(withDatabase(DATABASE_URL, database, 'hunter2'), 'recs_no_such_schema'));
    expectOneLine(noSchema, /no schema has been selected to create in: the schema DATABASE_URL's search_path names does not exist; create it first \(CREATE SCHEMA <name>\)$/m);
    expect(noSchema.stderr + noSchema.stdout).not.toContain('hunter2');
    // a connection left in the key store's pool held the process for pg's 10 s idle timeout
    expect(noSchemaMs).toBeLessThan(noDatabaseMs + 5_000);
  });

  // the probe: at the default LOG_LEVEL (info), "recs-gateway listening" came before the one line
  it('prints that one line alone at the default log level: no "listening" line before it', async () => {
    const closed = await freePort();
    const unreachable = await runCli(['serve'], { PORT: '0', DATA_DIR: dataDir(), DATABASE_URL: `postgres://127.0.0.1:${closed}/x`, LOG_LEVEL: 'info' });
    expect(unreachable.code).toBe(1);
    expect(unreachable.stdout + unreachable.stderr).toBe(`recs-gateway: cannot use PostgreSQL at 127.0.0.1:${closed}/x (DATABASE_URL): connection refused (is PostgreSQL running there?)\n`);

    const damaged = dataDir();
    expect((await runCli(['user', 'add', 'ida', '--password', 'ida-password'], { DATA_DIR: damaged })).code).toBe(0);
    writeFileSync(path.join(damaged, 'recs.db'), 'these are not the bytes of an SQLite database '.repeat(100));
    const result = await runCli(['serve'], { PORT: '0', DATA_DIR: damaged, LOG_LEVEL: 'info' });
    expect(result.code).toBe(1);
    expect(result.stdout + result.stderr).toMatch(new RegExp(`^recs-gateway: cannot open ${damaged}/recs\\.db: not an SQLite database[^\n]*\n$`));
  });

  // the probe: a model load that failed after the stores opened printed "recs-gateway listening",
  // then the failure as a bare JSON.parse message
  it('prints one line alone, naming the store, when the model cannot be loaded from a store that opened', async () => {
    const dir = dataDir();
    expect((await runCli(['user', 'add', 'una', '--password', 'una-password'], { DATA_DIR: dir })).code).toBe(0);
    // a store that opens (a real SQLite file with its tables) holding a record that is not JSON
    await RecsStore.open(dir).close();
    const db = new Database(path.join(dir, 'recs.db'));
    // NUL and bytes that are not UTF-8, as a damaged page holds (a later probe: they were printed raw)
    db.prepare('INSERT INTO items (item_id, record) VALUES (?, ?)').run(31000005, Buffer.from([0x00, 0xff, 0x7b, 0x6e]));
    db.close();
    const result = await runCli(['serve'], { PORT: '0', DATA_DIR: dir, LOG_LEVEL: 'info' });
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toBe(`recs-gateway: cannot load the recommender from ${dir}/recs.db: a stored item record is not JSON: "\\u0000\ufffd{n"\n`);
  });

  it('names a damaged or foreign database file in one line', async () => {
    const recs = dataDir();
    // a user first, so that the start fails on recs.db alone (not after creating the administrator)
    expect((await runCli(['user', 'add', 'hal', '--password', 'hal-password'], { DATA_DIR: recs })).code).toBe(0);
    writeFileSync(path.join(recs, 'recs.db'), 'these are not the bytes of an SQLite database '.repeat(100));
    expectOneLine(await runCli(['serve'], { PORT: '0', DATA_DIR: recs }), new RegExp(`cannot open ${recs}/recs\\.db: not an SQLite database`));

    const keys = dataDir();
    writeFileSync(path.join(keys, 'keys.db'), 'garbage');
    expectOneLine(await runCli(['serve'], { PORT: '0', DATA_DIR: keys }), new RegExp(`cannot open ${keys}/keys\\.db: not an SQLite database`));

    const notADirectory = path.join(dataDir(), 'file');
    writeFileSync(notADirectory, '');
    expectOneLine(await runCli(['serve'], { PORT: '0', DATA_DIR: path.join(notADirectory, 'data') }), /cannot create DATA_DIR .*: a part of the path is not a directory/);
    // a parent that answers ENOENT to a mkdir in it: node's recursive mkdirSync looped there for
    // ever (at full CPU, deaf to SIGTERM); runCli kills a command after 60 s
    expectOneLine(await runCli(['serve'], { PORT: '0', DATA_DIR: '/proc/recs-gateway-test/data' }), /cannot create DATA_DIR \/proc\/recs-gateway-test\/data: no such file or directory/);
  });

  it('names a DATA_DIR or a database file this user may not use, in one line', async () => {
    // as root every permission is granted: the gateway then runs as nobody
    const asUser = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : {};
    const readOnly = dataDir();
    chmodSync(readOnly, 0o555);
    expectOneLine(await runBuilt(['serve'], { PORT: '0', DATA_DIR: path.join(readOnly, 'data') }, asUser), /cannot create DATA_DIR .*\/data: permission denied/);
    expectOneLine(await runBuilt(['serve'], { PORT: '0', DATA_DIR: readOnly }, asUser), new RegExp(`cannot open ${readOnly}/keys\\.db: permission denied`));

    const unreadable = dataDir();
    chmodSync(unreadable, 0o777);
    // a user first, so that the start fails on recs.db alone (not after creating the administrator)
    expect((await runBuilt(['user', 'add', 'gail', '--password', 'gail-password'], { DATA_DIR: unreadable }, asUser)).code).toBe(0);
    writeFileSync(path.join(unreadable, 'recs.db'), '');
    chmodSync(path.join(unreadable, 'recs.db'), 0o000);
    expectOneLine(await runBuilt(['serve'], { PORT: '0', DATA_DIR: unreadable }, asUser), new RegExp(`cannot open ${unreadable}/recs\\.db: permission denied`));
  });

  it('names a bad setting in one line too (exit code 2): a bad TRUSTED_DOCUMENTS manifest, PORT, LOG_LEVEL, two at once', async () => {
    // the probe's bad manifest printed two lines: "Invalid configuration:", then the reason
    const dir = dataDir();
    const broken = path.join(dir, 'broken.json');
    writeFileSync(broken, '{"format": ');
    const cases: [Record<string, string>, RegExp][] = [
      [{ TRUSTED_DOCUMENTS: broken }, new RegExp(`^recs-gateway: Invalid configuration: TRUSTED_DOCUMENTS: ${broken}.* is not JSON: `)],
      [{ TRUSTED_DOCUMENTS: path.join(dir, 'missing.json') }, /^recs-gateway: Invalid configuration: TRUSTED_DOCUMENTS: cannot read .*missing\.json: ENOENT$/m],
      [{ PORT: 'eighty' }, /^recs-gateway: Invalid configuration: PORT must be a whole number from 0 to 65535, got "eighty"$/m],
      // pino's own error, with its stack, before LOG_LEVEL was checked
      [{ LOG_LEVEL: 'loud' }, /^recs-gateway: Invalid configuration: LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "loud"$/m],
      [{ PORT: 'eighty', BACKEND: 'soap' }, /^recs-gateway: Invalid configuration: BACKEND must be embedded or rest, got "soap"; PORT must be a whole number from 0 to 65535, got "eighty"$/m],
      // the fourth probe: a value's ESC and CR reached the terminal as they were, and a long one whole
      [{ PORT: '1\x1b[31mRED\r\x07' }, /^recs-gateway: Invalid configuration: PORT must be a whole number from 0 to 65535, got "1\\x1b\[31mRED\\x0d\\x07"$/m],
      [{ TRUST_PROXY: 'x'.repeat(5_000) }, /^recs-gateway: Invalid configuration: TRUST_PROXY[^\n]{0,400}…$/m],
    ];
    for (const [env, pattern] of cases) {
      const result = await runCli(['serve'], { DATA_DIR: path.join(dir, 'data'), ...env });
      expect([result.code, result.stderr], JSON.stringify(env)).toEqual([2, expect.stringMatching(/^recs-gateway: [^\n]+\n$/)]);
      expect(result.stderr, JSON.stringify(env)).toMatch(pattern);
    }
    // nothing was started: no DATA_DIR made
    expect(existsSync(path.join(dir, 'data'))).toBe(false);
  });

  it('says where it really listens: every interface unless HOST is set, every IPv4 one for 0.0.0.0', async () => {
    // three starts at once, each on a small catalogue: the demo shop is not the subject
    const start = async (HOST: string): Promise<ServeProcess> => {
      const DATA_DIR = dataDir();
      await storeCatalogue({ kind: 'sqlite', dataDir: DATA_DIR }, itemsFrom(1, 12));
      const server = await startServe({ DATA_DIR, HOST });
      servers.push(server);
      return server;
    };
    const [everywhere, ipv4, loopback] = await Promise.all([start(''), start('0.0.0.0'), start('127.0.0.1')]);
    const line = listening(everywhere);
    expect(['::', '0.0.0.0']).toContain(line.address);
    // `::` takes IPv4 too (node listens dual-stack); node takes 0.0.0.0 where there is no IPv6
    expect(line.interfaces).toMatch(line.address === '::' ? /^all \(set HOST=127\.0\.0\.1/ : /^all IPv4 interfaces \(set HOST=127\.0\.0\.1/);
    expect(line.url).toBe(`http://127.0.0.1:${String(line.port)}/graphql`);

    // the probe: HOST=0.0.0.0 said "all" though no IPv6 interface is among them
    const ipv4Line = listening(ipv4);
    expect(ipv4Line.address).toBe('0.0.0.0');
    expect(ipv4Line.interfaces).toMatch(/^all IPv4 interfaces \(set HOST=127\.0\.0\.1/);

    expect(listening(loopback)).toMatchObject({ address: '127.0.0.1', interfaces: '127.0.0.1' });
  });

  it('makes DATA_DIR 0700 and its database files 0600', async () => {
    const DATA_DIR = path.join(dataDir(), 'nested', 'data');
    const added = await runCli(['user', 'add', 'dora', '--password', 'dora-password'], { DATA_DIR });
    expect(added.code).toBe(0);
    const server = await startServe({ DATA_DIR });
    servers.push(server);
    expect(mode(DATA_DIR)).toBe(0o700);
    for (const file of ['keys.db', 'keys.db-wal', 'keys.db-shm']) expect([file, mode(path.join(DATA_DIR, file))]).toEqual([file, 0o600]);

    const events = path.join(dataDir(), 'events.csv');
    writeFileSync(events, 'timestamp,visitorid,event,itemid,transactionid\n1433221332117,257597,view,355908,\n');
    const imported = await runCli(['import', 'events', events, '--format', 'retailrocket'], { DATA_DIR });
    expect(imported.code).toBe(0);
    for (const file of ['recs.db', 'recs.db-wal', 'recs.db-shm']) {
      if (existsSync(path.join(DATA_DIR, file))) expect([file, mode(path.join(DATA_DIR, file))]).toEqual([file, 0o600]);
    }
    expect(mode(path.join(DATA_DIR, 'recs.db'))).toBe(0o600);
  });

  it('tightens a database file an earlier version left readable by everyone', async () => {
    const DATA_DIR = dataDir();
    expect((await runCli(['user', 'add', 'erin', '--password', 'erin-password'], { DATA_DIR })).code).toBe(0);
    chmodSync(path.join(DATA_DIR, 'keys.db'), 0o644);
    expect((await runCli(['user', 'add', 'fred', '--password', 'fred-password'], { DATA_DIR })).code).toBe(0);
    expect(mode(path.join(DATA_DIR, 'keys.db'))).toBe(0o600);
  });
});

function listening(server: ServeProcess): Record<string, unknown> {
  const line = server
    .stdout()
    .split('\n')
    .map((l) => (l.startsWith('{') ? (JSON.parse(l) as Record<string, unknown>) : {}))
    .find((entry) => entry.msg === 'recs-gateway listening');
  expect(line).toBeDefined();
  return line!;
}

function withDatabase(url: string, database: string, password: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  parsed.password = password;
  return parsed.href;
}

function withSearchPath(url: string, schema: string): string {
  const parsed = new URL(url);
  parsed.searchParams.set('options', `-c search_path=${schema}`);
  return parsed.href;
}

function withUser(url: string, user: string, password: string): string {
  const parsed = new URL(url);
  parsed.username = user;
  parsed.password = password;
  return parsed.href;
}

/** The built command line (bin/recs-gateway.js), as another user when given one. */
const runBuilt = (args: string[], env: Record<string, string>, user: { uid?: number; gid?: number }): Promise<RunResult> =>
  runNode(['bin/recs-gateway.js', ...args], { env: { LOG_LEVEL: 'warn', ...env }, user });
