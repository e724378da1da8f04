import { notImplemented } from '../../errors.js';
import type { Backend, RecsService } from '../types.js';
import { EmbeddedKeyService } from './keys/keyService.js';
import type { KeyStore } from './keys/store.js';

/** Until the embedded recommender lands, every recommendation call says so plainly. */
const recsNotImplemented: RecsService = {
  getItems: () => Promise.reject(notImplemented('Item lookup')),
  recommend: () => Promise.reject(notImplemented('Recommendations')),
};

/** The in-process backend over a key store it takes ownership of. */
export function createEmbeddedBackend(store: KeyStore): Backend {
  return {
    keys: new EmbeddedKeyService(store),
    recs: recsNotImplemented,
    async check() {
      try {
        await store.countUsers();
        return { store: 'ok' };
      } catch (error) {
        return { store: `unreachable: ${(error as Error).message}` };
      }
    },
    close: () => store.close(),
  };
}
