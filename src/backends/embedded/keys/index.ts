import path from 'node:path';
import { PostgresKeyStore } from './postgresStore.js';
import { SqliteKeyStore } from './sqliteStore.js';
import type { KeyStore } from './store.js';

export interface KeyStoreConfig {
  dataDir: string;
  databaseUrl: string | null;
}

/** PostgreSQL when a database URL is given, SQLite in DATA_DIR/keys.db otherwise. */
export async function openKeyStore(config: KeyStoreConfig): Promise<KeyStore> {
  const store = config.databaseUrl
    ? new PostgresKeyStore({ connectionString: config.databaseUrl })
    : new SqliteKeyStore(path.join(config.dataDir, 'keys.db'));
  await store.migrate();
  return store;
}
