/** Rebuilds one kind of the live model's lists in a worker thread, so that the rebuild does not hold
 * the event loop: the log's columns are shared memory, the lists come back transferred. */
import { getPriority, setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { buildKind, EventLog, neighboursTransferList } from '../../recommender/index.js';
import type { Neighbours, RebuildJob } from '../../recommender/index.js';
import { rebuildNice } from './rebuildNice.js';

// REBUILD_NICE below the gateway's own, at most 19: a thread starts at its creator's nice value, and
// a gateway run under `nice` must not get rebuilds above it. Linux only: elsewhere (macOS) the nice
// value is the whole process's, not the calling thread's.
const { nice } = (workerData ?? {}) as { nice?: number };
if (nice !== undefined && process.platform === 'linux') {
  try {
    setPriority(rebuildNice(getPriority(), nice));
  } catch {
    // a system that refuses it: the rebuild runs at the gateway's priority
  }
}

/** The worker's answer to a job: the lists, or why it failed. */
export type RebuildAnswer = { build: number; built: Neighbours; ms: number } | { build: number; error: string };

parentPort!.on('message', (job: RebuildJob) => {
  try {
    const t0 = performance.now();
    const built = buildKind(job.kind, EventLog.fromColumns(job.log), job.options, job.cutoff, job.facts);
    const answer: RebuildAnswer = { build: job.build, built, ms: performance.now() - t0 };
    parentPort!.postMessage(answer, neighboursTransferList(built));
  } catch (error) {
    parentPort!.postMessage({ build: job.build, error: (error as Error).message } satisfies RebuildAnswer);
  }
});
