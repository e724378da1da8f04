/** Cache shared by every gateway process; a failing store gives misses, never an error to a request. */
export interface SharedCache {
  /** Values for keys, in order; null for a miss. */
  getMany(keys: readonly string[]): Promise<(string | null)[]>;
  /** Stores values, each with its own time to live in seconds. */
  setMany(entries: readonly CacheEntry[]): Promise<void>;
  delete(keys: readonly string[]): Promise<void>;
  /** Forgets what this process keeps of `keys`, leaving the shared store: another process changed it. */
  forgetLocal?(keys?: readonly string[]): void;
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
