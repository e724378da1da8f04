import type { PrincipalModel } from '../types.js';

/** A principal without its raw credential: what may sit in memory between requests. */
export type CachedPrincipal = Omit<PrincipalModel, 'authorization'>;

/**
 * Successful authentications by credential hash, bounded and least-recently-used first out.
 * Entries never hold the raw Authorization value: a hit is rebuilt with the caller's own header.
 */
export class AuthCache {
  private readonly entries = new Map<string, { principal: CachedPrincipal; expiresAt: number }>();

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries: number,
    private readonly now: () => number = Date.now,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  get(credentialId: string): CachedPrincipal | undefined {
    const entry = this.entries.get(credentialId);
    if (entry === undefined) return undefined;
    this.entries.delete(credentialId);
    if (entry.expiresAt <= this.now()) return undefined;
    // Map keeps insertion order: re-inserting makes this the most recently used.
    this.entries.set(credentialId, entry);
    return entry.principal;
  }

  set(principal: CachedPrincipal): void {
    if (this.ttlMs <= 0 || this.maxEntries <= 0) return;
    this.entries.delete(principal.credentialId);
    while (this.entries.size >= this.maxEntries) {
      const oldest = this.entries.keys().next().value;
      if (oldest === undefined) break;
      this.entries.delete(oldest);
    }
    this.entries.set(principal.credentialId, { principal, expiresAt: this.now() + this.ttlMs });
  }

  /** Forgets every credential of a user, so a key deleted through the gateway stops at once. */
  evictUser(userId: string): void {
    for (const [id, entry] of this.entries) if (entry.principal.user.id === userId) this.entries.delete(id);
  }
}
