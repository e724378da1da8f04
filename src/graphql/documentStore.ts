import { InMemoryLRUCache, type KeyValueCache } from '@apollo/utils.keyvaluecache';
import type { KeyValueCacheSetOptions } from '@apollo/utils.keyvaluecache';
import type { DocumentNode } from 'graphql';

/** Bytes (as documentWeight estimates them) the documents kept may hold at most. */
export const DOCUMENT_STORE_BYTES = 32 * 1024 * 1024;
/** A document whose source is longer than this is not kept (parsed again when it comes back). */
export const MAX_STORED_DOCUMENT = 64 * 1024;

/**
 * Bytes of heap a parsed document holds a token of its source, at least: the token itself (a
 * linked list through the whole text, kept by `loc.startToken`), the Location of each node, the
 * nodes. Measured with node 20 and graphql 16: 260 to 360 bytes a token over a 10-token query,
 * the introspection query and a list of 100 ids.
 */
export const DOCUMENT_BYTES_PER_TOKEN = 384;

/**
 * What a parsed document keeps alive, in bytes: its source text and its tokens. Sizing by the
 * source alone counted a dense 3.5 KB query (15 lists of 100 ids, 1,750 tokens) as 3.5 KB where it
 * held about 550 KB: a client sending a thousand distinct ones (anonymously, within its rate limit)
 * took a gateway from 130 MB to 550 MB, past every cache's bound in characters.
 */
export function documentWeight(document: DocumentNode): number {
  const loc = document.loc;
  if (loc === undefined) return 1;
  let tokens = 0;
  for (let token: typeof loc.startToken | null = loc.startToken; token !== null; token = token.next) tokens += 1;
  return Math.max(1, loc.source.body.length + tokens * DOCUMENT_BYTES_PER_TOKEN);
}

/**
 * Apollo's documentStore (parsed and validated documents by query hash), sized by what each
 * document holds (documentWeight): its whole source text (loc.source.body) and its tokens.
 * Apollo's default store sizes a document by its JSON, which leaves the source out (a Location
 * serialises as its offsets), so a 1 MB query of comment counted as 925 bytes of its 30 MiB, and a
 * few thousand distinct ones exhausted the heap; sized by its source alone, hundreds of thousands
 * of short queries (persisted under distinct hashes) fit in the bound, at about 3 KB each.
 *
 * For the lead: `new ApolloServer({ documentStore: createDocumentStore(), ... })`.
 */
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
