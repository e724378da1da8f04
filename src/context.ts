import type { Backend, PrincipalModel } from './backends/types.js';
import type { Loaders } from './loaders/index.js';
import type { RequestRecord } from './observability/requestScope.js';

/** What every resolver gets: who is asking, the per-request loaders, and the backend. */
export interface GatewayContext {
  /** null when the request carries no Authorization header. */
  principal: PrincipalModel | null;
  backend: Backend;
  loaders: Loaders;
  /** The HTTP request's record, for its access-log line (the operation's name). */
  request?: RequestRecord;
  /** Aborted at the request's deadline or when the client goes away. */
  signal: AbortSignal;
}
