import { basicAuthorization } from '../../src/auth/authorization.js';
import { openKeyStore } from '../../src/backends/embedded/keys/index.js';
import { addUser } from '../../src/backends/embedded/keys/users.js';
import { gql, startServe, type ServeProcess } from './processes.js';
import { TEST_COST, tempDir } from './stores.js';

export interface RestUpstream {
  /** The base URL of a gateway process serving both REST interfaces from its embedded backend. */
  url: string;
  process: ServeProcess;
  /** A key of the user `gateway`, for the REST-mode gateway's own RECS_API_KEY. */
  recsApiKey: string;
  stop(): Promise<void>;
}

/**
 * A second gateway process serving the REST interfaces from its own embedded backend (demo shop,
 * SQLite in a temp DATA_DIR), with the given users (administrators where `isAdmin`). This is what a REST-mode gateway talks to in
 * tests: real HTTP, a real key store, the same demo catalogue as the in-process embedded backend.
 */
export async function startRestUpstream(
  users: { username: string; domain?: string; password: string; isAdmin?: boolean }[],
): Promise<RestUpstream> {
  const dir = tempDir();
  const env = { DATA_DIR: dir.dir };
  // the key store `user add` makes, written here: a command per user cost a process and a full scrypt each
  const keys = await openKeyStore({ dataDir: dir.dir, databaseUrl: null });
  try {
    for (const user of [...users, { username: 'gateway', password: 'gateway-password' }]) await addUser(keys, user, TEST_COST);
  } finally {
    await keys.close();
  }
  const process = await startServe(env);
  const created = await gql(
    process.url,
    'mutation { createApiKey(input: { name: "recs-gateway" }) { key } }',
    {},
    { authorization: basicAuthorization('gateway', 'gateway-password') },
  );
  const recsApiKey = (created.body.data?.createApiKey as { key?: string } | undefined)?.key;
  if (!recsApiKey) throw new Error(`could not create the gateway key: ${JSON.stringify(created.body)}`);
  return {
    url: process.url,
    process,
    recsApiKey,
    async stop() {
      await process.stop();
      dir.remove();
    },
  };
}
