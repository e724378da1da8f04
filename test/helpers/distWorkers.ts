import { Worker } from 'node:worker_threads';
import type { WorkerOptions } from 'node:worker_threads';

const SRC = new URL('../../src/', import.meta.url).href;
const DIST = new URL('../../dist/', import.meta.url).href;

/**
 * What src/recommender/threads.ts exports, as vitest.config.ts substitutes it: a worker module starts
 * from dist/ (built once by globalSetup, as `npm start` runs it), not from src/ through tsx each time.
 */
export function startModuleWorker(from: string, name: string, options: WorkerOptions = {}): Worker {
  if (!from.startsWith(SRC)) throw new Error(`a worker's module outside src/: ${from}`);
  return new Worker(new URL(`./${name}.js`, DIST + from.slice(SRC.length)), options);
}
