import { describe, expect, it } from 'vitest';
import { AuthCache, MAX_CACHED_KEY_IDS, RefusedCredentials } from '../../../src/backends/rest/authCache.js';
import type { CachedAuth } from '../../../src/backends/rest/authCache.js';

const auth = (credentialId: string, userId = 'u1', keyIds: string[] = [`key-of-${userId}`]): CachedAuth => ({
  principal: {
    user: { id: userId, username: null, domain: null, isAdmin: false },
    authenticatedBy: 'API_KEY',
    keyId: null,
    credentialId,
  },
  keyIds,
});

describe('AuthCache', () => {
  it('is bounded and evicts the least recently used first', () => {
    const cache = new AuthCache(60_000, 3);
    for (const id of ['a', 'b', 'c']) cache.set(auth(id));
    expect(cache.get('a')).toBeDefined(); // a is now the most recent
    cache.set(auth('d'));
    expect(cache.size).toBe(3);
    expect(cache.get('b')).toBeUndefined();
    expect(['a', 'c', 'd'].map((id) => cache.get(id)?.principal.credentialId)).toEqual(['a', 'c', 'd']);
  });

  it('forgets entries after the TTL, and keeps nothing with a TTL of 0', () => {
    let now = 1000;
    const cache = new AuthCache(30_000, 10, () => now);
    cache.set(auth('a'));
    now += 29_999;
    expect(cache.get('a')).toBeDefined();
    now += 1;
    expect(cache.get('a')).toBeUndefined();
    const off = new AuthCache(0, 10);
    off.set(auth('a'));
    expect(off.size).toBe(0);
  });

  it('evicts every credential whose user had a deleted key, and keeps none listing it for the hold', () => {
    let now = 1000;
    const cache = new AuthCache(60_000, 10, () => now);
    cache.set(auth('a', 'u1', ['k1', 'k2']));
    cache.set(auth('b', 'u2', ['k3']));
    cache.set(auth('c', 'u1', ['k1', 'k2']));
    cache.evictKey('k2', 90_000);
    expect([cache.get('a'), cache.get('c')]).toEqual([undefined, undefined]);
    expect(cache.get('b')?.principal.user.id).toBe('u2');
    // an authentication that listed k2 before the delete, finishing after it
    cache.set(auth('a', 'u1', ['k1', 'k2']));
    expect(cache.get('a')).toBeUndefined();
    cache.set(auth('a', 'u1', ['k1']));
    expect(cache.get('a')).toBeDefined();
    now += 90_000;
    cache.set(auth('c', 'u1', ['k1', 'k2']));
    expect(cache.get('c')).toBeDefined();
  });

  it('does not keep a user with more keys than it checks', () => {
    const cache = new AuthCache(60_000, 10);
    cache.set(auth('a', 'u1', Array.from({ length: MAX_CACHED_KEY_IDS + 1 }, (_, i) => `k${i}`)));
    expect(cache.size).toBe(0);
  });
});

describe('RefusedCredentials', () => {
  it('remembers a refusal for its TTL, bounded, oldest out first', () => {
    let now = 0;
    const refused = new RefusedCredentials(5000, 2, () => now);
    refused.add('a');
    refused.add('b');
    refused.add('c');
    expect(['a', 'b', 'c'].map((id) => refused.has(id))).toEqual([false, true, true]);
    now += 5000;
    expect(refused.has('b')).toBe(false);
  });
});
