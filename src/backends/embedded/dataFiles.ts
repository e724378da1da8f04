import { chmodSync, closeSync, existsSync, mkdirSync, openSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

/** A store that cannot be opened at start-up: one line for the terminal (what, where, why), no password. */
export class StoreOpenError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StoreOpenError';
  }
}

/** A write kept waiting on another process's write lock too long: nothing written, so it may be sent again. */
export class StoreBusyError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StoreBusyError';
  }
}

/** A write refused as past RECS_MAX_ITEMS, counting every process's items (ItemCap); nothing written. */
export class StoreFullError extends Error {
  constructor(
    readonly fresh: number,
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

/** Makes DATA_DIR 0700 when missing; an existing directory keeps its mode, its owner's choice. */
export function makeDataDir(dir: string): void {
  if (existsSync(dir)) return;
  try {
    makeDirs(dir, DIR_MODE);
  } catch (error) {
    throw new StoreOpenError(`cannot create DATA_DIR ${dir}: ${systemReason(error)}`, { cause: error });
  }
}

/** mkdir -p, one directory at a time: mkdirSync's `recursive` loops for ever on Node 20 where a
 * parent answers ENOENT to a mkdir in it (under /proc). */
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

/** Makes an SQLite file 0600 before SQLite opens it: SQLite would make it, and its -wal and -shm, readable by all. */
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
