import { StoreOpenError } from '../backends/embedded/dataFiles.js';

/** A start-up failure the user can fix: one line on the terminal, exit code 1, no stack trace. */
export class StartupError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StartupError';
  }
}

/** Why a listen failed, in the words of the settings that fix it; null for anything else. */
export function listenFailure(error: unknown, port: number, host: string | undefined): StartupError | null {
  const where = host === undefined ? `port ${port}` : `${host} port ${port}`;
  switch ((error as { code?: string } | null)?.code) {
    case 'EADDRINUSE':
      return new StartupError(`${where} is already in use (set PORT, or stop what listens there)`, { cause: error });
    case 'EACCES':
      return new StartupError(`no permission to listen on ${where} (ports below 1024 need privileges: set PORT)`, { cause: error });
    case 'EADDRNOTAVAIL':
      return new StartupError(`HOST ${host} is not an address of this machine (set HOST, or leave it unset for every interface)`, { cause: error });
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return new StartupError(`HOST ${host} cannot be resolved (set HOST to an address of this machine)`, { cause: error });
    default:
      return null;
  }
}

/** The one line a failed start prints, every configured secret blanked out in case a library quoted one. */
export function startupFailureLine(error: unknown, secrets: readonly string[], withStack = false): string {
  const known = error instanceof StartupError || error instanceof StoreOpenError;
  let text = error instanceof Error ? (withStack && !known ? (error.stack ?? error.message) : error.message) : String(error);
  if (!known && !withStack) text = `${text.split('\n')[0]} (LOG_LEVEL=debug shows where)`;
  for (const secret of secrets) if (secret.length > 0) text = text.split(secret).join('***');
  return `recs-gateway: ${known ? '' : 'cannot start: '}${text}`;
}

export function configSecrets(urls: readonly (string | null | undefined)[], others: readonly (string | null | undefined)[] = []): string[] {
  const secrets: string[] = [];
  for (const raw of urls) {
    if (!raw) continue;
    try {
      const url = new URL(raw);
      if (url.password) secrets.push(url.password, decodeURIComponent(url.password));
    } catch {
      // an unparsable URL was refused by config already
    }
  }
  for (const other of others) if (other) secrets.push(other);
  return secrets;
}
