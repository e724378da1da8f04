/** A build's second thread (anchorThread.ts): ranks the chunks of anchors it claims and hands the lists back transferred, then wakes the build. */
import { workerData } from 'node:worker_threads';
import { ABANDONED, DONE, PENDING, PROGRESS, STARTED } from './anchorThread.js';
import type { AnchorAnswer, AnchorJob } from './anchorThread.js';
import { rankChunks } from './rankAnchors.js';

const { pass, next, flag, port } = workerData as AnchorJob;
if (Atomics.compareExchange(flag, 0, PENDING, STARTED) !== ABANDONED) {
  const answer: AnchorAnswer = [];
  try {
    for (const [c, ranked] of rankChunks(pass, next, () => Atomics.add(flag, PROGRESS, 1)).entries()) if (ranked !== undefined) answer.push([c, ranked]);
  } catch {
    // the chunk it was ranking is missing from the answer: the build ranks it
  }
  try {
    const transfer = answer.flatMap(([, r]) => [r.start.buffer, r.item.buffer, r.score.buffer, r.evidence.buffer, r.anchorScale.buffer] as ArrayBuffer[]);
    port.postMessage(answer, [...new Set(transfer)]);
  } catch {
    port.postMessage([]); // the build ranks them all
  }
  // DONE unless the build gave up waiting (then it ranks what it has not)
  Atomics.compareExchange(flag, 0, STARTED, DONE);
  Atomics.notify(flag, 0);
}
port.close();
