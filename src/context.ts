import type { Backend, PrincipalModel } from './backends/types.js';
import type { Loaders } from './loaders/index.js';

/** What every resolver gets: who is asking, the per-request loaders, and the backend. */
export interface GatewayContext {
  /** null when the request carries no Authorization header. */
  principal: PrincipalModel | null;
  backend: Backend;
  loaders: Loaders;
  /** Aborted at the request's deadline or when the client goes away. */
  signal: AbortSignal;
}
