import { describe, expect, it } from 'vitest';
import { AuthCache } from '../../src/backends/rest/authCache.js';
import type { CachedPrincipal } from '../../src/backends/rest/authCache.js';

const principal = (credentialId: string, userId = 'u1'): CachedPrincipal => ({
  user: { id: userId, username: null, domain: null, isAdmin: false },
  authenticatedBy: 'API_KEY',
  keyId: null,
  credentialId,
});

describe('AuthCache', () => {
  it('is bounded and evicts the least recently used first', () => {
    const cache = new AuthCache(60_000, 3);
    for (const id of ['a', 'b', 'c']) cache.set(principal(id));
    expect(cache.get('a')).toBeDefined(); // a is now the most recent
    cache.set(principal('d'));
    expect(cache.size).toBe(3);
    expect(cache.get('b')).toBeUndefined();
    expect(['a', 'c', 'd'].map((id) => cache.get(id)?.credentialId)).toEqual(['a', 'c', 'd']);
  });

  it('forgets entries after the TTL, and keeps nothing with a TTL of 0', () => {
    let now = 1000;
    const cache = new AuthCache(30_000, 10, () => now);
    cache.set(principal('a'));
    now += 29_999;
    expect(cache.get('a')).toBeDefined();
    now += 1;
    expect(cache.get('a')).toBeUndefined();
    const off = new AuthCache(0, 10);
    off.set(principal('a'));
    expect(off.size).toBe(0);
  });

  it('evicts every credential of one user', () => {
    const cache = new AuthCache(60_000, 10);
    cache.set(principal('a', 'u1'));
    cache.set(principal('b', 'u2'));
    cache.set(principal('c', 'u1'));
    cache.evictUser('u1');
    expect([cache.get('a'), cache.get('c')]).toEqual([undefined, undefined]);
    expect(cache.get('b')?.user.id).toBe('u2');
  });
});
