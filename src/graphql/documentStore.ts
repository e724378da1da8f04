import { InMemoryLRUCache, type KeyValueCache } from '@apollo/utils.keyvaluecache';
import type { DocumentNode } from 'graphql';

/** Characters of source text the documents kept may hold at most. */
export const DOCUMENT_STORE_CHARS = 16 * 1024 * 1024;
/** A document whose source is longer than this is not kept (parsed again when it comes back). */
export const MAX_STORED_DOCUMENT = 64 * 1024;

/**
 * Apollo's documentStore (parsed and validated documents by query hash), sized by what each
 * document holds: its whole source text (loc.source.body). Apollo's default store sizes a
 * document by its JSON, which leaves the source out (a Location serialises as its offsets), so a
 * 1 MB query of comment counted as 925 bytes of its 30 MiB, and a few thousand distinct ones
 * exhausted the heap.
 *
 * For the lead: `new ApolloServer({ documentStore: createDocumentStore(), ... })`.
 */
export function createDocumentStore(): KeyValueCache<DocumentNode> {
  return new InMemoryLRUCache<DocumentNode>({
    maxSize: DOCUMENT_STORE_CHARS,
    maxEntrySize: MAX_STORED_DOCUMENT,
    sizeCalculation: sourceSize,
  });
}

/** A document's size as what it keeps alive: its source text (a document without one counts as small). */
const sourceSize = (document: DocumentNode): number => Math.max(1, document.loc?.source.body.length ?? 1);
