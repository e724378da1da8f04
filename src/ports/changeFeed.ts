/** How REST-mode gateways on one cache tell each other of upstream writes, so every one drops what it keeps. */
export interface ChangeNotice {
  /** The shared count of writes this one made. */
  writes: number;
  /** The items whose records the write changed (none for events). */
  itemIds: readonly number[];
}

export interface ChangeFeed {
  /** The shared count of writes now; null when it cannot be read (the cache's store is down). */
  current(): Promise<number | null>;
  /** Tells the others of a write (null if it could not); `staleKeys` are deleted in the same step. */
  announce(itemIds: readonly number[], staleKeys?: readonly string[]): Promise<number | null>;
  /** Calls `notice` per announced write; `connected` on each (re)connect, since notices may have been missed. */
  listen(notice: (change: ChangeNotice) => void, connected: () => void): void;
  close(): Promise<void>;
}
