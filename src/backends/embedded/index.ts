import type { Backend, RecsService } from '../types.js';
import { EmbeddedKeyService, type EmbeddedKeyServiceOptions } from './keys/keyService.js';
import type { KeyStore } from './keys/store.js';

/** The in-process backend over a key store and a recommender it takes ownership of. */
export function createEmbeddedBackend(
  store: KeyStore,
  recs: RecsService & { close(): Promise<void> },
  keyOptions: EmbeddedKeyServiceOptions = {},
): Backend {
  return {
    keys: new EmbeddedKeyService(store, keyOptions),
    recs,
    async check() {
      try {
        await store.countUsers();
        return { store: 'ok' };
      } catch (error) {
        return { store: `unreachable: ${(error as Error).message}` };
      }
    },
    async close() {
      await recs.close();
      await store.close();
    },
  };
}
