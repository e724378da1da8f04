import type { CompactionUnderWay } from '../../recommender/eventLog.js';
import type { LiveModel } from '../../recommender/live.js';

/**
 * The live model's log is compacted (LiveModel.compact) once this many of its events, and at
 * least half of them, have aged out of the window: each event is then copied about once more
 * in its life. A pass comes at most once per as many new events as the log holds after it, in
 * steps (compactSoon).
 */
export const COMPACT_MIN_EVENTS = 100_000;
/**
 * Events a step of a compaction scans or copies (a key's name moved counting 8: NAME_COST):
 * about a millisecond on a quiet host (bench/compaction.ts), up to about 14 ms for the steps where
 * a new map grows past a power of two (V8 copies it whole), whatever the step's size; under a
 * probe's load, up to 111 ms of wall time. The last step, which swaps the log and the live
 * indexes' maps in, grows with the events kept: about 3 ms at 720,000 (renumbering the expiry heap).
 */
export const COMPACT_STEP_EVENTS = 65_536;

/** What the compactor sees of the recommender it works for. */
export interface CompactionHost {
  live(): LiveModel | null;
  /** Events of the log the model in use was built from. */
  logLength(): number;
  closed(): boolean;
  say(line: string): void;
}

/** Drops from memory the events of the live model's log that have aged out of the window. */
export class LogCompactor {
  /** A compaction of the live model's log is scheduled (soon). */
  private queued = false;
  /** Compactions of the live model's log: how many, the events they dropped, and the longest step of the last (ms; tests, logs). */
  readonly compactions = { count: 0, dropped: 0, lastMs: 0 };

  constructor(
    private readonly host: CompactionHost,
    private readonly minEvents = COMPACT_MIN_EVENTS,
    private readonly stepEvents = COMPACT_STEP_EVENTS,
  ) {}

  /**
   * Compacts the live model's log between requests once enough of it has aged out (see
   * COMPACT_MIN_EVENTS): without it, a gateway that runs for months held every event it was ever
   * sent, though only the window's count. In steps of COMPACT_STEP_EVENTS, each in a turn of
   * the event loop of its own, batches going on between them; the last renumbers what the live
   * indexes hold.
   */
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
