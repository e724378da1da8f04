import { randomUUID } from 'node:crypto';
import { SqliteListCounts } from '../attribution/sqliteListCounts.js';
import type { AttributionStore } from '../../../ports/attribution.js';
import path from 'node:path';
import Database from 'better-sqlite3';
import { makeDataDir, preparePrivateFile, storeOpenError } from '../dataFiles.js';
import { nextDefaultName } from './apiKeyValue.js';
import {
  DEFAULT_NAME_PATTERN,
  KeyLimitReachedError,
  KeyNameTakenError,
  scopesFromColumn,
  scopesToColumn,
  UserExistsError,
  type FoundKey,
  type KeyChanges,
  type KeyRecord,
  type KeyStore,
  type NewKey,
  type NewUser,
  type UsageCount,
  type UserRecord,
} from './store.js';
import type { ApiKeyUsageModel } from '../../../ports/backend.js';
import { promised } from '../../../shared/promised.js';

interface UserRow {
  id: string;
  username: string;
  domain: string;
  password_hash: string;
  is_admin: number;
  created_at: number;
}

interface KeyRow {
  id: string;
  user_id: string;
  name: string;
  created_at: number;
  expires_at: number | null;
  last_used_at: number | null;
  scopes: string | null;
  rate_limit_per_second: number | null;
  daily_quota: number | null;
}

interface UpdateParams {
  id: string; owner: string | null; name: string | null; setScopes: number; scopes: string | null;
  setRate: number; rate: number | null; setQuota: number; quota: number | null;
}

type JoinedRow = KeyRow & { [K in keyof UserRow as `u_${K}`]: UserRow[K] };

const KEY_COLUMNS = 'id, user_id, name, created_at, expires_at, last_used_at, scopes, rate_limit_per_second, daily_quota';
const JOINED_COLUMNS = `k.id, k.user_id, k.name, k.created_at, k.expires_at, k.last_used_at, k.scopes, k.rate_limit_per_second, k.daily_quota,
  u.id AS u_id, u.username AS u_username, u.domain AS u_domain,
  u.password_hash AS u_password_hash, u.is_admin AS u_is_admin, u.created_at AS u_created_at`;
/** Columns added after the first release, with their types: NULL in a row made before. */
const KEY_COLUMNS_ADDED = [
  ['scopes', 'TEXT'], ['previous_hash', 'TEXT'], ['previous_until', 'INTEGER'], ['rate_limit_per_second', 'INTEGER'], ['daily_quota', 'INTEGER'],
] as const;

const toUser = (row: UserRow): UserRecord => ({
  id: row.id,
  username: row.username,
  domain: row.domain === '' ? null : row.domain,
  passwordHash: row.password_hash,
  isAdmin: row.is_admin === 1,
  createdAt: new Date(row.created_at),
});

const toKey = (row: KeyRow): KeyRecord => ({
  id: row.id,
  userId: row.user_id,
  name: row.name,
  createdAt: new Date(row.created_at),
  expiresAt: row.expires_at === null ? null : new Date(row.expires_at),
  lastUsedAt: row.last_used_at === null ? null : new Date(row.last_used_at),
  scopes: scopesFromColumn(row.scopes),
  rateLimitPerSecond: row.rate_limit_per_second,
  dailyQuota: row.daily_quota,
});

const joined = (row: JoinedRow): { key: KeyRecord; user: UserRecord } => ({
  key: toKey(row),
  user: toUser({
    id: row.u_id,
    username: row.u_username,
    domain: row.u_domain,
    password_hash: row.u_password_hash,
    is_admin: row.u_is_admin,
    created_at: row.u_created_at,
  }),
});

const isUniqueViolation = (error: unknown): boolean =>
  error instanceof Error && (error as { code?: string }).code === 'SQLITE_CONSTRAINT_UNIQUE';

/** Users and keys in one SQLite file (WAL, synchronous=FULL so an acknowledged create survives a
 * crash or power loss). Writes run in BEGIN IMMEDIATE transactions, so processes sharing the file
 * serialise on them and the default key name cannot be handed out twice. */
export class SqliteKeyStore implements KeyStore {
  private readonly db: Database.Database;
  private readonly statements;

  constructor(file: string) {
    makeDataDir(path.dirname(file));
    try {
      preparePrivateFile(file);
      this.db = new Database(file);
    } catch (error) {
      throw storeOpenError(file, error);
    }
    try {
      // a damaged file or a file of another kind fails here, not at the open
      this.db.pragma('journal_mode = WAL');
      this.db.pragma('synchronous = FULL');
      this.db.pragma('foreign_keys = ON');
      this.db.pragma('busy_timeout = 5000');
      this.createTables();
    } catch (error) {
      this.db.close();
      throw storeOpenError(file, error);
    }
    const db = this.db;
    this.statements = {
      countUsers: db.prepare<[], { n: number }>('SELECT count(*) AS n FROM users'),
      insertUser: db.prepare(
        'INSERT INTO users (id, username, domain, password_hash, is_admin, created_at) VALUES (?, ?, ?, ?, ?, ?)',
      ),
      findUser: db.prepare<[string, string], UserRow>('SELECT * FROM users WHERE username = ? AND domain = ?'),
      countKeys: db.prepare<[string], number>('SELECT count(*) FROM api_keys WHERE user_id = ?').pluck(),
      defaultNames: db.prepare<[string, string], { name: string }>(
        'SELECT name FROM api_keys WHERE user_id = ? AND name LIKE ?',
      ),
      insertKey: db.prepare(
        `INSERT INTO api_keys (id, user_id, name, key_hash, created_at, expires_at, scopes, rate_limit_per_second, daily_quota)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      listKeys: db.prepare<[string], KeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE user_id = ? ORDER BY name`),
      findKey: db.prepare<{ hash: string }, JoinedRow & { is_current: number; previous_until: number | null }>(
        `SELECT ${JOINED_COLUMNS}, k.key_hash = @hash AS is_current, k.previous_until
           FROM api_keys k JOIN users u ON u.id = k.user_id WHERE k.key_hash = @hash OR k.previous_hash = @hash`,
      ),
      findKeyById: db.prepare<[string], JoinedRow>(
        `SELECT ${JOINED_COLUMNS} FROM api_keys k JOIN users u ON u.id = k.user_id WHERE k.id = ?`,
      ),
      rotate: db.prepare<{ id: string; owner: string | null; hash: string; until: number | null }, KeyRow>(
        `UPDATE api_keys SET previous_hash = CASE WHEN @until IS NULL THEN NULL ELSE key_hash END,
                previous_until = @until, key_hash = @hash
          WHERE id = @id AND (@owner IS NULL OR user_id = @owner) RETURNING ${KEY_COLUMNS}`,
      ),
      update: db.prepare<UpdateParams, KeyRow>(
        `UPDATE api_keys SET name = coalesce(@name, name), scopes = CASE WHEN @setScopes = 1 THEN @scopes ELSE scopes END,
                rate_limit_per_second = CASE WHEN @setRate = 1 THEN @rate ELSE rate_limit_per_second END,
                daily_quota = CASE WHEN @setQuota = 1 THEN @quota ELSE daily_quota END
          WHERE id = @id AND (@owner IS NULL OR user_id = @owner) RETURNING ${KEY_COLUMNS}`,
      ),
      deleteAny: db.prepare('DELETE FROM api_keys WHERE id = ?'),
      deleteOwn: db.prepare('DELETE FROM api_keys WHERE id = ? AND user_id = ?'),
      touch: db.prepare('UPDATE api_keys SET last_used_at = ? WHERE id = ?'),
      addUsage: db.prepare<UsageCount, UsageCount>(
        `INSERT INTO key_usage (key_id, day, requests, refused) SELECT @keyId, @day, @requests, @refused WHERE EXISTS (SELECT 1 FROM api_keys WHERE id = @keyId)
         ON CONFLICT (key_id, day) DO UPDATE SET requests = requests + excluded.requests, refused = refused + excluded.refused
         RETURNING key_id AS keyId, day, requests, refused`,
      ),
      readUsage: db.prepare<[string, string], ApiKeyUsageModel>(
        'SELECT day, requests, refused FROM key_usage WHERE key_id = ? AND day >= ? AND requests > 0 ORDER BY day DESC',
      ),
      listUsers: db.prepare<[], UserRow>('SELECT * FROM users ORDER BY username, domain'),
      setPassword: db.prepare('UPDATE users SET password_hash = ? WHERE id = ?'),
      deleteUser: db.prepare('DELETE FROM users WHERE id = ?'),
      dataVersion: db.prepare<[], number>('PRAGMA data_version').pluck(),
    };
  }

  private createTables(): void {
    this.db.exec(`
      CREATE TABLE IF NOT EXISTS users (
        id TEXT PRIMARY KEY,
        username TEXT NOT NULL,
        domain TEXT NOT NULL DEFAULT '',
        password_hash TEXT NOT NULL,
        is_admin INTEGER NOT NULL DEFAULT 0,
        created_at INTEGER NOT NULL,
        UNIQUE (username, domain)
      );
      CREATE TABLE IF NOT EXISTS api_keys (
        id TEXT PRIMARY KEY,
        user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        key_hash TEXT NOT NULL UNIQUE,
        created_at INTEGER NOT NULL,
        expires_at INTEGER,
        last_used_at INTEGER,
        UNIQUE (user_id, name)
      );
      CREATE TABLE IF NOT EXISTS key_usage (
        key_id TEXT NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
        day TEXT NOT NULL,
        requests INTEGER NOT NULL DEFAULT 0,
        refused INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (key_id, day)
      );
    `);
    this.addKeyColumns();
  }

  /** Scopes and rotation, added to a store made before them: existing keys read as all scopes, not rotated. */
  private addKeyColumns(): void {
    this.db.transaction(() => {
      const have = new Set(this.db.prepare<[], { name: string }>('PRAGMA table_info(api_keys)').all().map((c) => c.name));
      for (const [column, type] of KEY_COLUMNS_ADDED) {
        if (!have.has(column)) this.db.exec(`ALTER TABLE api_keys ADD COLUMN ${column} ${type}`);
      }
      this.db.exec('CREATE UNIQUE INDEX IF NOT EXISTS api_keys_previous_hash ON api_keys (previous_hash)');
    }).immediate();
  }

  /** SQLite's data_version: it moves when another connection, in any process, commits; not for this one's writes. */
  dataVersion(): number {
    return this.statements.dataVersion.get()!;
  }

  /** Counts of lists served and used, in this file. */
  attribution(): AttributionStore {
    return new SqliteListCounts(this.db);
  }

  async migrate(): Promise<void> {
    // the tables are made in the constructor, before the statements that need them
  }

  countUsers(): Promise<number> {
    return promised(() => this.statements.countUsers.get()?.n ?? 0);
  }

  createUser(user: NewUser): Promise<UserRecord> {
    return promised(() => {
      const row: UserRow = {
        id: randomUUID(),
        username: user.username,
        domain: user.domain ?? '',
        password_hash: user.passwordHash,
        is_admin: user.isAdmin ? 1 : 0,
        created_at: Date.now(),
      };
      try {
        this.statements.insertUser.run(row.id, row.username, row.domain, row.password_hash, row.is_admin, row.created_at);
      } catch (error) {
        if (isUniqueViolation(error)) throw new UserExistsError(`user ${user.username} exists`);
        throw error;
      }
      return toUser(row);
    });
  }

  findUser(username: string, domain: string | null): Promise<UserRecord | null> {
    return promised(() => {
      const row = this.statements.findUser.get(username, domain ?? '');
      return row ? toUser(row) : null;
    });
  }

  createKey(key: NewKey): Promise<KeyRecord> {
    return promised(() => {
      const insert = this.db.transaction((): KeyRow => {
        // counted inside the write transaction (BEGIN IMMEDIATE): another process's create waits for this one's commit
        if (key.maxKeysPerUser !== undefined && this.statements.countKeys.get(key.userId)! >= key.maxKeysPerUser) {
          throw new KeyLimitReachedError(`the user has ${key.maxKeysPerUser} keys`);
        }
        const name =
          key.name ??
          nextDefaultName(this.statements.defaultNames.all(key.userId, DEFAULT_NAME_PATTERN).map((r) => r.name));
        const row: KeyRow = {
          id: randomUUID(),
          user_id: key.userId,
          name,
          created_at: Date.now(),
          expires_at: key.expiresAt?.getTime() ?? null,
          last_used_at: null,
          scopes: scopesToColumn(key.scopes),
          rate_limit_per_second: key.rateLimitPerSecond ?? null,
          daily_quota: key.dailyQuota ?? null,
        };
        this.statements.insertKey.run(
          row.id, row.user_id, row.name, key.hash, row.created_at, row.expires_at, row.scopes, row.rate_limit_per_second, row.daily_quota,
        );
        return row;
      });
      try {
        return toKey(insert.immediate());
      } catch (error) {
        if (isUniqueViolation(error)) throw new KeyNameTakenError(`the name ${key.name} is taken`);
        throw error;
      }
    });
  }

  listKeys(userId: string): Promise<KeyRecord[]> {
    return promised(() => this.statements.listKeys.all(userId).map(toKey));
  }

  findKeyByHash(hash: string): Promise<FoundKey | null> {
    return promised(() => {
      const row = this.statements.findKey.get({ hash });
      if (!row) return null;
      const found: FoundKey = joined(row);
      if (row.is_current !== 1) found.previousUntil = new Date(row.previous_until ?? 0);
      return found;
    });
  }

  findKeyById(id: string): Promise<{ key: KeyRecord; user: UserRecord } | null> {
    return promised(() => {
      const row = this.statements.findKeyById.get(id);
      return row ? joined(row) : null;
    });
  }

  rotateKey(id: string, ownerId: string | null, hash: string, previousUntil: Date | null): Promise<KeyRecord | null> {
    return promised(() => {
      const row = this.statements.rotate.get({ id, owner: ownerId, hash, until: previousUntil?.getTime() ?? null });
      return row ? toKey(row) : null;
    });
  }

  updateKey(id: string, ownerId: string | null, changes: KeyChanges): Promise<KeyRecord | null> {
    return promised(() => {
      try {
        const row = this.statements.update.get({
          id, owner: ownerId, name: changes.name ?? null,
          setScopes: changes.scopes !== undefined ? 1 : 0, scopes: scopesToColumn(changes.scopes ?? null),
          setRate: changes.rateLimitPerSecond !== undefined ? 1 : 0, rate: changes.rateLimitPerSecond ?? null,
          setQuota: changes.dailyQuota !== undefined ? 1 : 0, quota: changes.dailyQuota ?? null,
        });
        return row ? toKey(row) : null;
      } catch (error) {
        if (isUniqueViolation(error)) throw new KeyNameTakenError(`the name ${changes.name} is taken`);
        throw error;
      }
    });
  }

  deleteKey(id: string, ownerId: string | null): Promise<boolean> {
    return promised(() => {
      const result = ownerId === null ? this.statements.deleteAny.run(id) : this.statements.deleteOwn.run(id, ownerId);
      return result.changes > 0;
    });
  }

  touchKey(id: string, at: Date): Promise<void> {
    return promised(() => {
      this.statements.touch.run(at.getTime(), id);
    });
  }

  addUsage(counts: readonly UsageCount[]): Promise<UsageCount[]> {
    return promised(() => {
      if (counts.length === 0) return [];
      return this.db.transaction(() => counts.flatMap((count) => this.statements.addUsage.get(count) ?? [])).immediate();
    });
  }

  readUsage(keyId: string, sinceDay: string): Promise<ApiKeyUsageModel[]> {
    return promised(() => this.statements.readUsage.all(keyId, sinceDay));
  }

  listUsers(): Promise<UserRecord[]> {
    return promised(() => this.statements.listUsers.all().map(toUser));
  }

  setPasswordHash(userId: string, passwordHash: string): Promise<boolean> {
    return promised(() => this.statements.setPassword.run(passwordHash, userId).changes > 0);
  }

  deleteUser(userId: string): Promise<number | null> {
    return promised(() => {
      const remove = this.db.transaction((): number | null => {
        const keys = this.statements.countKeys.get(userId)!;
        return this.statements.deleteUser.run(userId).changes > 0 ? keys : null;
      });
      return remove.immediate();
    });
  }

  close(): Promise<void> {
    return promised(() => {
      if (!this.db.open) return;
      this.db.close();
    });
  }

  /** PRAGMA integrity_check, for the crash-safety tests. */
  integrityCheck(): string {
    return String(this.db.pragma('integrity_check', { simple: true }));
  }
}
