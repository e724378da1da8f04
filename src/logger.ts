import { pino, type Logger } from 'pino';

export type { Logger };

/**
 * Structured JSON logs. Whatever may hold a secret is redacted by path, so a careless
 * `log.info({ req })` still cannot print a key or a password.
 */
export function createLogger(options: { level?: string; destination?: NodeJS.WritableStream } = {}): Logger {
  return pino(
    {
      level: options.level ?? 'info',
      base: undefined,
      redact: {
        paths: [
          'authorization',
          '*.authorization',
          'headers.authorization',
          '*.headers.authorization',
          'apiKey',
          '*.apiKey',
          'key',
          '*.key',
          'password',
          '*.password',
        ],
        censor: '[redacted]',
      },
    },
    options.destination as pino.DestinationStream | undefined,
  );
}

/** A logger that writes nothing, for tests and embedding. */
export const silentLogger: Logger = pino({ level: 'silent' });
