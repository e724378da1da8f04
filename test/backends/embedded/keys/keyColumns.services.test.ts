import path from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { EmbeddedKeyService } from '../../../../src/backends/embedded/keys/keyService.js';
import { PostgresKeyStore } from '../../../../src/backends/embedded/keys/postgresStore.js';
import { SqliteKeyStore } from '../../../../src/backends/embedded/keys/sqliteStore.js';
import type { KeyStore } from '../../../../src/backends/embedded/keys/store.js';
import { addUser } from '../../../../src/backends/embedded/keys/users.js';
import { basicAuthorization } from '../../../../src/auth/authorization.js';
import { DATABASE_URL, dropSchema, TEST_COST, tempDir, testSchema } from '../../../helpers/stores.js';

/**
 * A key store made before scopes and rotation (the columns missing) is given them on open, and
 * every key in it keeps working as before: all its user's scopes, one value.
 */
const OLD_COLUMNS = ['scopes', 'previous_hash', 'previous_until', 'rate_limit_per_second', 'daily_quota'];

interface OldStore {
  open: () => KeyStore;
  /** Takes the new columns away again, as a store made before them. */
  makeOld: () => Promise<void>;
  dispose: () => Promise<void>;
}

const kinds: { name: string; make: () => OldStore }[] = [
  {
    name: 'sqlite',
    make() {
      const dir = tempDir();
      const file = path.join(dir.dir, 'keys.db');
      return {
        open: () => new SqliteKeyStore(file),
        makeOld: () => {
          const db = new Database(file);
          db.exec('DROP INDEX api_keys_previous_hash');
          db.exec('DROP TABLE key_usage');
          for (const column of OLD_COLUMNS) db.exec(`ALTER TABLE api_keys DROP COLUMN ${column}`);
          db.close();
          return Promise.resolve();
        },
        dispose: () => Promise.resolve(dir.remove()),
      };
    },
  },
  {
    name: 'postgres',
    make() {
      const schema = testSchema();
      return {
        open: () => new PostgresKeyStore({ connectionString: DATABASE_URL, schema, max: 2 }),
        async makeOld() {
          const client = new pg.Client({ connectionString: DATABASE_URL });
          await client.connect();
          await client.query(`DROP TABLE ${schema}.key_usage`);
          await client.query(`ALTER TABLE ${schema}.api_keys ${OLD_COLUMNS.map((c) => `DROP COLUMN ${c}`).join(', ')}`);
          await client.end();
        },
        dispose: () => dropSchema(schema),
      };
    },
  },
];

describe.each(kinds)('a $name key store made before scopes', ({ make }) => {
  const old = make();
  afterAll(() => old.dispose());

  it('gains the columns on open, and its keys keep every scope of their user', async () => {
    const first = old.open();
    await first.migrate();
    await addUser(first, { username: 'root', password: 'root-password', isAdmin: true }, TEST_COST);
    const made = await new EmbeddedKeyService(first).createKey(
      await new EmbeddedKeyService(first).authenticate(basicAuthorization('root', 'root-password')),
      { name: 'made-before' },
    );
    await first.close();
    await old.makeOld();

    const reopened = old.open();
    await reopened.migrate();
    try {
      const service = new EmbeddedKeyService(reopened);
      const principal = await service.authenticate(made.key);
      expect(principal.scopes).toBeUndefined();
      expect(await service.listKeys(principal)).toMatchObject([
        { name: 'made-before', scopes: ['RECOMMENDATIONS_READ', 'EVENTS_WRITE', 'KEYS_MANAGE'], rateLimitPerSecond: null, dailyQuota: null },
      ]);
      expect(principal.limits).toBeNull();
      expect(await service.updateKey(principal, made.id, { dailyQuota: 10 })).toMatchObject({ dailyQuota: 10 });
      service.countUse(made.id, false);
      await service.close();
      expect(await service.keyUsage(principal, made.id, 1)).toMatchObject([{ requests: 1, refused: 0 }]);
      // and the new columns work on it: rotated with no grace, the old value stops
      const rotated = await service.rotateKey(principal, made.id, 0);
      await expect(service.authenticate(made.key)).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
      expect((await service.authenticate(rotated.key)).keyId).toBe(made.id);
      // a second open finds nothing to add
      const again = old.open();
      await again.migrate();
      await again.close();
    } finally {
      await reopened.close();
    }
  });
});
