import { ClockedLRU } from '../../cache/lru.js';
import type { PrincipalModel } from '../../ports/backend.js';

/** A principal without its raw credential: what may sit in memory between requests. */
export type CachedPrincipal = Omit<PrincipalModel, 'authorization'>;

/** An accepted credential: the principal and all its user's key ids, as the interface does not say which key it is. */
export interface CachedAuth {
  principal: CachedPrincipal;
  keyIds: readonly string[];
}

/** A user with more keys than this is not remembered: every key id an entry holds is checked on
 * each use where the cache is shared, and an entry's size must stay small. */
export const MAX_CACHED_KEY_IDS = 50;

/** How long a deleted key stays refused beyond the authentication TTL: an authentication that was
 * in flight when the key was deleted may come back with a listing that still has it this much later. */
export const DELETED_KEY_MARGIN_MS = 60_000;

/** Successful authentications by credential hash, least recently used out first; never the raw Authorization. */
export class AuthCache {
  private readonly entries: ClockedLRU<string, CachedAuth> | null;
  /** Keys deleted through this process, until no entry made before the delete can still be
   * written: an authentication in flight across the delete must not bring its key back. */
  private readonly deleted: ClockedLRU<string, true> | null;

  constructor(ttlMs: number, maxEntries: number, now: () => number = Date.now) {
    const on = ttlMs > 0 && maxEntries > 0;
    this.entries = on ? new ClockedLRU({ max: maxEntries, ttl: ttlMs, now }) : null;
    // bounded like the entries: past it the least recently held goes (its entries were evicted already)
    this.deleted = on ? new ClockedLRU({ max: maxEntries, now }) : null;
  }

  get size(): number {
    return this.entries?.size ?? 0;
  }

  get(credentialId: string): CachedAuth | undefined {
    return this.entries?.get(credentialId);
  }

  set(auth: CachedAuth): void {
    if (this.entries === null || auth.keyIds.length > MAX_CACHED_KEY_IDS) return;
    if (auth.keyIds.some((id) => this.deleted!.has(id))) return;
    this.entries.set(auth.principal.credentialId, auth);
  }

  forget(credentialId: string): void {
    this.entries?.delete(credentialId);
  }

  /** Forgets every credential whose user had this key, and refuses to remember one for
   * `holdMs`, so a deleted key stops at once whoever deleted it (its owner or an administrator). */
  evictKey(keyId: string, holdMs: number): void {
    if (this.entries === null) return;
    const stale = [...this.entries.entries()].filter(([, entry]) => entry.keyIds.includes(keyId));
    for (const [id] of stale) this.entries.delete(id);
    this.deleted!.set(keyId, true, { ttl: holdMs });
  }
}

/** Credentials just refused, for a few seconds, so that a client retrying a bad key does not make
 * the upstream count failed logins against the gateway; in process only (hashes of passwords). */
export class RefusedCredentials {
  /** Oldest first out: a flood of distinct bad keys only shortens how long each is remembered. */
  private readonly entries: ClockedLRU<string, true> | null;

  constructor(ttlMs: number, maxEntries: number, now: () => number = Date.now) {
    this.entries = ttlMs > 0 && maxEntries > 0 ? new ClockedLRU({ max: maxEntries, ttl: ttlMs, now }) : null;
  }

  has(credentialId: string): boolean {
    return this.entries?.has(credentialId) ?? false;
  }

  add(credentialId: string): void {
    this.entries?.set(credentialId, true);
  }

  forget(credentialId: string): void {
    this.entries?.delete(credentialId);
  }
}
