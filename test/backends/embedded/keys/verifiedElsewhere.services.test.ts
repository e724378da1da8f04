import path from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { basicAuthorization } from '../../../../src/auth/authorization.js';
import { RateLimiter } from '../../../../src/auth/rateLimit.js';
import { MemoryTokenBuckets } from '../../../../src/auth/tokenBucket.js';
import { DEFAULT_RATE_LIMITS } from '../../../../src/config/defaults.js';
import { EmbeddedKeyService } from '../../../../src/backends/embedded/keys/keyService.js';
import { hashPassword, scryptRuns } from '../../../../src/backends/embedded/keys/passwords.js';
import { PostgresKeyStore } from '../../../../src/backends/embedded/keys/postgresStore.js';
import { SqliteKeyStore } from '../../../../src/backends/embedded/keys/sqliteStore.js';
import type { KeyStore, UserRecord } from '../../../../src/backends/embedded/keys/store.js';
import { addUser } from '../../../../src/backends/embedded/keys/users.js';
import type { PrincipalModel } from '../../../../src/ports/backend.js';
import { countKeyLookups, DATABASE_URL, dropSchema, TEST_COST, tempDir, testSchema } from '../../../helpers/stores.js';

/**
 * Verified credentials (keys, and password sign-ins that skip the scrypt check) on both stores:
 * whatever another process changes (another gateway, the CLI, an operator's SQL) is refused on the
 * very next request. PostgreSQL counts changes with triggers in the transaction that makes them.
 */
const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

interface Shared {
  /** The gateway's store, and another process's connection to the same one. */
  store: KeyStore;
  other: KeyStore;
  /** An operator's SQL on the same store, outside any gateway. */
  sql: (statement: string, params?: unknown[]) => Promise<void>;
  dispose(): Promise<void>;
}

const kinds: { name: string; open(): Promise<Shared> }[] = [
  {
    name: 'sqlite',
    async open() {
      const { dir, remove } = tempDir();
      const file = path.join(dir, 'keys.db');
      const store = new SqliteKeyStore(file);
      await store.migrate();
      const other = new SqliteKeyStore(file);
      const db = new Database(file);
      return {
        store,
        other,
        sql: (statement, params = []) => {
          db.prepare(statement).run(...params);
          return Promise.resolve();
        },
        async dispose() {
          db.close();
          await other.close();
          await store.close();
          remove();
        },
      };
    },
  },
  {
    name: 'postgres',
    async open() {
      const schema = testSchema();
      const store = new PostgresKeyStore({ connectionString: DATABASE_URL, schema, max: 5 });
      await store.migrate();
      const other = new PostgresKeyStore({ connectionString: DATABASE_URL, schema, max: 2 });
      await other.migrate();
      const client = new pg.Client({ connectionString: DATABASE_URL, options: `-c search_path=${schema}` });
      await client.connect();
      return {
        store,
        other,
        sql: async (statement, params = []) => {
          await client.query(statement, params);
        },
        async dispose() {
          await client.end();
          await other.close();
          await store.close();
          await dropSchema(schema);
        },
      };
    },
  },
];

/** `?` placeholders, numbered for PostgreSQL. */
const numbered = (statement: string): string => {
  let n = 0;
  return statement.replace(/\?/g, () => `$${++n}`);
};

/** A fresh store of `kind`, disposed by `cleanups`, and an operator's SQL on it with `?` placeholders. */
async function openKind(kind: (typeof kinds)[number], cleanups: (() => Promise<void>)[]) {
  const shared = await kind.open();
  cleanups.push(() => shared.dispose());
  const sql = (statement: string, params?: unknown[]): Promise<void> =>
    shared.sql(kind.name === 'postgres' ? numbered(statement) : statement, params);
  return { ...shared, sql };
}

describe.each(kinds)('verified credentials on the $name store, changed by another process', (kind) => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  async function setup() {
    const shared = await openKind(kind, cleanups);
    const { sql } = shared;
    const alice = await addUser(shared.store, { username: 'alice', password: 'alice-password' }, TEST_COST);
    await addUser(shared.store, { username: 'bob', password: 'bob-password' }, TEST_COST);
    const service = new EmbeddedKeyService(shared.store);
    const password = basicAuthorization('alice', 'alice-password');
    const principal = await service.authenticate(password);
    return { ...shared, sql, alice, service, password, principal };
  }

  it('signs a verified password in again without the scrypt check, and as the same user', async () => {
    const { service, password, alice } = await setup();
    await nextTurn();
    const before = scryptRuns();
    const again = await service.authenticate(password);
    expect(scryptRuns()).toBe(before);
    expect(again).toMatchObject({ authenticatedBy: 'PASSWORD', user: { id: alice.id, username: 'alice' } });
    // a wrong password for the same user is still checked, and refused
    await expect(service.authenticate(basicAuthorization('alice', 'wrong-password'))).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
    expect(scryptRuns()).toBe(before + 1);
  });

  it("refuses the old password on the very next request once another process changed the user's password", async () => {
    const { service, password, sql } = await setup();
    await service.authenticate(password);
    await sql('UPDATE users SET password_hash = ? WHERE username = ?', [await hashPassword('new-password', TEST_COST), 'alice']);
    await nextTurn();
    await expect(service.authenticate(password)).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
    expect((await service.authenticate(basicAuthorization('alice', 'new-password'))).user.username).toBe('alice');
  });

  it('refuses the password and the keys of a user another process removed, on the very next request', async () => {
    const { service, password, principal, sql } = await setup();
    const { key } = await service.createKey(principal, { name: 'laptop' });
    await nextTurn();
    await service.authenticate(key);
    await service.authenticate(password);
    await sql('DELETE FROM users WHERE username = ?', ['alice']);
    await nextTurn();
    await expect(service.authenticate(password)).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
    await expect(service.authenticate(key)).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
  });

  it('refuses a key another gateway deleted, and forgets the passwords it vouched for, on the very next request', async () => {
    const { service, password, principal, other } = await setup();
    const { id, key } = await service.createKey(principal, { name: 'phone' });
    await nextTurn();
    await service.authenticate(key);
    await service.authenticate(password);
    expect(await other.deleteKey(id, null)).toBe(true);
    await nextTurn();
    await expect(service.authenticate(key)).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
    // the password is checked afresh (it is still right)
    const before = scryptRuns();
    expect((await service.authenticate(password)).authenticatedBy).toBe('PASSWORD');
    expect(scryptRuns()).toBe(before + 1);
  });

  it('reads the version once for the requests of one turn, and again in the next', async () => {
    const { store, service, principal } = await setup();
    const { key } = await service.createKey(principal, { name: 'burst' });
    await nextTurn();
    await service.authenticate(key);
    await nextTurn();
    let reads = 0;
    const method = kind.name === 'postgres' ? 'readDataVersion' : 'dataVersion';
    const read = (store[method] as () => unknown).bind(store);
    (store as unknown as Record<string, () => unknown>)[method] = () => {
      reads += 1;
      return read();
    };
    await Promise.all(Array.from({ length: 20 }, () => service.authenticate(key)));
    expect(reads).toBe(1);
    await nextTurn();
    await service.authenticate(key);
    expect(reads).toBe(2);
    // PostgreSQL's is a query: authenticateKnown, which cannot wait, leaves it to authenticate
    await nextTurn();
    expect(service.authenticateKnown(key)?.authenticatedBy).toBe(kind.name === 'postgres' ? undefined : 'API_KEY');
    expect((await service.authenticateVerified(key))?.authenticatedBy).toBe('API_KEY');
  });

  it("refuses a key whose expiry an operator moved into the past, and keeps keys across a key's lastUsedAt", async () => {
    const { service, principal, sql, other } = await setup();
    const { id, key } = await service.createKey(principal, { name: 'watch' });
    await nextTurn();
    await service.authenticate(key);
    const lookups = countKeyLookups(service['store']);
    // another gateway records a use: no change to what vouches for the key
    await other.touchKey(id, new Date(Date.now() + 60_000));
    await nextTurn();
    await service.authenticate(key);
    if (kind.name === 'postgres') expect(lookups()).toBe(0);
    await sql('UPDATE api_keys SET expires_at = ? WHERE id = ?', [kind.name === 'postgres' ? new Date(Date.now() - 1000) : Date.now() - 1000, id]);
    await nextTurn();
    await expect(service.authenticate(key)).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
  });
});

function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

/**
 * A password sign-in is checked once for the requests that send the same credential meanwhile
 * (the key service's check, and the rate limiter's, by address). A request that comes after
 * another process changed the user must not be answered by a check that read the user before
 * that change: the probe of 70c76e3 saw old passwords accepted up to a scrypt check's length
 * after the change was committed, and any user can start such checks at will (a key of their own
 * created drops every kept sign-in).
 */
describe.each(kinds)('a password check under way on the $name store when another process changes the user', (kind) => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  /** alice's first findUser, once it has read her, waits for `answer`: her check is under way. */
  async function setup() {
    const shared = await openKind(kind, cleanups);
    await addUser(shared.store, { username: 'alice', password: 'alice-password' }, TEST_COST);
    const read = gate();
    const answer = gate();
    const find = shared.store.findUser.bind(shared.store);
    let held = false;
    shared.store.findUser = async (username: string, domain: string | null): Promise<UserRecord | null> => {
      const found = await find(username, domain);
      if (!held && username === 'alice') {
        held = true;
        read.open();
        await answer.promise;
      }
      return found;
    };
    const service = new EmbeddedKeyService(shared.store);
    const limiter = new RateLimiter(new MemoryTokenBuckets(), DEFAULT_RATE_LIMITS);
    return { service, limiter, sql: shared.sql, password: basicAuthorization('alice', 'alice-password'), read, answer };
  }

  const changes = [
    {
      what: 'her password changed',
      make: async (sql: (s: string, p: unknown[]) => Promise<void>) =>
        sql('UPDATE users SET password_hash = ? WHERE username = ?', [await hashPassword('new-password', TEST_COST), 'alice']),
    },
    { what: 'her removed', make: (sql: (s: string, p: unknown[]) => Promise<void>) => sql('DELETE FROM users WHERE username = ?', ['alice']) },
  ];
  const callers = [
    { through: 'the key service', sign: (t: Awaited<ReturnType<typeof setup>>) => t.service.authenticate(t.password) },
    { through: 'the rate limiter', sign: (t: Awaited<ReturnType<typeof setup>>) => t.limiter.authenticate(t.service, t.password, '192.0.2.7') },
  ];

  describe.each(callers)('through $through', ({ sign }) => {
    it.each(changes)('refuses the old password sent after $what', async (change) => {
      const t = await setup();
      await nextTurn();
      // made before the change: either answer will do for it
      const first = sign(t).then(
        (principal: PrincipalModel | null) => principal,
        () => null,
      );
      await t.read.promise;
      await change.make(t.sql);
      await nextTurn();
      const after = sign(t);
      after.catch(() => undefined);
      t.answer.open();
      await first;
      await expect(after).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
    });

    it('still checks the same password sent many times at once once, and signs them all in', async () => {
      const t = await setup();
      t.answer.open();
      await nextTurn();
      const before = scryptRuns();
      const principals = await Promise.all(Array.from({ length: 5 }, () => sign(t)));
      expect(principals.map((p) => p?.user.username)).toEqual(Array(5).fill('alice'));
      expect(scryptRuns() - before).toBe(1);
    });
  });
});

describe('verified credentials on PostgreSQL: the data version is a query', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  async function setup() {
    const shared = await kinds[1]!.open();
    cleanups.push(() => shared.dispose());
    await addUser(shared.store, { username: 'alice', password: 'alice-password' }, TEST_COST);
    const service = new EmbeddedKeyService(shared.store);
    const password = basicAuthorization('alice', 'alice-password');
    const principal = await service.authenticate(password);
    const store = shared.store as PostgresKeyStore;
    return { ...shared, store, service, password, principal };
  }

  /** A start (another store's migrate) mends the store: a key is kept again, its next request looks nothing up. */
  async function keptAfterStart(other: KeyStore, service: EmbeddedKeyService, key: string, lookups: () => number): Promise<void> {
    await other.migrate();
    await nextTurn();
    await service.authenticate(key);
    const looked = lookups();
    await nextTurn();
    await service.authenticate(key);
    expect(lookups()).toBe(looked);
  }

  it('does not keep what a lookup read before a change another request saw first', async () => {
    const { store, other, service, principal } = await setup();
    const { id, key } = await service.createKey(principal, { name: 'raced' });
    const { key: second } = await service.createKey(principal, { name: 'second' });
    await nextTurn();
    // the lookup of `key` answers with the key as it was; before it returns, another gateway
    // deletes the key and a later request (of `second`) reads the new version
    const find = store.findKeyByHash.bind(store);
    let hold = true;
    store.findKeyByHash = async (hash: string) => {
      const found = await find(hash);
      if (hold) {
        hold = false;
        expect(await other.deleteKey(id, null)).toBe(true);
        await nextTurn();
        await service.authenticate(second);
      }
      return found;
    };
    // the request in flight was read before the delete: it may pass, but it must not be kept
    await service.authenticate(key);
    await nextTurn();
    await expect(service.authenticate(key)).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
  });

  it("does not count from where it began again once an operator deleted the counter's row and a later start made it anew", async () => {
    const { store, other, service, principal, sql } = await setup();
    const { id, key } = await service.createKey(principal, { name: 'counted' });
    await nextTurn();
    await service.authenticate(key);
    // this gateway keeps the key under the count it read; it sends nothing while the row is gone
    const held = await store.readDataVersion();
    await sql('DELETE FROM key_changes');
    // another replica starts (its open makes the row again), and as many changes are made as
    // this gateway had counted, the last of them the key's removal
    await other.migrate();
    const made = await (other as PostgresKeyStore).readDataVersion();
    for (let n = made + 1; n < held; n++) await sql('UPDATE users SET is_admin = is_admin WHERE false');
    expect(await other.deleteKey(id, null)).toBe(true);
    await nextTurn();
    await expect(service.authenticate(key)).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
  });

  it('keeps what a later version read vouched for when an earlier read answers after it', async () => {
    const { store, service, principal } = await setup();
    const { key } = await service.createKey(principal, { name: 'overlap' });
    await nextTurn();
    const version = await store.readDataVersion();
    // the first request's read is slow; the next turn's answers first
    let answerFirst!: (v: number) => void;
    const reads = [new Promise<number>((resolve) => (answerFirst = resolve)), Promise.resolve(version)];
    store.readDataVersion = () => reads.shift() ?? Promise.resolve(version);
    const lookups = countKeyLookups(store);
    const first = service.authenticate(key);
    await nextTurn();
    await service.authenticate(key); // reads `version`, looks the key up, keeps it
    expect(lookups()).toBe(1);
    answerFirst(version - 1); // an older count, read before a change the second read saw
    await first;
    await nextTurn();
    await service.authenticate(key);
    // the older read was a miss (its own lookup), and dropped nothing: the third is a hit
    expect(lookups()).toBe(2);
  });

  it('fails the requests waiting on a version read that failed, not the process, and recovers', async () => {
    const { store, service, password } = await setup();
    await nextTurn();
    const read = store.readDataVersion.bind(store);
    store.readDataVersion = () => Promise.reject(new Error('connection terminated'));
    await expect(service.authenticate(password)).rejects.toThrow('connection terminated');
    await expect(service.authenticateVerified(password)).rejects.toThrow('connection terminated');
    await nextTurn();
    store.readDataVersion = read;
    expect((await service.authenticate(password)).authenticatedBy).toBe('PASSWORD');
  });

  it('trusts nothing, and fails nothing, while an operator has dropped key_changes; a start makes it again', async () => {
    const { store, other, service, principal, sql } = await setup();
    const { id, key } = await service.createKey(principal, { name: 'dropped' });
    await nextTurn();
    await service.authenticate(key);
    await sql('DROP TABLE key_changes');
    const lookups = countKeyLookups(store);
    for (let n = 0; n < 3; n++) {
      await nextTurn();
      expect((await service.authenticate(key)).keyId).toBe(id);
    }
    expect(lookups()).toBe(3);
    // writes still succeed (the triggers' count has nowhere to go), and are seen at once
    const { key: second } = await service.createKey(principal, { name: 'second' });
    expect(await other.deleteKey(id, null)).toBe(true);
    await nextTurn();
    await expect(service.authenticate(key)).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
    // a start (migrate) makes it again, counting on from the clock: credentials are kept again
    await keptAfterStart(other, service, second, lookups);
  });

  it.each([
    ['disabled', 'ALTER TABLE api_keys DISABLE TRIGGER api_keys_changed'],
    ['disabled with the rest (pg_restore --disable-triggers)', 'ALTER TABLE api_keys DISABLE TRIGGER ALL'],
    ['dropped', 'DROP TRIGGER api_keys_changed ON api_keys'],
    ['made to call another function', `CREATE FUNCTION nothing() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
      DROP TRIGGER api_keys_changed ON api_keys;
      CREATE TRIGGER api_keys_changed AFTER DELETE ON api_keys FOR EACH STATEMENT EXECUTE FUNCTION nothing();
      ALTER TABLE api_keys ENABLE ALWAYS TRIGGER api_keys_changed`],
  ])('trusts nothing while a trigger that counts changes is %s, and a start mends it', async (_how, statement) => {
    const { store, other, service, principal, sql } = await setup();
    const { id, key } = await service.createKey(principal, { name: 'untriggered' });
    await nextTurn();
    await service.authenticate(key);
    await sql(statement);
    // the operator's delete moves no count now: the key must still be refused on the next request
    await sql('DELETE FROM api_keys WHERE id = $1', [id]);
    await nextTurn();
    await expect(service.authenticate(key)).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
    const { key: second } = await service.createKey(principal, { name: 'second' });
    const lookups = countKeyLookups(store);
    for (let n = 1; n <= 2; n++) {
      await nextTurn();
      await service.authenticate(second);
      expect(lookups()).toBe(n);
    }
    // a start puts the trigger back as it was made: credentials are kept again, and counted
    await keptAfterStart(other, service, second, lookups);
    await sql("DELETE FROM api_keys WHERE name = 'second'");
    await nextTurn();
    await expect(service.authenticate(second)).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
  });

  it('counts a change made in a session that fires only ALWAYS triggers (session_replication_role = replica)', async () => {
    const { service, principal, sql } = await setup();
    const { id, key } = await service.createKey(principal, { name: 'replicated' });
    await nextTurn();
    await service.authenticate(key);
    await sql('BEGIN');
    await sql('SET LOCAL session_replication_role = replica');
    await sql('DELETE FROM api_keys WHERE id = $1', [id]);
    await sql('COMMIT');
    await nextTurn();
    await expect(service.authenticate(key)).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
  });

  it('counts changes from a store of the earlier version: the triggers are added on open, once', async () => {
    const { store, sql } = await setup();
    const triggers = async (): Promise<string[]> => {
      const names: string[] = [];
      const client = new pg.Client({ connectionString: DATABASE_URL });
      await client.connect();
      try {
        const { rows } = await client.query<{ tgname: string }>(
          `SELECT tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = $1 AND NOT tgisinternal ORDER BY tgname`,
          [(store as unknown as { schema: string }).schema],
        );
        names.push(...rows.map((row) => row.tgname));
      } finally {
        await client.end();
      }
      return names;
    };
    expect(await triggers()).toEqual(['api_keys_changed', 'users_changed']);
    // a store made before the counter: no triggers, no table
    await sql('DROP TRIGGER users_changed ON users');
    await sql('DROP TRIGGER api_keys_changed ON api_keys');
    await sql('DROP TABLE key_changes');
    await store.migrate();
    await store.migrate();
    expect(await triggers()).toEqual(['api_keys_changed', 'users_changed']);
    // the earlier version's triggers fired in ORIGIN sessions only: a start makes them ALWAYS
    await sql('ALTER TABLE users ENABLE TRIGGER users_changed');
    expect(await store.readDataVersion()).toBeNaN();
    await store.migrate();
    const before = await store.readDataVersion();
    await sql("UPDATE users SET is_admin = true WHERE username = 'alice'");
    expect(await store.readDataVersion()).toBe(before + 1);
  });
});
