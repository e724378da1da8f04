import type { SharedCache } from '../../ports/cache.js';
import { MAX_CACHED_KEY_IDS, type CachedAuth } from './authCache.js';

const entryKey = (credentialId: string): string => `auth:${credentialId}`;
const deletedKey = (keyId: string): string => `authdeleted:${keyId}`;

/** Key authentications and deleted-key marks shared by every gateway process. API keys only: a
 * hash of Basic credentials could be brute-forced offline from a leaked Redis. */
export class SharedAuthCache {
  private pending: { ids: Set<string>; marked: Promise<Set<string>> } | undefined;

  constructor(
    private readonly cache: SharedCache,
    private readonly ttlMs: number,
  ) {}

  async get(credentialId: string): Promise<CachedAuth | undefined> {
    if (this.ttlMs <= 0) return undefined;
    const [raw] = await this.cache.getMany([entryKey(credentialId)]);
    if (!raw) return undefined;
    const auth = JSON.parse(raw) as CachedAuth;
    if (!Array.isArray(auth.keyIds) || (await this.anyDeleted(auth.keyIds))) return undefined;
    return auth;
  }

  async set(auth: CachedAuth): Promise<void> {
    if (this.ttlMs <= 0 || auth.principal.authenticatedBy !== 'API_KEY' || auth.keyIds.length > MAX_CACHED_KEY_IDS) return;
    await this.cache.setMany([{ key: entryKey(auth.principal.credentialId), value: JSON.stringify(auth), ttlSeconds: this.ttlMs / 1000 }]);
  }

  /** Whether any of these keys was deleted through a gateway on this cache; the checks of one turn share one read. */
  async anyDeleted(keyIds: readonly string[]): Promise<boolean> {
    if (keyIds.length === 0) return false;
    let batch = this.pending;
    if (batch === undefined) {
      const ids = new Set<string>();
      const marked = new Promise<Set<string>>((resolve) => {
        setImmediate(() => {
          this.pending = undefined;
          const asked = [...ids];
          // Redis trouble reads as "no marks" (a miss), as everywhere in the shared cache
          this.cache.getMany(asked.map(deletedKey)).then(
            (marks) => resolve(new Set(asked.filter((_, i) => marks[i] !== null))),
            () => resolve(new Set()),
          );
        });
      });
      batch = this.pending = { ids, marked };
    }
    for (const id of keyIds) batch.ids.add(id);
    const marked = await batch.marked;
    return keyIds.some((id) => marked.has(id));
  }

  /** Marks a key deleted, for every process on this cache, for `holdMs`. */
  async markDeleted(keyId: string, holdMs: number): Promise<void> {
    if (this.ttlMs <= 0) return;
    await this.cache.setMany([{ key: deletedKey(keyId), value: '1', ttlSeconds: holdMs / 1000 }]);
  }
}
