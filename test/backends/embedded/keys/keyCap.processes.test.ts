import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuthorization } from '../../../../src/auth/authorization.js';
import { PostgresKeyStore } from '../../../../src/backends/embedded/keys/postgresStore.js';
import { SqliteKeyStore } from '../../../../src/backends/embedded/keys/sqliteStore.js';
import { KeyLimitReachedError, type KeyStore } from '../../../../src/backends/embedded/keys/store.js';
import { gql, runCli, startServe, type ServeProcess } from '../../../helpers/processes.js';
import { itemsFrom, storeCatalogue } from '../../../helpers/liveEvents.js';
import { DATABASE_URL, dropSchema, tempDir, testSchema } from '../../../helpers/stores.js';
import { promised } from '../../../../src/shared/promised.js';

/**
 * MAX_KEYS_PER_USER: a user cannot multiply its rate limit by making keys. The cap must hold when
 * creates race for the last slot from two connections (PostgreSQL) or two processes (SQLite):
 * the store counts and inserts in one transaction.
 */
const CAP = 3;
let n = 0;
const hash = (): string => `hash-${++n}-${Math.random()}`;

/** Two connections (two stores) on one database, and a user in it. */
interface Pair {
  name: string;
  open(): Promise<{ stores: [KeyStore, KeyStore]; dispose: () => Promise<void> }>;
}

const pairs: Pair[] = [
  {
    name: 'sqlite',
    open() {
      return promised(() => {
        const dir = tempDir();
        const file = path.join(dir.dir, 'keys.db');
        const stores: [KeyStore, KeyStore] = [new SqliteKeyStore(file), new SqliteKeyStore(file)];
        return {
          stores,
          async dispose() {
            for (const store of stores) await store.close();
            dir.remove();
          },
        };
      });
    },
  },
  {
    name: 'postgres',
    async open() {
      const schema = testSchema();
      const stores: [KeyStore, KeyStore] = [
        new PostgresKeyStore({ connectionString: DATABASE_URL, schema, max: 5 }),
        new PostgresKeyStore({ connectionString: DATABASE_URL, schema, max: 5 }),
      ];
      for (const store of stores) await store.migrate();
      return {
        stores,
        async dispose() {
          for (const store of stores) await store.close().catch(() => undefined);
          await dropSchema(schema);
        },
      };
    },
  },
];

describe.each(pairs)('the key cap in the store ($name, two connections)', (pair) => {
  let stores: [KeyStore, KeyStore];
  let dispose: () => Promise<void>;
  beforeAll(async () => {
    ({ stores, dispose } = await pair.open());
  });
  afterAll(async () => {
    await dispose?.();
  });

  it(`lets ${CAP} of 10 racing creates through, the rest with KeyLimitReachedError, and counts deleted keys out`, async () => {
    const user = await stores[0].createUser({ username: 'racer', domain: null, passwordHash: 'scrypt$x', isAdmin: false });
    // every create in flight at once, alternating between the two connections
    const results = await Promise.allSettled(
      Array.from({ length: 10 }, (_, i) =>
        stores[i % 2]!.createKey({ userId: user.id, name: null, hash: hash(), expiresAt: null, maxKeysPerUser: CAP }),
      ),
    );
    const created = results.filter((r) => r.status === 'fulfilled');
    const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(created).toHaveLength(CAP);
    expect(refused).toHaveLength(10 - CAP);
    for (const r of refused) expect(r.reason).toBeInstanceOf(KeyLimitReachedError);
    const keys = await stores[1].listKeys(user.id);
    expect(keys.map((k) => k.name)).toEqual(['key#1', 'key#2', 'key#3']);

    // a slot freed by a delete can be taken again, once
    expect(await stores[0].deleteKey(keys[0]!.id, user.id)).toBe(true);
    await expect(stores[1].createKey({ userId: user.id, name: 'again', hash: hash(), expiresAt: null, maxKeysPerUser: CAP })).resolves.toMatchObject({ name: 'again' });
    await expect(stores[0].createKey({ userId: user.id, name: 'more', hash: hash(), expiresAt: null, maxKeysPerUser: CAP })).rejects.toBeInstanceOf(KeyLimitReachedError);
    // another user's keys are counted apart
    const other = await stores[1].createUser({ username: 'other', domain: null, passwordHash: 'scrypt$x', isAdmin: false });
    await expect(stores[0].createKey({ userId: other.id, name: null, hash: hash(), expiresAt: null, maxKeysPerUser: CAP })).resolves.toMatchObject({ name: 'key#1' });
  });
});

describe('MAX_KEYS_PER_USER over HTTP: two gateway processes on one SQLite file', () => {
  const dir = tempDir();
  const env = { DATA_DIR: dir.dir, MAX_KEYS_PER_USER: String(CAP) };
  const alice = { authorization: basicAuthorization('alice', 'alice-password') };
  let one: ServeProcess;
  let two: ServeProcess;

  beforeAll(async () => {
    const added = await runCli(['user', 'add', 'alice', '--password', 'alice-password'], env);
    expect(added.code).toBe(0);
    // a catalogue of its own: on an empty DATA_DIR the start builds the demo shop, which is not the subject here
    await storeCatalogue({ kind: 'sqlite', dataDir: dir.dir }, itemsFrom(1, 12));
    [one, two] = await Promise.all([startServe(env), startServe(env)]);
  }, 60_000);
  afterAll(async () => {
    await Promise.all([one?.stop(), two?.stop()]);
    dir.remove();
  });

  const viaGraphQL = (url: string) => gql(url, 'mutation { createApiKey(input: {}) { id } }', {}, alice);
  const viaRest = (url: string) =>
    fetch(`${url}/api/v1/apikey`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...alice },
      body: JSON.stringify({ username: 'alice' }),
    }).then(async (response) => ({ status: response.status, body: (await response.json()) }));

  it('gives the last slot to one of 8 racing creates; the others get BAD_USER_INPUT, or the interface 400, saying why', async () => {
    for (let i = 0; i < CAP - 1; i++) expect((await viaGraphQL(one.url)).body.data?.createApiKey).toBeDefined();

    const [graphql, rest] = await Promise.all([
      Promise.all([viaGraphQL(one.url), viaGraphQL(two.url), viaGraphQL(one.url), viaGraphQL(two.url)]),
      Promise.all([viaRest(two.url), viaRest(one.url), viaRest(two.url), viaRest(one.url)]),
    ]);
    const won = graphql.filter((r) => r.body.data?.createApiKey).length + rest.filter((r) => r.status === 200).length;
    expect(won).toBe(1);
    const message = `The user already has ${CAP} API keys, the most a user may have: delete one to create another`;
    for (const r of graphql.filter((r) => !r.body.data?.createApiKey)) {
      expect(r.body.errors).toMatchObject([{ message, extensions: { code: 'BAD_USER_INPUT' } }]);
    }
    for (const r of rest.filter((r) => r.status !== 200)) expect(r).toEqual({ status: 400, body: [{ id: '*', message }] });

    const listed = await fetch(`${two.url}/api/v1/apikey`, { headers: alice });
    expect(((await listed.json()) as unknown[]).length).toBe(CAP);
  }, 60_000);
});
