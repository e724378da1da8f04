import type { AttributionStore } from '../../../ports/attribution.js';
import type { ApiKeyScope, ApiKeyUsageModel } from '../../../ports/backend.js';

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
  /** As stored; null for a key made before scopes, or without any asked for: all its user's rights. */
  scopes: ApiKeyScope[] | null;
  /** The key's own limits; null: none. */
  rateLimitPerSecond: number | null;
  dailyQuota: number | null;
}

/** Requests of a key on a UTC day, to add to what the store has. */
export interface UsageCount {
  keyId: string;
  /** YYYY-MM-DD. */
  day: string;
  requests: number;
  refused: number;
}

/** A key found by the hash of a value: its current one, or a rotated-out one still in its grace period. */
export interface FoundKey {
  key: KeyRecord;
  user: UserRecord;
  /** Set when the value was the key's previous one: it works until then. */
  previousUntil?: Date;
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
  /** Omitted or null: all its user's rights. */
  scopes?: ApiKeyScope[] | null;
  rateLimitPerSecond?: number | null;
  dailyQuota?: number | null;
  /** The most keys the user may have: counted in the insert's transaction, so racing creates cannot both pass. */
  maxKeysPerUser?: number;
}

/** A key's changes: a field left out stays as it is. */
export interface KeyChanges {
  name?: string;
  scopes?: ApiKeyScope[] | null;
  /** null removes the limit. */
  rateLimitPerSecond?: number | null;
  dailyQuota?: number | null;
}

/** Scopes as a column holds them: names joined by commas, NULL for all. */
export const scopesToColumn = (scopes: readonly ApiKeyScope[] | null | undefined): string | null => (scopes == null ? null : scopes.join(','));
export const scopesFromColumn = (column: string | null): ApiKeyScope[] | null =>
  column === null ? null : column === '' ? [] : (column.split(',') as ApiKeyScope[]);

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
  /** The key with that hash (current, or previous until its grace ends) and its owner; expired keys too (the caller decides). */
  findKeyByHash(hash: string): Promise<FoundKey | null>;
  /** The key with that id and its owner. */
  findKeyById(id: string): Promise<{ key: KeyRecord; user: UserRecord } | null>;
  /** Gives the key (the owner's, when ownerId is given) the new hash; the old one is kept as its
   * previous until previousUntil (null: dropped), replacing any previous one. null if not found. */
  rotateKey(id: string, ownerId: string | null, hash: string, previousUntil: Date | null): Promise<KeyRecord | null>;
  /** Renames and re-scopes a key (the owner's, when ownerId is given); KeyNameTakenError; null if not found. */
  updateKey(id: string, ownerId: string | null, changes: KeyChanges): Promise<KeyRecord | null>;
  /** Deletes the key if it exists and, when ownerId is given, belongs to that user. */
  deleteKey(id: string, ownerId: string | null): Promise<boolean>;
  touchKey(id: string, at: Date): Promise<void>;
  /** Adds the counts to the key_usage rows (made when missing), in one transaction; a deleted key's
   * are dropped. Resolves with the rows' totals after the addition, every replica's counts in them. */
  addUsage(counts: readonly UsageCount[]): Promise<UsageCount[]>;
  /** The key's rows with requests from `sinceDay` (YYYY-MM-DD) on, newest first. */
  readUsage(keyId: string, sinceDay: string): Promise<ApiKeyUsageModel[]>;
  /** Every user, sorted by username then domain. */
  listUsers(): Promise<UserRecord[]>;
  /** Replaces the user's password hash; false when no such user. */
  setPasswordHash(userId: string, passwordHash: string): Promise<boolean>;
  /** Deletes the user and, in the same statement, its keys; the count of keys that went, or null when no such user. */
  deleteUser(userId: string): Promise<number | null>;
  /** A number that changes whenever another process has changed the store, read synchronously
   * (SQLite's data_version); without it nor readDataVersion, every credential is looked up each time. */
  dataVersion?(): number;
  /** The same where it takes a query (PostgreSQL: a counter its triggers move). */
  readDataVersion?(): Promise<number>;
  /** Where counts of lists served and used are kept, in the same database; absent in test doubles. */
  attribution?(): AttributionStore;
  close(): Promise<void>;
}

export const DEFAULT_NAME_PATTERN = 'key#%';
