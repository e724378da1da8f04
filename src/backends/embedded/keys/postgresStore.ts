import { randomUUID } from 'node:crypto';
import { LIST_COUNTS_TABLES, PostgresListCounts } from '../attribution/postgresListCounts.js';
import type { AttributionStore } from '../../../ports/attribution.js';
import pg from 'pg';
import { StoreOpenError } from '../dataFiles.js';
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

export interface PostgresKeyStoreOptions {
  connectionString: string;
  /** A schema to keep the tables in (created when missing); default: the connection's search_path. */
  schema?: string;
  /** Pool size; default 10. */
  max?: number;
}

interface UserRow {
  id: string;
  username: string;
  domain: string;
  password_hash: string;
  is_admin: boolean;
  created_at: Date;
}

interface KeyRow {
  id: string;
  user_id: string;
  name: string;
  created_at: Date;
  expires_at: Date | null;
  last_used_at: Date | null;
  scopes: string | null;
  rate_limit_per_second: number | null;
  daily_quota: number | null;
}

const toUser = (row: UserRow): UserRecord => ({
  id: row.id,
  username: row.username,
  domain: row.domain === '' ? null : row.domain,
  passwordHash: row.password_hash,
  isAdmin: row.is_admin,
  createdAt: row.created_at,
});

const toKey = (row: KeyRow): KeyRecord => ({
  id: row.id,
  userId: row.user_id,
  name: row.name,
  createdAt: row.created_at,
  expiresAt: row.expires_at,
  lastUsedAt: row.last_used_at,
  scopes: scopesFromColumn(row.scopes),
  rateLimitPerSecond: row.rate_limit_per_second,
  dailyQuota: row.daily_quota,
});

const isUniqueViolation = (error: unknown): boolean => (error as { code?: string } | null)?.code === '23505';

// any constant will do: it only has to be the same in every gateway process
const MIGRATION_LOCK = 7_311_923_001;

/** A pool on DATABASE_URL in `schema`; an idle client's error (a restarted server) must not crash the process. */
export function openPool(options: { connectionString: string; schema?: string | undefined; max: number; lockTimeoutMs?: number | undefined }): pg.Pool {
  if (options.schema !== undefined && !/^[a-z_][a-z0-9_]{0,62}$/.test(options.schema)) {
    throw new Error('schema must be a lower-case SQL identifier');
  }
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.max,
    ...(options.schema ? { options: `-c search_path=${options.schema}` } : {}),
    // PostgreSQL's lock_timeout for the pool's sessions: a statement waiting longer on a lock fails (55P03)
    ...(options.lockTimeoutMs !== undefined ? { lock_timeout: options.lockTimeoutMs } : {}),
  });
  pool.on('error', () => undefined);
  return pool;
}

/** host:port/database of a postgres:// URL, without its user and password. */
export function describeDatabase(connectionString: string): string {
  try {
    const url = new URL(connectionString);
    return `${url.hostname || 'localhost'}:${url.port || '5432'}${url.pathname.length > 1 ? url.pathname : ''}`;
  } catch {
    return 'DATABASE_URL';
  }
}

/** Why PostgreSQL refused: the server's message (never the password), or the network's failure. */
export function postgresReason(error: unknown): string {
  const code = (error as { code?: string } | null)?.code ?? '';
  // invalid_schema_name: "no schema has been selected to create in" says nothing of why
  if (code === '3F000') return `${(error as Error).message}: the schema DATABASE_URL's search_path names does not exist; create it first (CREATE SCHEMA <name>)`;
  if (/^[0-9A-Z]{5}$/.test(code)) return (error as Error).message;
  switch (code) {
    case 'ECONNREFUSED':
      return 'connection refused (is PostgreSQL running there?)';
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return 'host not found';
    case 'ETIMEDOUT':
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return 'host unreachable';
    case 'ECONNRESET':
      return 'the connection was closed by the server';
    default:
      // pg's own messages (a bad SSL setting, a server that is no PostgreSQL) hold no credentials
      return error instanceof Error ? error.message : String(error);
  }
}

const KEY_COLUMNS = 'id, user_id, name, created_at, expires_at, last_used_at, scopes, rate_limit_per_second, daily_quota';
const JOINED_KEY_COLUMNS = 'k.id, k.user_id, k.name, k.created_at, k.expires_at, k.last_used_at, k.scopes, k.rate_limit_per_second, k.daily_quota, row_to_json(u) AS u';
/** Columns added after the first release, with their types: NULL in a row made before (all scopes, not rotated). */
const KEY_COLUMNS_ADDED = [
  ['scopes', 'text'], ['previous_hash', 'text'], ['previous_until', 'timestamptz'], ['rate_limit_per_second', 'integer'], ['daily_quota', 'integer'],
] as const;

type JoinedRow = KeyRow & { u: UserRow };
// row_to_json gives timestamps as text
const joined = (row: JoinedRow): { key: KeyRecord; user: UserRecord } => ({ key: toKey(row), user: toUser({ ...row.u, created_at: new Date(row.u.created_at) }) });

/** The triggers that move key_changes (createChangeTriggers), and what each counts. */
const CHANGE_TRIGGERS = [
  { table: 'users', name: 'users_changed', events: 'INSERT OR UPDATE OR DELETE OR TRUNCATE' },
  { table: 'api_keys', name: 'api_keys_changed', events: 'INSERT OR DELETE OR TRUNCATE OR UPDATE OF id, user_id, name, key_hash, expires_at' },
] as const;

/** The count and whether both triggers are in place, in one round trip prepared once a connection;
 * to_regclass keeps no stale oid in the plan. */
const READ_CHANGE_COUNT = `SELECT (SELECT version FROM key_changes WHERE id = 1) AS version,
  (SELECT count(*) = ${CHANGE_TRIGGERS.length} FROM pg_trigger
    WHERE (${CHANGE_TRIGGERS.map(({ table, name }) => `(tgrelid = to_regclass('${table}') AND tgname = '${name}')`).join(' OR ')})
      AND tgenabled = 'A' AND tgfoid = to_regprocedure('key_changes_count()')) AS armed`;

/** Users and keys in PostgreSQL, shared by several gateway processes. */
export class PostgresKeyStore implements KeyStore {
  private readonly pool: pg.Pool;
  private readonly schema: string | undefined;
  /** host:port/database, for messages: never the URL, which may hold a password. */
  private readonly where: string;

  constructor(options: PostgresKeyStoreOptions) {
    this.pool = openPool({ connectionString: options.connectionString, schema: options.schema, max: options.max ?? 10 });
    this.schema = options.schema;
    this.where = describeDatabase(options.connectionString);
  }

  /** Creates the tables when missing; StoreOpenError (one line, no password) when PostgreSQL cannot be used. */
  async migrate(): Promise<void> {
    try {
      await this.createTables();
    } catch (error) {
      throw new StoreOpenError(`cannot use PostgreSQL at ${this.where} (DATABASE_URL): ${postgresReason(error)}`, { cause: error });
    }
  }

  private async createTables(): Promise<void> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
      if (this.schema) await client.query(`CREATE SCHEMA IF NOT EXISTS ${this.schema}`);
      await client.query(`
        CREATE TABLE IF NOT EXISTS users (
          id uuid PRIMARY KEY,
          username text NOT NULL,
          domain text NOT NULL DEFAULT '',
          password_hash text NOT NULL,
          is_admin boolean NOT NULL DEFAULT false,
          created_at timestamptz NOT NULL,
          UNIQUE (username, domain)
        );
        CREATE TABLE IF NOT EXISTS api_keys (
          id uuid PRIMARY KEY,
          user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
          name text COLLATE "C" NOT NULL,
          key_hash text NOT NULL UNIQUE,
          created_at timestamptz NOT NULL,
          expires_at timestamptz,
          last_used_at timestamptz,
          UNIQUE (user_id, name)
        );
        CREATE TABLE IF NOT EXISTS key_usage (
          key_id uuid NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
          day date NOT NULL,
          requests bigint NOT NULL DEFAULT 0,
          refused bigint NOT NULL DEFAULT 0,
          PRIMARY KEY (key_id, day)
        );
        CREATE TABLE IF NOT EXISTS key_changes (
          id smallint PRIMARY KEY CHECK (id = 1),
          version bigint NOT NULL
        );
        -- a row made anew (an operator deleted it) counts on from the clock in µs, past any
        -- count before it: a gateway that kept credentials under an earlier count never meets it again
        INSERT INTO key_changes (id, version) VALUES (1, (extract(epoch FROM clock_timestamp()) * 1000000)::bigint)
          ON CONFLICT (id) DO NOTHING;
        CREATE OR REPLACE FUNCTION key_changes_count() RETURNS trigger LANGUAGE plpgsql
          SET search_path FROM CURRENT AS $$
          BEGIN
            UPDATE key_changes SET version = version + 1 WHERE id = 1;
            RETURN NULL;
          -- dropped by an operator: readers trust nothing until a start makes it again (readDataVersion),
          -- and a change to users or keys must not fail for it
          EXCEPTION WHEN undefined_table THEN
            RETURN NULL;
          END $$;`);
      await client.query(LIST_COUNTS_TABLES);
      await this.addKeyColumns(client);
      await this.createChangeTriggers(client);
      await client.query('COMMIT');
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }

  /** Adds what a store made before scopes and rotation lacks; ALTER only then, as it locks the table against readers. */
  private async addKeyColumns(client: pg.PoolClient): Promise<void> {
    const { rows } = await client.query<{ column_name: string }>(
      `SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'api_keys'`,
    );
    const have = new Set(rows.map((row) => row.column_name));
    const missing = KEY_COLUMNS_ADDED.filter(([column]) => !have.has(column));
    if (missing.length === 0) return;
    await client.query(`ALTER TABLE api_keys ${missing.map(([column, type]) => `ADD COLUMN ${column} ${type}`).join(', ')}`);
    await client.query('CREATE UNIQUE INDEX IF NOT EXISTS api_keys_previous_hash ON api_keys (previous_hash)');
  }

  /** Triggers counting every change to users and keys, whoever makes it (ALWAYS: a restore too);
   * mended only where needed, as changing one locks its table against every reader. */
  private async createChangeTriggers(client: pg.PoolClient): Promise<void> {
    const { rows } = await client.query<{ tgname: string; table: string; tgenabled: string; ours: boolean }>(
      `SELECT t.tgname, c.relname AS table, t.tgenabled, t.tgfoid = 'key_changes_count()'::regprocedure AS ours
         FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
        WHERE t.tgrelid IN ('users'::regclass, 'api_keys'::regclass) AND NOT t.tgisinternal`,
    );
    for (const { table, name, events } of CHANGE_TRIGGERS) {
      const found = rows.find((row) => row.tgname === name && row.table === table);
      if (found !== undefined && !found.ours) await client.query(`DROP TRIGGER ${name} ON ${table}`);
      if (found === undefined || !found.ours) {
        await client.query(`CREATE TRIGGER ${name} AFTER ${events} ON ${table} FOR EACH STATEMENT EXECUTE FUNCTION key_changes_count()`);
      }
      if (found === undefined || !found.ours || found.tgenabled !== 'A') await client.query(`ALTER TABLE ${table} ENABLE ALWAYS TRIGGER ${name}`);
    }
  }

  /** The count of changes; NaN while a trigger or the row is missing, so that nothing is kept. It
   * starts from the clock, so that a row made again never repeats a count read before. */
  async readDataVersion(): Promise<number> {
    try {
      const { rows } = await this.pool.query<{ version: string | null; armed: boolean }>({ name: 'recs-gateway-key-changes', text: READ_CHANGE_COUNT });
      const row = rows[0];
      return row?.armed === true && row.version !== null ? Number(row.version) : Number.NaN;
    } catch (error) {
      // the table dropped: nothing is trusted (every credential looked up), nothing fails for it
      if ((error as { code?: string } | null)?.code === '42P01') return Number.NaN;
      throw error;
    }
  }

  async countUsers(): Promise<number> {
    const { rows } = await this.pool.query<{ n: string }>('SELECT count(*) AS n FROM users');
    return Number(rows[0]?.n ?? 0);
  }

  async createUser(user: NewUser): Promise<UserRecord> {
    try {
      const { rows } = await this.pool.query<UserRow>(
        `INSERT INTO users (id, username, domain, password_hash, is_admin, created_at)
         VALUES ($1, $2, $3, $4, $5, now()) RETURNING *`,
        [randomUUID(), user.username, user.domain ?? '', user.passwordHash, user.isAdmin],
      );
      return toUser(rows[0]!);
    } catch (error) {
      if (isUniqueViolation(error)) throw new UserExistsError(`user ${user.username} exists`);
      throw error;
    }
  }

  async findUser(username: string, domain: string | null): Promise<UserRecord | null> {
    const { rows } = await this.pool.query<UserRow>('SELECT * FROM users WHERE username = $1 AND domain = $2', [
      username,
      domain ?? '',
    ]);
    return rows[0] ? toUser(rows[0]) : null;
  }

  async createKey(key: NewKey): Promise<KeyRecord> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      // the user's row lock orders every create for that user: the count below holds until the commit
      await client.query('SELECT 1 FROM users WHERE id = $1 FOR UPDATE', [key.userId]);
      if (key.maxKeysPerUser !== undefined) {
        const { rows } = await client.query<{ n: number }>('SELECT count(*)::int AS n FROM api_keys WHERE user_id = $1', [key.userId]);
        if (rows[0]!.n >= key.maxKeysPerUser) throw new KeyLimitReachedError(`the user has ${key.maxKeysPerUser} keys`);
      }
      let name = key.name;
      if (name === null) {
        const { rows } = await client.query<{ name: string }>(
          'SELECT name FROM api_keys WHERE user_id = $1 AND name LIKE $2',
          [key.userId, DEFAULT_NAME_PATTERN],
        );
        name = nextDefaultName(rows.map((r) => r.name));
      }
      const { rows } = await client.query<KeyRow>(
        `INSERT INTO api_keys (id, user_id, name, key_hash, created_at, expires_at, scopes, rate_limit_per_second, daily_quota)
         VALUES ($1, $2, $3, $4, now(), $5, $6, $7, $8) RETURNING ${KEY_COLUMNS}`,
        [randomUUID(), key.userId, name, key.hash, key.expiresAt, scopesToColumn(key.scopes), key.rateLimitPerSecond ?? null, key.dailyQuota ?? null],
      );
      await client.query('COMMIT');
      return toKey(rows[0]!);
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      if (isUniqueViolation(error)) throw new KeyNameTakenError(`the name ${key.name} is taken`);
      throw error;
    } finally {
      client.release();
    }
  }

  async listKeys(userId: string): Promise<KeyRecord[]> {
    const { rows } = await this.pool.query<KeyRow>(
      `SELECT ${KEY_COLUMNS} FROM api_keys WHERE user_id = $1 ORDER BY name`,
      [userId],
    );
    return rows.map(toKey);
  }

  async findKeyByHash(hash: string): Promise<FoundKey | null> {
    const { rows } = await this.pool.query<JoinedRow & { is_current: boolean; previous_until: Date | null }>(
      `SELECT ${JOINED_KEY_COLUMNS}, k.key_hash = $1 AS is_current, k.previous_until
         FROM api_keys k JOIN users u ON u.id = k.user_id WHERE k.key_hash = $1 OR k.previous_hash = $1`,
      [hash],
    );
    const row = rows[0];
    if (!row) return null;
    const found: FoundKey = joined(row);
    if (!row.is_current) found.previousUntil = row.previous_until ?? new Date(0);
    return found;
  }

  async findKeyById(id: string): Promise<{ key: KeyRecord; user: UserRecord } | null> {
    const { rows } = await this.pool.query<JoinedRow>(
      `SELECT ${JOINED_KEY_COLUMNS} FROM api_keys k JOIN users u ON u.id = k.user_id WHERE k.id = $1`,
      [id],
    );
    return rows[0] ? joined(rows[0]) : null;
  }

  async rotateKey(id: string, ownerId: string | null, hash: string, previousUntil: Date | null): Promise<KeyRecord | null> {
    // key_hash is set, so the change triggers count it: every replica drops what it verified
    const { rows } = await this.pool.query<KeyRow>(
      `UPDATE api_keys SET previous_hash = CASE WHEN $4::timestamptz IS NULL THEN NULL ELSE key_hash END,
              previous_until = $4, key_hash = $3
        WHERE id = $1 AND ($2::uuid IS NULL OR user_id = $2) RETURNING ${KEY_COLUMNS}`,
      [id, ownerId, hash, previousUntil],
    );
    return rows[0] ? toKey(rows[0]) : null;
  }

  async updateKey(id: string, ownerId: string | null, changes: KeyChanges): Promise<KeyRecord | null> {
    try {
      // name is always set, so the change triggers (UPDATE OF name) count a change of scopes or limits too
      const { rows } = await this.pool.query<KeyRow>(
        `UPDATE api_keys SET name = coalesce($3, name), scopes = CASE WHEN $4 THEN $5 ELSE scopes END,
                rate_limit_per_second = CASE WHEN $6 THEN $7::integer ELSE rate_limit_per_second END,
                daily_quota = CASE WHEN $8 THEN $9::integer ELSE daily_quota END
          WHERE id = $1 AND ($2::uuid IS NULL OR user_id = $2) RETURNING ${KEY_COLUMNS}`,
        [
          id, ownerId, changes.name ?? null, changes.scopes !== undefined, scopesToColumn(changes.scopes ?? null),
          changes.rateLimitPerSecond !== undefined, changes.rateLimitPerSecond ?? null, changes.dailyQuota !== undefined, changes.dailyQuota ?? null,
        ],
      );
      return rows[0] ? toKey(rows[0]) : null;
    } catch (error) {
      if (isUniqueViolation(error)) throw new KeyNameTakenError(`the name ${changes.name} is taken`);
      throw error;
    }
  }

  async deleteKey(id: string, ownerId: string | null): Promise<boolean> {
    const result =
      ownerId === null
        ? await this.pool.query('DELETE FROM api_keys WHERE id = $1', [id])
        : await this.pool.query('DELETE FROM api_keys WHERE id = $1 AND user_id = $2', [id, ownerId]);
    return (result.rowCount ?? 0) > 0;
  }

  async touchKey(id: string, at: Date): Promise<void> {
    await this.pool.query('UPDATE api_keys SET last_used_at = $1 WHERE id = $2', [at, id]);
  }

  async addUsage(counts: readonly UsageCount[]): Promise<UsageCount[]> {
    if (counts.length === 0) return [];
    // one statement; a key deleted meanwhile has no row to join and its counts go with it
    const { rows } = await this.pool.query<{ key_id: string; day: string; requests: string; refused: string }>(
      `INSERT INTO key_usage (key_id, day, requests, refused)
       SELECT c.key_id, c.day, c.requests, c.refused
         FROM unnest($1::uuid[], $2::date[], $3::bigint[], $4::bigint[]) AS c(key_id, day, requests, refused)
         JOIN api_keys k ON k.id = c.key_id
       ON CONFLICT (key_id, day) DO UPDATE SET requests = key_usage.requests + excluded.requests, refused = key_usage.refused + excluded.refused
       RETURNING key_id, to_char(day, 'YYYY-MM-DD') AS day, requests, refused`,
      [counts.map((c) => c.keyId), counts.map((c) => c.day), counts.map((c) => c.requests), counts.map((c) => c.refused)],
    );
    return rows.map((row) => ({ keyId: row.key_id, day: row.day, requests: Number(row.requests), refused: Number(row.refused) }));
  }

  async readUsage(keyId: string, sinceDay: string): Promise<ApiKeyUsageModel[]> {
    const { rows } = await this.pool.query<{ day: string; requests: string; refused: string }>(
      `SELECT to_char(day, 'YYYY-MM-DD') AS day, requests, refused FROM key_usage WHERE key_id = $1 AND day >= $2::date AND requests > 0 ORDER BY day DESC`,
      [keyId, sinceDay],
    );
    return rows.map((row) => ({ day: row.day, requests: Number(row.requests), refused: Number(row.refused) }));
  }

  async listUsers(): Promise<UserRecord[]> {
    const { rows } = await this.pool.query<UserRow>('SELECT * FROM users ORDER BY username COLLATE "C", domain COLLATE "C"');
    return rows.map(toUser);
  }

  async setPasswordHash(userId: string, passwordHash: string): Promise<boolean> {
    const result = await this.pool.query('UPDATE users SET password_hash = $1 WHERE id = $2', [passwordHash, userId]);
    return (result.rowCount ?? 0) > 0;
  }

  async deleteUser(userId: string): Promise<number | null> {
    // the keys go by ON DELETE CASCADE, in the same statement; counted as they go
    const { rows } = await this.pool.query<{ keys: number; users: number }>(
      `WITH gone AS (DELETE FROM users WHERE id = $1 RETURNING id)
       SELECT (SELECT count(*)::int FROM api_keys WHERE user_id IN (SELECT id FROM gone)) AS keys, (SELECT count(*)::int FROM gone) AS users`,
      [userId],
    );
    return rows[0]!.users > 0 ? rows[0]!.keys : null;
  }

  /** Counts of lists served and used, in this database. */
  attribution(): AttributionStore {
    return new PostgresListCounts(this.pool);
  }

  async close(): Promise<void> {
    if (!this.pool.ended) await this.pool.end();
  }
}
