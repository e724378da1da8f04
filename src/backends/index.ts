import type { Config } from '../config.js';
import { createEmbeddedBackend } from './embedded/index.js';
import { openKeyStore } from './embedded/keys/index.js';
import { ensureFirstAdmin } from './embedded/keys/users.js';
import type { Backend } from './types.js';

export interface OpenBackendHooks {
  /** Called with the generated password when the first start created the administrator. */
  onFirstAdmin?: (password: string) => void;
}

/** The backend config asks for: decided once, at start-up. */
export async function openBackend(config: Config, hooks: OpenBackendHooks = {}): Promise<Backend> {
  if (config.backend === 'rest') {
    throw new Error('BACKEND=rest is not available yet');
  }
  const store = await openKeyStore(config);
  const password = await ensureFirstAdmin(store);
  if (password !== null) hooks.onFirstAdmin?.(password);
  return createEmbeddedBackend(store);
}
