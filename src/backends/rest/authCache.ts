import type { PrincipalModel } from '../../ports/backend.js';

/** A principal without its raw credential: what may sit in memory between requests. */
export type CachedPrincipal = Omit<PrincipalModel, 'authorization'>;

/** An accepted credential: the principal and all its user's key ids, as the interface does not say which key it is. */
export interface CachedAuth {
  principal: CachedPrincipal;
  keyIds: readonly string[];
}

/**
 * A user with more keys than this is not remembered: every key id an entry holds is checked on
 * each use where the cache is shared, and an entry's size must stay small.
 */
export const MAX_CACHED_KEY_IDS = 50;

/**
 * How long a deleted key stays refused beyond the authentication TTL: an authentication that was
 * in flight when the key was deleted may come back with a listing that still has it this much later.
 */
export const DELETED_KEY_MARGIN_MS = 60_000;

/** Successful authentications by credential hash, least recently used out first; never the raw Authorization. */
export class AuthCache {
  private readonly entries = new Map<string, CachedAuth & { expiresAt: number }>();
  /**
   * Keys deleted through this process, until no entry made before the delete can still be
   * written: an authentication in flight across the delete must not bring its key back.
   */
  private readonly deleted = new Map<string, number>();

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries: number,
    private readonly now: () => number = Date.now,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  get(credentialId: string): CachedAuth | undefined {
    const entry = this.entries.get(credentialId);
    if (entry === undefined) return undefined;
    this.entries.delete(credentialId);
    if (entry.expiresAt <= this.now()) return undefined;
    // Map keeps insertion order: re-inserting makes this the most recently used.
    this.entries.set(credentialId, entry);
    return entry;
  }

  set(auth: CachedAuth): void {
    if (this.ttlMs <= 0 || this.maxEntries <= 0 || auth.keyIds.length > MAX_CACHED_KEY_IDS) return;
    const now = this.now();
    for (const id of auth.keyIds) {
      const until = this.deleted.get(id);
      if (until !== undefined && until > now) return;
    }
    const credentialId = auth.principal.credentialId;
    this.entries.delete(credentialId);
    while (this.entries.size >= this.maxEntries) {
      const oldest = this.entries.keys().next().value;
      if (oldest === undefined) break;
      this.entries.delete(oldest);
    }
    this.entries.set(credentialId, { ...auth, expiresAt: now + this.ttlMs });
  }

  forget(credentialId: string): void {
    this.entries.delete(credentialId);
  }

  /**
   * Forgets every credential whose user had this key, and refuses to remember one for
   * `holdMs`, so a deleted key stops at once whoever deleted it (its owner or an administrator).
   */
  evictKey(keyId: string, holdMs: number): void {
    for (const [id, entry] of this.entries) if (entry.keyIds.includes(keyId)) this.entries.delete(id);
    const now = this.now();
    for (const [id, until] of this.deleted) if (until <= now) this.deleted.delete(id);
    // bounded like the entries: past it the oldest hold goes (its entries were evicted already)
    if (this.deleted.size >= this.maxEntries) this.deleted.delete(this.deleted.keys().next().value!);
    this.deleted.set(keyId, now + holdMs);
  }
}

/**
 * Credentials just refused, for a few seconds, so that a client retrying a bad key does not make
 * the upstream count failed logins against the gateway; in process only (hashes of passwords).
 */
export class RefusedCredentials {
  private readonly entries = new Map<string, number>();

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries: number,
    private readonly now: () => number = Date.now,
  ) {}

  has(credentialId: string): boolean {
    const until = this.entries.get(credentialId);
    if (until === undefined) return false;
    if (until > this.now()) return true;
    this.entries.delete(credentialId);
    return false;
  }

  add(credentialId: string): void {
    if (this.ttlMs <= 0 || this.maxEntries <= 0) return;
    this.entries.delete(credentialId);
    // oldest first out: a flood of distinct bad keys only shortens how long each is remembered
    while (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(credentialId, this.now() + this.ttlMs);
  }

  forget(credentialId: string): void {
    this.entries.delete(credentialId);
  }
}
