import { writeFileSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { WalIndexWatch } from '../../src/backends/embedded/keys/walIndex.js';
import { tempDir } from '../helpers/stores.js';

/** A real SQLite file in WAL mode, written by connections of its own as other processes would. */
describe('the wal-index header watch', () => {
  const cleanups: (() => void)[] = [];
  afterEach(() => {
    for (const cleanup of cleanups.splice(0).reverse()) cleanup();
  });

  function database(): { file: string; connect: () => Database.Database } {
    const { dir, remove } = tempDir();
    cleanups.push(() => void remove());
    const file = path.join(dir, 'w.db');
    const connect = () => {
      const db = new Database(file);
      db.pragma('journal_mode = WAL');
      cleanups.push(() => db.close());
      return db;
    };
    connect().exec('CREATE TABLE t (x INTEGER)');
    return { file, connect };
  }

  function watchOf(file: string): WalIndexWatch {
    const watch = WalIndexWatch.open(file)!;
    expect(watch).not.toBeNull();
    cleanups.push(() => watch.close());
    return watch;
  }

  it("moves on another connection's commit, and only then", () => {
    const { file, connect } = database();
    const mine = connect();
    const other = connect();
    const watch = watchOf(file);
    const start = watch.version()!;
    expect(start).toBeLessThan(0);
    mine.prepare('SELECT count(*) FROM t').get();
    expect(watch.version()).toBe(start);
    other.exec('INSERT INTO t VALUES (1)');
    const moved = watch.version()!;
    expect(moved).not.toBe(start);
    expect(watch.version()).toBe(moved);
    // a transaction that rolls back commits nothing
    other.exec('BEGIN IMMEDIATE; INSERT INTO t VALUES (2); ROLLBACK');
    expect(watch.version()).toBe(moved);
  });

  it("does not move for this connection's own writes, unless another's commit came with one", () => {
    const { file, connect } = database();
    const mine = connect();
    const other = connect();
    const watch = watchOf(file);
    const start = watch.version()!;
    watch.ownWrite(() => mine.exec('INSERT INTO t VALUES (1)'));
    watch.ownWrite(() => mine.exec('INSERT INTO t VALUES (2)'));
    expect(watch.version()).toBe(start);
    // another commit just before this connection's write: both are counted as a change
    watch.ownWrite(() => {
      other.exec('INSERT INTO t VALUES (3)');
      mine.exec('INSERT INTO t VALUES (4)');
    });
    const moved = watch.version()!;
    expect(moved).not.toBe(start);
    // another commit not yet looked at when this connection writes: still a change
    other.exec('INSERT INTO t VALUES (5)');
    watch.ownWrite(() => mine.exec('INSERT INTO t VALUES (6)'));
    expect(watch.version()).not.toBe(moved);
  });

  it('counts a header whose two copies differ (a writer halfway) as a change, every time it is read so', () => {
    const { dir, remove } = tempDir();
    cleanups.push(() => void remove());
    const file = path.join(dir, 'fake.db');
    const header = Buffer.alloc(136, 7);
    writeFileSync(`${file}-shm`, header);
    const watch = watchOf(file);
    const start = watch.version()!;
    expect(watch.version()).toBe(start);
    header[60] = 8; // the second copy's iChange
    writeFileSync(`${file}-shm`, header);
    const first = watch.version()!;
    expect(first).not.toBe(start);
    expect(watch.version()).not.toBe(first);
  });

  it('is not there without a -shm file to read, and gives up on one it can no longer read whole', () => {
    const { dir, remove } = tempDir();
    cleanups.push(() => void remove());
    const file = path.join(dir, 'none.db');
    expect(WalIndexWatch.open(file)).toBeNull();
    writeFileSync(`${file}-shm`, Buffer.alloc(136));
    const watch = watchOf(file);
    expect(watch.version()).toBeLessThan(0);
    writeFileSync(`${file}-shm`, Buffer.alloc(10));
    expect(watch.version()).toBeNull();
  });
});
