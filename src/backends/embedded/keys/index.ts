import path from 'node:path';
import { PostgresKeyStore } from './postgresStore.js';
import { SqliteKeyStore } from './sqliteStore.js';
import type { KeyStore } from './store.js';

export interface KeyStoreConfig {
  dataDir: string;
  databaseUrl: string | null;
}

/** PostgreSQL when a database URL is given, SQLite in DATA_DIR/keys.db otherwise. A failed
 * migration closes the store: a pool's idle connection would hold the failed start open. */
export async function openKeyStore(config: KeyStoreConfig): Promise<KeyStore> {
  const store = config.databaseUrl
    ? new PostgresKeyStore({ connectionString: config.databaseUrl })
    : new SqliteKeyStore(path.join(config.dataDir, 'keys.db'));
  try {
    await store.migrate();
  } catch (error) {
    await store.close().catch(() => undefined);
    throw error;
  }
  return store;
}
