import { InMemoryLRUCache, type KeyValueCache } from '@apollo/utils.keyvaluecache';
import type { KeyValueCacheSetOptions } from '@apollo/utils.keyvaluecache';
import type { DocumentNode } from 'graphql';

export const DOCUMENT_STORE_BYTES = 32 * 1024 * 1024;
/** Longer documents are not kept: parsed again when they come back. */
export const MAX_STORED_DOCUMENT = 64 * 1024;

/** Heap a parsed document holds per source token (token list, locations, nodes), rounded up. */
export const DOCUMENT_BYTES_PER_TOKEN = 384;

/** What a parsed document keeps alive: its source and its tokens; a dense query holds far more than its text. */
export function documentWeight(document: DocumentNode): number {
  const loc = document.loc;
  if (loc === undefined) return 1;
  let tokens = 0;
  for (let token: typeof loc.startToken | null = loc.startToken; token !== null; token = token.next) tokens += 1;
  return Math.max(1, loc.source.body.length + tokens * DOCUMENT_BYTES_PER_TOKEN);
}

/** Apollo's documentStore sized by documentWeight: Apollo's default sizes a document by its JSON,
 * which leaves out the source, so a few thousand distinct large queries could exhaust the heap. */
export function createDocumentStore(): KeyValueCache<DocumentNode> {
  return new DocumentStore();
}

class DocumentStore extends InMemoryLRUCache<DocumentNode> {
  constructor() {
    super({ maxSize: DOCUMENT_STORE_BYTES, sizeCalculation: documentWeight });
  }

  override async set(key: string, value: DocumentNode, options?: KeyValueCacheSetOptions): Promise<void> {
    if ((value.loc?.source.body.length ?? 0) > MAX_STORED_DOCUMENT) return;
    await super.set(key, value, options);
  }
}
