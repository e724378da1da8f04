/**
 * How REST-mode gateways on one shared cache tell each other a write was taken upstream, so that
 * every gateway drops what it keeps, not only the writer (src/cache/changeFeed.ts).
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
   * Tells the other gateways of a write; null when they could not be told (TTLs then apply).
   * `staleKeys` are deleted in the same step, so no gateway reads them even if the cache's delete failed.
   */
  announce(itemIds: readonly number[], staleKeys?: readonly string[]): Promise<number | null>;
  /** Calls `notice` per announced write; `connected` on each (re)connect, since notices may have been missed. */
  listen(notice: (change: ChangeNotice) => void, connected: () => void): void;
  close(): Promise<void>;
}
