import type { Worker } from 'node:worker_threads';
import { KINDS } from '../../recommender/live.js';
import type { ApplyStats, Kind, LiveModel, RebuildJob } from '../../recommender/live.js';
import type { RebuildAnswer } from './rebuildWorker.js';
import { startWorker } from './loadFromStore.js';

/**
 * How long after a batch its remaining work runs (EmbeddedRecs.applyEvents): short against
 * issue 20's second of freshness, long enough for a stream of small batches to share one
 * rebuild of next-best-product.
 */
export const FLUSH_DELAY_MS = 100;
/**
 * How much lower than the gateway's a rebuild thread's priority is (its nice value this much
 * higher, at most 19: rebuildNice): a rebuild makes lookups cheaper (an anchor a batch marked is
 * re-ranked when read until then); it is not what keeps answers current, so it takes what CPU
 * requests leave. A worker on the gateway's core at the same priority took a fifth to a third of
 * its CPU under a stream of 5,000-event batches (bench/ingest.ts pins the process to one core);
 * 10 lower, Linux's scheduler gives it about a tenth of a core the event loop wants (weights 110
 * against 1024 at nice 10 and 0), and all of an idle one.
 */
export const REBUILD_NICE = 10;
/** How long one flush by the timer re-ranks at most (what is left follows in later slices). */
const FLUSH_SLICE_MS = 10;
/** A flush on the event loop waits this many times as long as the last one took after it ended. */
const FLUSH_PACE = 3;

/** What the scheduler sees of the recommender it works for. */
export interface RebuildHost {
  /** The live model in use, null before the first batch or after a swap. */
  live(): LiveModel | null;
  closed(): boolean;
  /** Tells the recommender's listeners that its lists changed. */
  changed(): void;
  say(line: string): void;
}

/** The work a batch leaves behind: the paced flush on the event loop, and full rebuilds in worker threads. */
export class RebuildScheduler {
  private flushTimer: NodeJS.Timeout | null = null;

  constructor(private readonly host: RebuildHost) {}

  schedule(delay = FLUSH_DELAY_MS): void {
    const live = this.host.live();
    if (live === null || this.host.closed()) return;
    // Work left by a batch after `delay`; else, where purchases came since next-best-product's
    // last full build, when its time bound makes the next one due (a timer that work comes before).
    const due = !live.pending;
    const wait = due ? live.rebuildDueInMs() : delay;
    if (!Number.isFinite(wait)) return;
    if (this.flushTimer !== null) {
      if (!this.flushTimerDue || (due && this.flushAt <= performance.now() + wait)) return;
      clearTimeout(this.flushTimer);
    }
    this.flushAt = performance.now() + wait;
    this.flushTimerDue = due;
    this.flushTimer = setTimeout(() => this.flushSoon(), Math.max(0, wait));
    this.flushTimer.unref();
  }

  /** When the flush timer fires (performance.now()), and whether it is only the time bound's. */
  private flushAt = Infinity;
  private flushTimerDue = false;

  private lastFlushMs = 0;
  /** When the last flush on the event loop ended (performance.now()). */
  private lastFlushEnd = -Infinity;

  /**
   * Does now, on the event loop, what applyEvents left to its flush (tests, benchmarks; the timer
   * runs flushSoon); null when there is no live model. `except`: kinds whose rebuild a worker has.
   */
  flush(except: readonly Kind[] = [], ms = Infinity): ApplyStats | null {
    this.cancelFlush();
    const stats = this.host.live()?.flush(except, ms) ?? null;
    if (stats !== null) {
      this.lastFlushMs = stats.ms;
      this.lastFlushEnd = performance.now();
      this.host.changed(); // lists re-ranked or rebuilt
    }
    return stats;
  }

  /** Drops the flush timer (a flush now, or a close). */
  cancelFlush(): void {
    if (this.flushTimer !== null) clearTimeout(this.flushTimer);
    this.flushTimer = null;
  }

  /** Per kind, the worker that rebuilds it (made at its first rebuild) and its job under way. */
  private readonly rebuilders: Record<Kind, Worker | null> = { postBrowse: null, nextBest: null };
  private readonly rebuildUnderWay: Record<Kind, { live: LiveModel; job: Pick<RebuildJob, 'kind' | 'build'> } | null> = { postBrowse: null, nextBest: null };
  /** Set when a worker failed: rebuilds stay on the event loop from then on. */
  private rebuildOnLoop = false;
  /** Rebuilds made in a worker: swapped in, or dropped because a later build came first (tests, benchmarks). */
  readonly offLoop = { adopted: 0, discarded: 0 };

  /**
   * Per kind, until when (performance.now()) its next rebuild in a worker waits: FLUSH_PACE
   * times as long as its last one took, as the flush on the loop waits, so that under a stream of
   * large batches a worker builds at most a quarter of the time rather than back to back (the
   * worker's core is often the gateway's own: bench/ingest.ts pins the process to one). Times are
   * wall times: a rebuild that requests slowed (it runs at a lower priority: REBUILD_NICE) rests
   * the longer.
   */
  private readonly restUntil: Record<Kind, number> = { postBrowse: -Infinity, nextBest: -Infinity };

  /** The kinds a worker is rebuilding now. */
  private kindsUnderWay(): Kind[] {
    return KINDS.filter((kind) => this.rebuildUnderWay[kind] !== null);
  }

  /** The kinds the flush leaves to a worker: under way there, or waiting for their next rebuild there. */
  private kindsLeftToWorkers(now: number): Kind[] {
    if (this.rebuildOnLoop) return this.kindsUnderWay();
    return KINDS.filter((kind) => this.rebuildUnderWay[kind] !== null || now < this.restUntil[kind]);
  }

  /** Whether work of a batch is still to come: a flush, or a rebuild under way in a worker. */
  get settling(): boolean {
    return this.kindsUnderWay().length > 0 || (this.host.live()?.pending ?? false);
  }

  /**
   * What the flush timer runs: the flush, with the full builds it would make on the event loop in
   * worker threads instead (LiveModel.takeRebuild: next-best-product's when due, either kind's
   * where a batch marked so much that a build is quicker than re-ranking: a batch of 5,000 on the
   * demo shop), where each held every request for 50 to 130 ms (on a million events, half a
   * second). A kind's lists are swapped in when its worker is done, with the anchors that batches
   * touched meanwhile marked again; until then lookups re-rank the marked anchors they read, so
   * answers follow every event at once. One rebuild of a kind at a time.
   */
  private flushSoon(): void {
    this.flushTimer = null;
    const live = this.host.live();
    if (live === null || this.host.closed()) return;
    const now = performance.now();
    if (!this.rebuildOnLoop) {
      for (const kind of KINDS) {
        if (this.rebuildUnderWay[kind] !== null || now < this.restUntil[kind]) continue;
        const job = live.takeRebuild(kind);
        if (job !== null) this.rebuildOffLoop(live, job);
      }
    }
    // The rest holds the event loop (re-ranking what batches marked): at most a quarter of the
    // time, waiting three times as long as the last one took. Answers do not wait for it (a lookup
    // re-ranks its anchor); it keeps lookups cheap.
    const elsewhere = this.kindsLeftToWorkers(now);
    const wait = this.lastFlushEnd + FLUSH_PACE * this.lastFlushMs - now;
    if (wait > 0 && (elsewhere.length > 0 || !live.waitsForRebuild('nextBest'))) {
      this.schedule(wait);
      return;
    }
    this.flush(elsewhere, FLUSH_SLICE_MS);
    // Nothing left: where purchases came since next-best-product's last full build (taken in or
    // out by age, a view moving the window), the timer of its time bound, which nothing else
    // arms (a batch's flush timer is this one: without it the bound waited for the next batch).
    if (!live.pending) return this.schedule();
    // Anchors left by the slice: the next one paced as the flush is. A kind left marked for a
    // worker that rests: taken when the rest ends (one under way reschedules when done).
    const rests = KINDS.filter((kind) => this.rebuildUnderWay[kind] === null && now < this.restUntil[kind]).map((kind) => this.restUntil[kind] - now);
    this.schedule(Math.max(0, Math.min(FLUSH_PACE * this.lastFlushMs, ...rests)));
  }

  private rebuildOffLoop(live: LiveModel, job: RebuildJob): void {
    // The log's columns are shared memory (posted, not copied); the facts' copies are transferred.
    const { facts } = job;
    const buffers = [facts.candidate, facts.family, facts.category, facts.categoryRank].map((a) => a?.buffer).filter((b): b is ArrayBuffer => b instanceof ArrayBuffer);
    try {
      const worker = (this.rebuilders[job.kind] ??= this.startRebuilder(job.kind));
      this.rebuildUnderWay[job.kind] = { live, job: { kind: job.kind, build: job.build } };
      worker.postMessage(job, [...new Set(buffers)]);
    } catch (error) {
      this.rebuildFailed(job.kind, (error as Error).message);
    }
  }

  private startRebuilder(kind: Kind): Worker {
    const worker = startWorker('rebuildWorker', { nice: REBUILD_NICE });
    worker.unref();
    worker.on('message', (answer: RebuildAnswer) => this.rebuilt(kind, answer));
    worker.on('error', (error: Error) => this.rebuildFailed(kind, error.message));
    worker.on('exit', () => {
      if (!this.host.closed()) this.rebuildFailed(kind, 'the worker exited');
    });
    return worker;
  }

  private rebuilt(kind: Kind, answer: RebuildAnswer): void {
    const underWay = this.rebuildUnderWay[kind];
    this.rebuildUnderWay[kind] = null;
    if (underWay === null || this.host.closed()) return;
    if ('error' in answer) return this.rebuildFailed(kind, answer.error, underWay);
    this.restUntil[kind] = performance.now() + FLUSH_PACE * answer.ms;
    // not when a reload swapped the model, nor when a rebuild on the loop (applyItems, flush) came later
    if (this.host.live() === underWay.live && underWay.live.adoptRebuild(underWay.job, answer.built)) {
      this.offLoop.adopted++;
      this.host.changed();
    } else {
      this.offLoop.discarded++;
    }
    this.schedule();
  }

  private rebuildFailed(kind: Kind, message: string, underWay = this.rebuildUnderWay[kind]): void {
    this.rebuildUnderWay[kind] = null;
    if (underWay !== null) underWay.live.requeueRebuild(underWay.job);
    if (this.rebuildOnLoop) return;
    this.rebuildOnLoop = true;
    for (const k of KINDS) {
      const worker = this.rebuilders[k];
      this.rebuilders[k] = null;
      void worker?.terminate();
      const other = this.rebuildUnderWay[k];
      this.rebuildUnderWay[k] = null;
      other?.live.requeueRebuild(other.job); // terminated: the next flush rebuilds it here
    }
    this.host.say(`recommender: a rebuild in a worker failed (${message}); rebuilds run on the event loop from now on`);
    this.schedule();
  }

  /** Ends the rebuild workers (the recommender closes). */
  async terminate(): Promise<void> {
    for (const kind of KINDS) await this.rebuilders[kind]?.terminate();
  }
}
