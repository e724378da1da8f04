import type { Worker } from 'node:worker_threads';
import { KINDS } from '../../recommender/index.js';
import type { ApplyStats, Kind, LiveModel, RebuildJob } from '../../recommender/index.js';
import type { RebuildAnswer } from './rebuildWorker.js';
import { startWorker } from './loadFromStore.js';

/** How long after a batch its flush runs: long enough for a stream of small batches to share one rebuild. */
export const FLUSH_DELAY_MS = 100;
/** How much lower a rebuild thread's priority is than the gateway's (rebuildNice): a rebuild only
 * makes lookups cheaper, not answers current, so it takes what CPU requests leave. */
export const REBUILD_NICE = 10;
const FLUSH_SLICE_MS = 10;
/** A flush waits this many times as long as the last took: the loop is held at most a quarter of the time. */
const FLUSH_PACE = 3;

/** What the scheduler sees of the recommender it works for. */
export interface RebuildHost {
  live(): LiveModel | null;
  closed(): boolean;
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
    // without work left, next-best-product's time bound may still make a rebuild due
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

  /** When the flush timer fires, and whether only next-best-product's time bound armed it. */
  private flushAt = Infinity;
  private flushTimerDue = false;

  private lastFlushMs = 0;
  private lastFlushEnd = -Infinity;

  /** Does now, on the event loop, what batches left; `except`: kinds whose rebuild a worker has. */
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

  cancelFlush(): void {
    if (this.flushTimer !== null) clearTimeout(this.flushTimer);
    this.flushTimer = null;
  }

  private readonly rebuilders: Record<Kind, Worker | null> = { postBrowse: null, nextBest: null };
  private readonly rebuildUnderWay: Record<Kind, { live: LiveModel; job: Pick<RebuildJob, 'kind' | 'build'> } | null> = { postBrowse: null, nextBest: null };
  /** A worker failed: rebuilds stay on the event loop from then on rather than fail again. */
  private rebuildOnLoop = false;
  /** Rebuilds made in a worker: swapped in, or dropped because a later build came first. */
  readonly offLoop = { adopted: 0, discarded: 0 };

  /** Per kind, until when its next rebuild in a worker waits (paced as the flush is): under a stream
   * of large batches a worker on the gateway's own core would otherwise build back to back. */
  private readonly restUntil: Record<Kind, number> = { postBrowse: -Infinity, nextBest: -Infinity };

  private kindsUnderWay(): Kind[] {
    return KINDS.filter((kind) => this.rebuildUnderWay[kind] !== null);
  }

  private kindsLeftToWorkers(now: number): Kind[] {
    if (this.rebuildOnLoop) return this.kindsUnderWay();
    return KINDS.filter((kind) => this.rebuildUnderWay[kind] !== null || now < this.restUntil[kind]);
  }

  get settling(): boolean {
    return this.kindsUnderWay().length > 0 || (this.host.live()?.pending ?? false);
  }

  /** The flush, with its full builds made in worker threads instead: on the event loop each held
   * every request. Until a kind's build is swapped in, lookups re-rank the anchors they read. */
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
    // Answers do not wait for the re-ranking (a lookup re-ranks its anchor): it is paced.
    const elsewhere = this.kindsLeftToWorkers(now);
    const wait = this.lastFlushEnd + FLUSH_PACE * this.lastFlushMs - now;
    if (wait > 0 && (elsewhere.length > 0 || !live.waitsForRebuild('nextBest'))) {
      this.schedule(wait);
      return;
    }
    this.flush(elsewhere, FLUSH_SLICE_MS);
    // nothing left: the time bound's timer, which nothing else arms
    if (!live.pending) return this.schedule();
    const rests = KINDS.filter((kind) => this.rebuildUnderWay[kind] === null && now < this.restUntil[kind]).map((kind) => this.restUntil[kind] - now);
    this.schedule(Math.max(0, Math.min(FLUSH_PACE * this.lastFlushMs, ...rests)));
  }

  private rebuildOffLoop(live: LiveModel, job: RebuildJob): void {
    // the log's columns are shared memory; the facts' copies are transferred, not copied
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

  async terminate(): Promise<void> {
    for (const kind of KINDS) await this.rebuilders[kind]?.terminate();
  }
}
