import { MessageChannel, receiveMessageOnPort } from 'node:worker_threads';
import type { MessagePort } from 'node:worker_threads';
import type { AnchorPass, RankedAnchors } from './cooccurrence.js';
import { startModuleWorker } from './threads.js';

/*
 * A build's second thread (cooccurrence.ts, rankEveryAnchor): it ranks chunks of anchors while
 * the build's own thread ranks others, and the build waits for it synchronously (a build is a
 * synchronous function, in a load or rebuild worker or in evaluation), as synckit does: the
 * thread posts its lists on a port of its own and then wakes the build through a shared flag;
 * receiveMessageOnPort takes the message without the event loop.
 */

/** The flag's states: the thread claims its part (STARTED) unless the build called it off. */
export const PENDING = 0;
export const STARTED = 1;
export const DONE = 2;
export const ABANDONED = 3;

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
  /**
   * Once this thread has taken the last chunk: the chunks the other ranked, waiting for it to
   * finish them if it started, none if it had not (it is then called off).
   */
  wait(): AnchorAnswer;
}

export function startAnchorThread(pass: AnchorPass, next: Int32Array): AnchorThread {
  const flag = new Int32Array(new SharedArrayBuffer(4));
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
      if (Atomics.compareExchange(flag, 0, PENDING, ABANDONED) === PENDING) {
        port1.close();
        void worker.terminate();
        return [];
      }
      while (Atomics.load(flag, 0) === STARTED) Atomics.wait(flag, 0, STARTED);
      const answer = receiveMessageOnPort(port1)?.message as AnchorAnswer | undefined;
      port1.close();
      return answer ?? [];
    },
  };
}
