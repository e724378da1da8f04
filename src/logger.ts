import { pino, type Logger } from 'pino';

export type { Logger };

/**
 * At most this much log text waits for a slow reader of standard output; past it, lines are
 * dropped rather than the process's memory growing (a stuck log collector must not take the
 * gateway down).
 */
export const LOG_BUFFER_MAX_BYTES = 16 * 1024 * 1024;

/**
 * Standard output written asynchronously: lines written while a write is under way go out
 * together in the next one. Node writes to a pipe synchronously on Linux, and pino's own
 * synchronous destination sleeps 100 ms whenever the pipe is full, so a log reader that falls
 * behind (a busy collector, a test harness) would stall every request of the gateway; here it
 * only delays the logs. Pending lines are written out at exit (pino flushes its destinations).
 */
export function asyncStdout(): pino.DestinationStream {
  return pino.destination({ dest: 1, sync: false, maxLength: LOG_BUFFER_MAX_BYTES });
}

/**
 * Structured JSON logs. Whatever may hold a secret is redacted by path, so a careless
 * `log.info({ req })` still cannot print a key or a password.
 */
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

/** A logger that writes nothing, for tests and embedding. */
export const silentLogger: Logger = pino({ level: 'silent' });
