import { DEFAULT_NEXT_BEST_REBUILD_SECONDS, DEFAULT_NEXT_BEST_REBUILD_SHARE } from './model.js';
import type { ModelOptions } from './model.js';

/** When next-best-product, kept from its last full build's prior statistics, is due for a full build: purchases since
 * exceed nextBestRebuildShare of those counted, or it is older than nextBestRebuildSeconds with purchases since. */
export class NextBestSchedule {
  private purchases = 0;
  private base = 0;
  private at = 0;
  /** Whether a rebuild is owed whatever the counts say (a failed one, new categories). */
  private owed = false;

  /** `frozen`: whether the kind is kept from its statistics at all (else it is never due). */
  constructor(readonly frozen: boolean, private readonly options: ModelOptions) {}

  /** A purchase came in, or aged out. */
  purchase(): void {
    this.purchases++;
  }

  owe(): void {
    this.owed = true;
  }

  /** A full build over the log as it is now was made (or taken to another thread); `purchases` by item. */
  built(purchases: Float64Array): void {
    let base = 0;
    for (let i = 0; i < purchases.length; i++) base += purchases[i]!;
    this.purchases = 0;
    this.base = base;
    this.at = performance.now();
    this.owed = false;
  }

  get due(): boolean {
    if (!this.frozen) return false;
    const share = this.options.nextBestRebuildShare ?? DEFAULT_NEXT_BEST_REBUILD_SHARE;
    return this.owed || (this.purchases > 0 && (this.purchases > share * this.base || this.dueInMs() <= 0));
  }

  /** How long until the time bound makes it due; Infinity where no purchase came since (nothing to catch up with). */
  dueInMs(): number {
    if (!this.frozen || this.purchases === 0) return Infinity;
    return this.at + 1000 * (this.options.nextBestRebuildSeconds ?? DEFAULT_NEXT_BEST_REBUILD_SECONDS) - performance.now();
  }
}
