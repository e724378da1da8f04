/**
 * The cache shared by every gateway process: Redis when REDIS_URL is set, an in-process LRU
 * otherwise. It is only ever a cache: every method resolves, an unreachable, slow or failing
 * store gives misses (and counts them), never an error to a request.
 */
export interface SharedCache {
  /** Values for keys, in order; null for a miss. */
  getMany(keys: readonly string[]): Promise<(string | null)[]>;
  /** Stores values, each with its own time to live in seconds. */
  setMany(entries: readonly CacheEntry[]): Promise<void>;
  delete(keys: readonly string[]): Promise<void>;
  /**
   * Forgets what this process keeps of `keys` (all of it without keys), leaving the shared store
   * as it is: another process changed it, and said so (src/ports/changeFeed.ts). Absent where
   * nothing is kept in process in front of a shared store.
   */
  forgetLocal?(keys?: readonly string[]): void;
  /** Counters since start, for /metrics and tests. */
  readonly stats: CacheStats;
  /** What /readyz reports: 'ok', or why not. */
  check(): Promise<string>;
  close(): Promise<void>;
}

export interface CacheEntry {
  key: string;
  value: string;
  ttlSeconds: number;
}

export interface CacheStats {
  hits: number;
  misses: number;
  /** Commands that failed or timed out, or were skipped while the store was known to be down. */
  errors: number;
}

export const newStats = (): CacheStats => ({ hits: 0, misses: 0, errors: 0 });
