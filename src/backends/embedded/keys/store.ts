/**
 * Where users and keys are kept: SQLite (the default, one file under DATA_DIR) or PostgreSQL
 * (shared by several gateway processes). Both implementations pass test/keys/store.test.ts.
 * The store holds no rules beyond uniqueness and atomicity; KeyService applies the rest.
 */

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
  /**
   * The most keys the user may have, this one included; the count and the insert are one
   * transaction, so two creates racing for the last slot cannot both get it. Default: no cap.
   */
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
  /** Throws UserExistsError. */
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
  /** Records when a key was last used. */
  touchKey(id: string, at: Date): Promise<void>;
  /**
   * A number that changes whenever another connection (another process) has changed the store
   * since this one last looked (it may also change when nothing did, never the other way round),
   * read synchronously and cheaply (SQLite's data_version). A store that has neither this nor
   * readDataVersion makes the key service look every credential up on every request.
   */
  dataVersion?(): number;
  /**
   * The same, where it takes a query (PostgreSQL: a counter its triggers move in the transaction
   * that changes a user or a key, whoever made it): read once the read is sent, a change committed
   * before is counted; the key service reads it before the data it verifies.
   */
  readDataVersion?(): Promise<number>;
  close(): Promise<void>;
}

export const DEFAULT_NAME_PATTERN = 'key#%';
