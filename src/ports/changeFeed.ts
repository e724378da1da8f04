/**
 * How REST-mode gateways on one shared cache tell each other that a write was taken upstream
 * (recordEvents, upsertItems forwarded): each keeps lists and item records from the upstream, and
 * a write through one of them must drop what all of them keep, not only its own. A shared count
 * of writes names the key space lists are kept in (src/cache/listSpaces.ts), so that gateways that
 * heard of the same writes keep sharing their lists.
 *
 * Implementations: RedisChangeFeed (src/cache/changeFeed.ts: a counter and a pub/sub channel),
 * and MemoryChangeFeed there too, for several gateways in one process (tests). Both run through
 * one suite (test/cache/changeFeed.test.ts).
 */
export interface ChangeNotice {
  /** The shared count of writes this one made. */
  writes: number;
  /** The items whose records the write changed (none for events). */
  itemIds: readonly number[];
}

export interface ChangeFeed {
  /** The shared count of writes now; null when it cannot be read (the cache's store is down). */
  current(): Promise<number | null>;
  /**
   * Tells every other gateway on the feed that a write was taken: the shared count it made; null
   * when they could not be told (their lists then follow after their TTLs). `staleKeys`, entries
   * of the shared cache the write made stale (the records written), are deleted in the same step
   * where the feed is on the cache's store (RedisChangeFeed): told, no gateway reads them again,
   * even when the cache's own delete did not reach the store (a timeout, its back-off).
   */
  announce(itemIds: readonly number[], staleKeys?: readonly string[]): Promise<number | null>;
  /**
   * Calls `notice` for each write another gateway announced, in order, and `connected` each time
   * the feed (re)connects: notices sent while it was not may have been missed, so the listener
   * reads `current()` then. Called once; a feed has one listener.
   */
  listen(notice: (change: ChangeNotice) => void, connected: () => void): void;
  close(): Promise<void>;
}
