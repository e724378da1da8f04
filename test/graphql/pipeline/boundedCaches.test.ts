import { parse } from 'graphql';
import { describe, expect, it } from 'vitest';
import { MAX_PERSISTED_QUERY, PERSISTED_QUERY_TTL_SECONDS, PersistedQueryCache } from '../../../src/graphql/pipeline/persistedQueryCache.js';
import { MemoryCache } from '../../../src/cache/memory.js';
import type { CacheEntry, SharedCache } from '../../../src/ports/cache.js';
import { DOCUMENT_BYTES_PER_TOKEN, DOCUMENT_STORE_BYTES, MAX_STORED_DOCUMENT, createDocumentStore, documentWeight } from '../../../src/graphql/pipeline/documentStore.js';

// The caches a stranger fills (parsed documents, persisted queries) are bounded by what they hold
// in bytes, not only by how many entries: one entry can be a megabyte of comment.

const padded = (n: number, size: number): string => `#${n} ${'x'.repeat(size)}\n{ viewer { id } }`;

describe('the document store handed to Apollo', () => {
  it('keeps documents by the size of their source text, and none of 64 KiB or more', async () => {
    const store = createDocumentStore();
    await store.set('small', parse('{ viewer { id } }'));
    expect(await store.get('small')).toBeDefined();
    await store.set('large', parse(padded(0, MAX_STORED_DOCUMENT)));
    expect(await store.get('large')).toBeUndefined();

    const size = 60 * 1024;
    const count = 400; // 23 MiB of source in all
    for (let n = 0; n < count; n++) await store.set(`q${n}`, parse(padded(n, size)));
    let kept = 0;
    for (let n = 0; n < count; n++) if (await store.get(`q${n}`)) kept += 1;
    expect(kept).toBeGreaterThan(0);
    expect(kept * size).toBeLessThanOrEqual(DOCUMENT_STORE_BYTES);
    // the newest are the ones kept
    expect(await store.get(`q${count - 1}`)).toBeDefined();
  });

  it('keeps short documents by what they hold, their tokens too, not by their few characters', async () => {
    // a 30-character query parsed holds about 3.2 KB (its ten tokens, their locations, the
    // nodes): sized by its characters, 16 MiB held half a million of them, over 1.5 GB of heap,
    // which anyone with a key could fill with persisted queries under distinct hashes
    const store = createDocumentStore();
    const count = 20_000;
    for (let n = 0; n < count; n++) await store.set(`q${n}`, parse(`{ b${n}: viewer { id } }`));
    let kept = 0;
    for (let n = 0; n < count; n++) if (await store.get(`q${n}`)) kept += 1;
    expect(kept).toBeGreaterThan(0);
    expect(kept * 3000).toBeLessThanOrEqual(DOCUMENT_STORE_BYTES);
    expect(await store.get(`q${count - 1}`)).toBeDefined();
    expect(documentWeight(parse('{ b1: viewer { id } }'))).toBeGreaterThanOrEqual(3000);
  });
});

// What the heap soak (test/soak/heap.soak.ts) measures in a process, by weight: every
// cache of parsed documents sizes them by documentWeight, so a weight that counts what a document
// holds bounds the heap they take.
describe('the weight of a parsed document', () => {
  it('counts the whole source of a query that is mostly comment', () => {
    const padding = 'x'.repeat(64 * 1024);
    const text = `#1 ${padding}\n{ viewer { id } }`;
    expect(documentWeight(parse(text))).toBeGreaterThanOrEqual(text.length);
  });

  it('counts every token of a dense query: 15 lists of 100 ids, some 1,700 tokens in 3.5 KB', () => {
    const ids = Array.from({ length: 100 }, (_, k) => 1 + (k % 9)).join(' ');
    const text = `{ ${Array.from({ length: 15 }, (_, j) => `x0_${j}: items(itemIds: [${ids}]) { name }`).join(' ')} }`;
    expect(text.length).toBeLessThan(4000);
    expect(documentWeight(parse(text))).toBeGreaterThanOrEqual(1_600 * DOCUMENT_BYTES_PER_TOKEN);
    // the store's budget holds a bounded number of them, not a thousand
    expect(DOCUMENT_STORE_BYTES / documentWeight(parse(text))).toBeLessThan(60);
  });
});

describe('persisted queries', () => {
  function recording(): SharedCache & { entries: CacheEntry[] } {
    const memory = new MemoryCache();
    const entries: CacheEntry[] = [];
    return Object.assign(memory, {
      entries,
      setMany: async (sets: readonly CacheEntry[]) => {
        entries.push(...sets);
        await MemoryCache.prototype.setMany.call(memory, sets);
      },
    });
  }

  it('are kept for 300 s unless Apollo says otherwise, and not at all past 64 KiB', async () => {
    const shared = recording();
    const cache = new PersistedQueryCache(shared);
    await cache.set('small', '{ viewer { id } }');
    await cache.set('given', '{ viewer { id } }', { ttl: 60 });
    await cache.set('large', padded(0, MAX_PERSISTED_QUERY));
    expect(shared.entries.map((entry) => [entry.key, entry.ttlSeconds])).toEqual([['apq:small', PERSISTED_QUERY_TTL_SECONDS], ['apq:given', 60]]);
    expect(PERSISTED_QUERY_TTL_SECONDS).toBe(300);
    expect(await cache.get('small')).toBe('{ viewer { id } }');
    expect(await cache.get('large')).toBeUndefined();
  });
});

describe('the in-process shared cache', () => {
  it('is bounded in characters as well as in entries', async () => {
    const cache = new MemoryCache({ maxChars: 1024 * 1024 });
    const value = 'v'.repeat(100 * 1024);
    await cache.setMany(Array.from({ length: 30 }, (_, n) => ({ key: `k${n}`, value, ttlSeconds: 60 })));
    const found = await cache.getMany(Array.from({ length: 30 }, (_, n) => `k${n}`));
    const kept = found.filter((v) => v !== null).length;
    expect(kept).toBeGreaterThan(0);
    expect(kept * value.length).toBeLessThanOrEqual(1024 * 1024);
    expect(found[29]).toBe(value);
    // a value larger than the whole bound is not kept
    await cache.setMany([{ key: 'huge', value: 'h'.repeat(2 * 1024 * 1024), ttlSeconds: 60 }]);
    expect(await cache.getMany(['huge'])).toEqual([null]);
  });
});
