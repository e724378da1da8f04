import { randomUUID } from 'node:crypto';
import type { SharedCache } from '../../cache/types.js';
import type { CachedPrincipal } from './authCache.js';

/**
 * Key authentications the key service accepted, shared by every gateway process through the
 * shared cache, so a second process answers a warm query with no upstream call at all.
 *
 * Only API keys are shared: their hash is of 128 random bits, while a hash of Basic credentials
 * could be brute-forced offline from a leaked Redis, so those stay in each process's memory.
 * Entries carry the owner's generation; deleting a key through any gateway bumps it, which
 * invalidates every shared entry of that user at once (other processes' in-memory entries still
 * live out their TTL, as documented for AUTH_CACHE_TTL_MS).
 */
export class SharedAuthCache {
  constructor(
    private readonly cache: SharedCache,
    private readonly ttlMs: number,
  ) {}

  private async generation(userId: string): Promise<string> {
    const [value] = await this.cache.getMany([`authgen:${userId}`]);
    return value ?? '0';
  }

  async get(credentialId: string): Promise<CachedPrincipal | undefined> {
    if (this.ttlMs <= 0) return undefined;
    const [raw] = await this.cache.getMany([`auth:${credentialId}`]);
    if (!raw) return undefined;
    const { principal, gen } = JSON.parse(raw) as { principal: CachedPrincipal; gen: string };
    if (principal.user.id === null || (await this.generation(principal.user.id)) !== gen) return undefined;
    return principal;
  }

  async set(principal: CachedPrincipal): Promise<void> {
    if (this.ttlMs <= 0 || principal.authenticatedBy !== 'API_KEY' || principal.user.id === null) return;
    const gen = await this.generation(principal.user.id);
    await this.cache.setMany([
      { key: `auth:${principal.credentialId}`, value: JSON.stringify({ principal, gen }), ttlSeconds: this.ttlMs / 1000 },
    ]);
  }

  /** Invalidates every shared entry of a user; the generation outlives any entry written before it. */
  async evictUser(userId: string): Promise<void> {
    await this.cache.setMany([{ key: `authgen:${userId}`, value: randomUUID(), ttlSeconds: (2 * this.ttlMs) / 1000 }]);
  }
}
