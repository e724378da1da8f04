import { chmodSync, closeSync, existsSync, mkdirSync, openSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

/**
 * A store that cannot be opened or reached at start-up: its message is one line fit for the
 * terminal (what, where, why), with no password in it.
 */
export class StoreOpenError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StoreOpenError';
  }
}

/**
 * A write that another process kept waiting on the store's write lock (an import's final move,
 * say) for longer than a write waits: nothing of it was written, and it may be sent again.
 */
export class StoreBusyError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StoreBusyError';
  }
}

/**
 * A write the store refused because the items it names for the first time would take the items
 * the store holds (named by any process's events or records) past RECS_MAX_ITEMS: checked inside
 * the write's transaction, under the write lock, so replicas sharing the store cannot pass it
 * together. Nothing of the call was written.
 */
export class StoreFullError extends Error {
  constructor(
    /** Distinct item ids of the call the store did not hold. */
    readonly fresh: number,
    /** Distinct items the store held before the call. */
    readonly held: number,
    readonly maxItems: number,
  ) {
    super(`the call names ${fresh} ${fresh === 1 ? 'item' : 'items'} the store does not hold yet, and it holds ${held} of at most ${maxItems}`);
    this.name = 'StoreFullError';
  }
}

/** DATA_DIR's files hold password hashes and key hashes: the owner's alone. */
const FILE_MODE = 0o600;
const DIR_MODE = 0o700;

/**
 * Makes DATA_DIR (0700: the files in it are the owner's business) when it is missing; an existing
 * directory keeps its mode, which is its owner's choice.
 */
export function makeDataDir(dir: string): void {
  if (existsSync(dir)) return;
  try {
    makeDirs(dir, DIR_MODE);
  } catch (error) {
    throw new StoreOpenError(`cannot create DATA_DIR ${dir}: ${systemReason(error)}`, { cause: error });
  }
}

/**
 * mkdir -p, one directory at a time from the first that exists. Not mkdirSync's `recursive`: on
 * Node 20 it loops for ever, at full CPU, where a parent that exists answers ENOENT to a mkdir in
 * it (DATA_DIR=/proc/x: the start hung, deaf to SIGTERM, instead of stopping with one line).
 */
function makeDirs(dir: string, mode: number): void {
  const missing: string[] = [];
  for (let at = resolve(dir); !existsSync(at); at = dirname(at)) {
    missing.push(at);
    if (dirname(at) === at) break;
  }
  for (const path of missing.reverse()) {
    try {
      mkdirSync(path, { mode });
    } catch (error) {
      // made meanwhile by another process starting on the same DATA_DIR
      if ((error as { code?: string } | null)?.code !== 'EEXIST' || !statSync(path).isDirectory()) throw error;
    }
  }
}

/**
 * Makes an SQLite file 0600 before SQLite opens it: SQLite creates a database with 0644 (less the
 * umask), readable by every local user, and gives its -wal and -shm files the database's mode.
 * A file left 0644 by an earlier version is tightened too, when this user may.
 */
export function preparePrivateFile(file: string): void {
  try {
    closeSync(openSync(file, 'a', FILE_MODE));
  } catch (error) {
    throw new StoreOpenError(`cannot open ${file}: ${systemReason(error)}`, { cause: error });
  }
  for (const candidate of [file, `${file}-wal`, `${file}-shm`]) {
    try {
      if ((statSync(candidate).mode & 0o077) !== 0) chmodSync(candidate, FILE_MODE);
    } catch {
      // missing, or another user's file: SQLite opens it as it is
    }
  }
}

/** An SQLite or file-system failure on `file`, as one line. */
export function storeOpenError(file: string, error: unknown): StoreOpenError {
  if (error instanceof StoreOpenError) return error;
  return new StoreOpenError(`cannot open ${file}: ${sqliteReason(error)}`, { cause: error });
}

function sqliteReason(error: unknown): string {
  switch ((error as { code?: string } | null)?.code) {
    case 'SQLITE_NOTADB':
      return 'not an SQLite database (a damaged file, or another file in its place)';
    case 'SQLITE_CORRUPT':
      return 'the database is damaged';
    case 'SQLITE_CANTOPEN':
      return 'SQLite cannot open it (check that the file and DATA_DIR are readable and writable by this user)';
    case 'SQLITE_READONLY':
      return 'the file or its directory is read-only for this user';
    case 'SQLITE_BUSY':
      return 'locked by another process';
    case 'SQLITE_FULL':
      return 'the disk is full';
    default:
      return systemReason(error);
  }
}

/** A Node system error without its stack: "permission denied", "no such file or directory"... */
export function systemReason(error: unknown): string {
  const code = (error as { code?: string } | null)?.code;
  switch (code) {
    case 'EACCES':
    case 'EPERM':
      return 'permission denied';
    case 'ENOENT':
      return 'no such file or directory';
    case 'ENOTDIR':
      return 'a part of the path is not a directory';
    case 'EISDIR':
      return 'it is a directory, not a file';
    case 'EROFS':
      return 'read-only file system';
    case 'ENOSPC':
      return 'the disk is full';
    default:
      return error instanceof Error ? error.message : String(error);
  }
}
