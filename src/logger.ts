import { pino, type Logger } from 'pino';

export type { Logger };

/** Log text waiting for a slow stdout reader at most; past it lines drop, so a stuck collector cannot take the gateway down. */
export const LOG_BUFFER_MAX_BYTES = 16 * 1024 * 1024;

/** Stdout written asynchronously: node writes pipes synchronously and pino's sync destination sleeps
 * when the pipe is full, so a lagging reader would stall every request. Pending lines flush at exit. */
export function asyncStdout(): pino.DestinationStream {
  return pino.destination({ dest: 1, sync: false, maxLength: LOG_BUFFER_MAX_BYTES });
}

/** Structured JSON logs, secrets redacted by path, so a careless `log.info({ req })` cannot print a key. */
export function createLogger(options: { level?: string; destination?: NodeJS.WritableStream | pino.DestinationStream } = {}): Logger {
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
    options.destination,
  );
}

export const silentLogger: Logger = pino({ level: 'silent' });
