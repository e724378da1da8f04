import { closeSync, openSync, readSync } from 'node:fs';
import os from 'node:os';

/** The wal-index header: two copies of 48 bytes at the start of the -shm file. */
const HEADER_BYTES = 48;
/** Where the header keeps iChange, the count of committed transactions. */
const ICHANGE_OFFSET = 8;
const readU32 = os.endianness() === 'LE' ? (b: Buffer, at: number) => b.readUInt32LE(at) : (b: Buffer, at: number) => b.readUInt32BE(at);

/**
 * Tells whether another connection (another process, say) has committed to a SQLite database in
 * WAL mode, by reading the wal-index header from its -shm file: one pread and two compares, about
 * half of what `PRAGMA data_version` costs (1.3 µs against 2.3: `npx tsx bench/storeVersion.ts`),
 * which the key service pays once a turn of the event loop. The format is the one SQLite
 * documents for its unix and windows VFSes (https://sqlite.org/walformat.html, section 2.1):
 * every commit rewrites the header's two copies, second copy first, with iChange one more.
 *
 * Errs only towards "changed": a header whose two copies differ (a writer in the middle of
 * updating it) counts as a change, as does anything this process cannot account for. This
 * process's own commits are not changes (as with `PRAGMA data_version`) when made through
 * `ownWrite`, and only when the header moved by exactly that one commit.
 */
export class WalIndexWatch {
  private readonly now = Buffer.alloc(2 * HEADER_BYTES);
  private readonly seen = Buffer.alloc(HEADER_BYTES);
  private changes = 0;
  private broken = false;
  private closed = false;

  private constructor(private readonly fd: number) {
    this.read();
    this.remember();
  }

  /** A watch of `dbFile`'s -shm file, or null when there is none to read (not in WAL mode). */
  static open(dbFile: string): WalIndexWatch | null {
    let fd: number;
    try {
      fd = openSync(`${dbFile}-shm`, 'r');
    } catch {
      return null;
    }
    const watch = new WalIndexWatch(fd);
    if (watch.broken) {
      watch.close();
      return null;
    }
    return watch;
  }

  /**
   * A number that moves whenever another connection has committed since the last call; always
   * negative, so it cannot be mistaken for a `PRAGMA data_version`. Null once the file cannot be
   * read (the caller falls back to the pragma).
   */
  version(): number | null {
    if (!this.read()) return null;
    if (!this.unchanged()) {
      this.changes += 1;
      this.remember();
    }
    return -1 - this.changes;
  }

  /**
   * Runs a write of this process's own (one transaction, synchronous). Its commit is taken as
   * seen when nothing else moved the header since the last `version()` and the write moved it by
   * exactly one commit; otherwise the next `version()` reports a change.
   */
  ownWrite<T>(write: () => T): T {
    const before = this.read() && this.unchanged();
    const beforeCount = readU32(this.now, ICHANGE_OFFSET);
    const result = write();
    if (before && this.read() && this.settled() && readU32(this.now, ICHANGE_OFFSET) === (beforeCount + 1) >>> 0) this.remember();
    return result;
  }

  /** Closes the file; reads after it give null. Once only. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.broken = true;
    closeSync(this.fd);
  }

  /** Reads both copies of the header into `now`; false (for good) when it cannot. */
  private read(): boolean {
    if (this.broken) return false;
    try {
      if (readSync(this.fd, this.now, 0, this.now.length, 0) === this.now.length) return true;
    } catch {
      // gone or unreadable: fall through
    }
    this.broken = true;
    return false;
  }

  /** Whether the header just read is settled and the one last taken as seen. */
  private unchanged(): boolean {
    return this.settled() && this.now.compare(this.seen, 0, HEADER_BYTES, 0, HEADER_BYTES) === 0;
  }

  /** Takes the header just read as seen. */
  private remember(): void {
    this.now.copy(this.seen, 0, 0, HEADER_BYTES);
  }

  /** Whether the two copies agree (no writer is halfway through updating them). */
  private settled(): boolean {
    return this.now.compare(this.now, HEADER_BYTES, 2 * HEADER_BYTES, 0, HEADER_BYTES) === 0;
  }
}
