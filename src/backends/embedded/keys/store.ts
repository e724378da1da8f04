/** Where users and keys are kept (SQLite or PostgreSQL): no rules beyond uniqueness and atomicity, KeyService has the rest. */

export interface UserRecord {
  id: string;
  username: string;
  domain: string | null;
  passwordHash: string;
  isAdmin: boolean;
  createdAt: Date;
}

export interface KeyRecord {
  id: string;
  userId: string;
  name: string;
  createdAt: Date;
  expiresAt: Date | null;
  lastUsedAt: Date | null;
}

export interface NewUser {
  username: string;
  domain: string | null;
  passwordHash: string;
  isAdmin: boolean;
}

export interface NewKey {
  userId: string;
  /** null: the store assigns key#<n>, n one more than the user's highest, in the same transaction. */
  name: string | null;
  /** SHA-256 of the key bytes, base64 without padding. */
  hash: string;
  expiresAt: Date | null;
  /** The most keys the user may have: counted in the insert's transaction, so racing creates cannot both pass. */
  maxKeysPerUser?: number;
}

/** The user already exists (same username and domain). */
export class UserExistsError extends Error {}
/** The user already has a key of that name. */
export class KeyNameTakenError extends Error {}
/** The user already has NewKey.maxKeysPerUser keys. */
export class KeyLimitReachedError extends Error {}

export interface KeyStore {
  /** Creates the tables when missing; safe to run from several processes at once. */
  migrate(): Promise<void>;
  countUsers(): Promise<number>;
  createUser(user: NewUser): Promise<UserRecord>;
  findUser(username: string, domain: string | null): Promise<UserRecord | null>;
  /** Throws KeyNameTakenError or KeyLimitReachedError; the record is written whole or not at all. */
  createKey(key: NewKey): Promise<KeyRecord>;
  /** The user's keys, sorted by name (byte order, the same in both stores). */
  listKeys(userId: string): Promise<KeyRecord[]>;
  /** The key with that hash and its owner; expired keys too (the caller decides). */
  findKeyByHash(hash: string): Promise<{ key: KeyRecord; user: UserRecord } | null>;
  /** Deletes the key if it exists and, when ownerId is given, belongs to that user. */
  deleteKey(id: string, ownerId: string | null): Promise<boolean>;
  touchKey(id: string, at: Date): Promise<void>;
  /** Every user, sorted by username then domain. */
  listUsers(): Promise<UserRecord[]>;
  /** Replaces the user's password hash; false when no such user. */
  setPasswordHash(userId: string, passwordHash: string): Promise<boolean>;
  /** Deletes the user and, in the same statement, its keys; the count of keys that went, or null when no such user. */
  deleteUser(userId: string): Promise<number | null>;
  /**
   * A number that changes whenever another process has changed the store, read synchronously
   * (SQLite's data_version); without it nor readDataVersion, every credential is looked up each time.
   */
  dataVersion?(): number;
  /** The same where it takes a query (PostgreSQL: a counter its triggers move). */
  readDataVersion?(): Promise<number>;
  close(): Promise<void>;
}

export const DEFAULT_NAME_PATTERN = 'key#%';
