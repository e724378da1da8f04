import { MessageChannel, receiveMessageOnPort } from 'node:worker_threads';
import type { MessagePort } from 'node:worker_threads';
import type { AnchorPass, RankedAnchors } from './rankAnchors.js';
import { startModuleWorker } from './threads.js';

// A build's second thread (rankAnchors.ts): the build is synchronous, so it waits as synckit does: the thread posts its
// lists on its own port, wakes the build through a shared flag, and receiveMessageOnPort takes the message without the
// event loop.

/** The flag's states (slot 0): the thread claims its part (STARTED) unless the build called it off. */
export const PENDING = 0;
export const STARTED = 1;
export const DONE = 2;
export const ABANDONED = 3;
/** Slot 1 of the flag: chunks the thread has ranked so far (its sign of life while the build waits). */
export const PROGRESS = 1;

/** How long the build waits on a chunk before it takes the thread for dead (out of memory or ended from outside, it
 * never says DONE) and ranks the chunks itself: a chunk takes milliseconds, seconds on a starved machine. */
export const STALL_MS = 60_000;

/** What the worker gets: the pass, the shared chunk counter, the flag and its port. */
export interface AnchorJob {
  pass: AnchorPass;
  next: Int32Array;
  flag: Int32Array;
  port: MessagePort;
}

/** What the worker posts: the chunks it ranked, by index (those it claimed and could not rank are missing). */
export type AnchorAnswer = [number, RankedAnchors][];

/** A second thread taking chunks of anchors from the shared counter. */
export interface AnchorThread {
  /** Once this thread has taken the last chunk: the chunks the other ranked, waiting for it to finish them if it
   * started, none if it had not (it is then called off) or if it stalls. */
  wait(): AnchorAnswer;
}

/** A flag for a thread: slot 0 its state, slot 1 its progress. */
export function anchorFlag(): Int32Array {
  return new Int32Array(new SharedArrayBuffer(8));
}

export function startAnchorThread(pass: AnchorPass, next: Int32Array): AnchorThread {
  const flag = anchorFlag();
  const { port1, port2 } = new MessageChannel();
  let worker;
  try {
    worker = startModuleWorker(import.meta.url, 'anchorWorker', { workerData: { pass, next, flag, port: port2 } satisfies AnchorJob, transferList: [port2] });
  } catch {
    port1.close();
    return { wait: () => [] };
  }
  worker.unref();
  // a worker that fails to start leaves the flag PENDING: the build calls it off and ranks everything
  worker.on('error', () => {});
  return {
    wait(): AnchorAnswer {
      const answer = awaitAnchorThread(flag, port1, STALL_MS);
      port1.close();
      if (Atomics.load(flag, 0) === ABANDONED) void worker.terminate();
      return answer;
    },
  };
}

/** The build's side of AnchorThread.wait: what the thread posted once DONE; nothing if still PENDING (called off) or
 * stalled for `stallMs` (given up); the flag is left ABANDONED either way. */
export function awaitAnchorThread(flag: Int32Array, port: MessagePort, stallMs: number): AnchorAnswer {
  if (Atomics.compareExchange(flag, 0, PENDING, ABANDONED) === PENDING) return [];
  let progress = Atomics.load(flag, PROGRESS);
  let since = performance.now();
  while (Atomics.load(flag, 0) === STARTED) {
    if (Atomics.wait(flag, 0, STARTED, Math.min(1_000, stallMs)) !== 'timed-out') continue;
    const now = performance.now();
    if (Atomics.load(flag, PROGRESS) !== progress) {
      progress = Atomics.load(flag, PROGRESS);
      since = now;
    } else if (now - since >= stallMs && Atomics.compareExchange(flag, 0, STARTED, ABANDONED) === STARTED) {
      return [];
    }
  }
  return (receiveMessageOnPort(port)?.message as AnchorAnswer | undefined) ?? [];
}
