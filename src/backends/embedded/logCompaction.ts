import type { CompactionUnderWay } from '../../recommender/index.js';
import type { LiveModel } from '../../recommender/index.js';

/** Compacted once this many events, and half the log, have aged out: each is then copied about once more. */
export const COMPACT_MIN_EVENTS = 100_000;
/** Events a step scans or copies (a key's name counting 8): small enough to hold requests briefly. */
export const COMPACT_STEP_EVENTS = 65_536;

/** What the compactor sees of the recommender it works for. */
export interface CompactionHost {
  live(): LiveModel | null;
  logLength(): number;
  closed(): boolean;
  say(line: string): void;
}

/** Drops from memory the events of the live model's log that have aged out of the window. */
export class LogCompactor {
  private queued = false;
  /** How many, the events dropped, and the longest step of the last (ms). */
  readonly compactions = { count: 0, dropped: 0, lastMs: 0 };

  constructor(
    private readonly host: CompactionHost,
    private readonly minEvents = COMPACT_MIN_EVENTS,
    private readonly stepEvents = COMPACT_STEP_EVENTS,
  ) {}

  /** Compacts between requests once enough has aged out: otherwise a gateway running for months
   * holds every event it was sent. In steps, each a turn of the event loop, batches between them. */
  soon(): void {
    const live = this.host.live();
    if (live === null || this.queued || live.agedEvents < Math.max(this.minEvents, this.host.logLength() / 2)) return;
    this.queued = true;
    let underWay: CompactionUnderWay | null = null;
    let started = 0;
    let longest = 0;
    const step = (): void => {
      if (this.host.live() !== live || this.host.closed()) {
        this.queued = false;
        return;
      }
      const t0 = performance.now();
      if (underWay === null) {
        underWay = live.beginCompaction();
        started = t0;
      }
      const done = underWay !== null && live.compactStep(underWay, this.stepEvents);
      const moved = done ? live.finishCompaction(underWay!) : null;
      longest = Math.max(longest, performance.now() - t0);
      if (underWay !== null && !done) {
        setImmediate(step);
        return;
      }
      this.queued = false;
      if (moved === null) return;
      this.compactions.count++;
      this.compactions.dropped += moved.before - moved.kept;
      this.compactions.lastMs = longest;
      const ms = performance.now() - started;
      this.host.say(`recommender: dropped ${moved.before - moved.kept} events older than the window from memory (${moved.kept} kept) in ${Math.round(ms)} ms, the event loop held at most ${Math.round(longest)} ms at a time`);
    };
    setImmediate(step);
  }
}
