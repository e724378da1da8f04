import { setTimeout as sleep } from 'node:timers/promises';
import { MessageChannel, Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { buildDemo } from '../../src/backends/embedded/demo.js';
import { ABANDONED, anchorFlag, awaitAnchorThread, DONE, PROGRESS, startAnchorThread, STARTED } from '../../src/recommender/anchorThread.js';
import { prepareNeighbours } from '../../src/recommender/buildNeighbours.js';
import { buildModel, cutoffOf, itemFacts, latestTime } from '../../src/recommender/index.js';
import type { ModelOptions, Neighbours } from '../../src/recommender/index.js';
import { nextBestScoring, nextBestSets } from '../../src/recommender/model.js';
import { ANCHOR_CHUNK, anchorScratch, rankChunk } from '../../src/recommender/rankAnchors.js';
import type { RankedAnchors } from '../../src/recommender/rankAnchors.js';

// A full build over many positions ranks its anchors in two threads (rankAnchors.ts,
// rankEveryAnchor); the lists must be those of one thread, bit for bit, whichever thread ranked
// which anchors.

const bytes = (a: ArrayBufferView): Buffer => Buffer.from(a.buffer, a.byteOffset, a.byteLength);
const ARRAYS = ['start', 'item', 'score', 'evidence', 'anchorScale'] as const;

function expectSameBytes(a: Pick<Neighbours, (typeof ARRAYS)[number]>, b: Pick<Neighbours, (typeof ARRAYS)[number]>, what: string): void {
  for (const key of ARRAYS) expect(bytes(a[key]).equals(bytes(b[key])), `${what}: ${key}`).toBe(true);
}

function expectSameModel(options: ModelOptions): void {
  const { catalog, log } = buildDemo();
  const one = buildModel(log, { ...options, parallelFromPositions: Infinity }, catalog);
  const two = buildModel(log, { ...options, parallelFromPositions: 0 }, catalog);
  for (const kind of ['postBrowse', 'nextBest'] as const) {
    expectSameBytes(one[kind], two[kind], kind);
    for (const key of ['priorStart', 'priorItem', 'priorScore'] as const) expect(bytes(one[kind][key]).equals(bytes(two[kind][key])), `${kind}: ${key}`).toBe(true);
  }
  // several chunks, and lists in them: the comparison compares something
  expect(one.items.size).toBeGreaterThan(4 * ANCHOR_CHUNK);
  expect(one.postBrowse.item.length).toBeGreaterThan(one.items.size);
  expect(one.nextBest.item.length).toBeGreaterThan(one.items.size);
}

describe('a full build in two threads', () => {
  it('gives the lists of one thread bit for bit: ordered views, and orders with a prior and categories', () => {
    expectSameModel({});
  });

  it('the same for item sets, unweighted and weighted', () => {
    expectSameModel({ postBrowse: { damping: 0.3 }, nextBest: { damping: 0.5, prior: 0 } });
  });

  it('the second thread ranks the chunks it claims as this thread would, and hands them all back', async () => {
    const { catalog, log } = buildDemo();
    buildModel(log, {}, catalog); // interns the catalogue's items, as a load does
    const since = cutoffOf(latestTime(log), {});
    const { pass } = prepareNeighbours(log, nextBestSets(log, {}, since), nextBestScoring({}), itemFacts(log.items, catalog));
    const chunks = Math.ceil(pass.nItems / ANCHOR_CHUNK);
    const next = new Int32Array(new SharedArrayBuffer(4));
    const thread = startAnchorThread(pass, next);
    // this thread claims none: the other takes every chunk once it has started (bounded)
    for (const deadline = Date.now() + 60_000; Atomics.load(next, 0) < chunks && Date.now() < deadline;) await sleep(20);
    const answer = thread.wait();
    expect(answer.map(([c]) => c).sort((a, b) => a - b)).toEqual(Array.from({ length: chunks }, (_, c) => c));
    const scratch = anchorScratch(pass);
    for (const [c, ranked] of answer) {
      const here: RankedAnchors = rankChunk(pass, c, scratch);
      expectSameBytes(ranked, here, `chunk ${c}`);
    }
    expect(answer.reduce((n, [, r]) => n + r.item.length, 0)).toBeGreaterThan(pass.nItems);
  }, 90_000);

  describe('the wait for the second thread', () => {
    it('calls off a thread that has not started: nothing to wait for', () => {
      const flag = anchorFlag();
      const { port1, port2 } = new MessageChannel();
      expect(awaitAnchorThread(flag, port1, 60_000)).toEqual([]);
      expect(Atomics.load(flag, 0)).toBe(ABANDONED);
      port1.close();
      port2.close();
    });

    it('gives up on a started thread that makes no progress (it died), so that the build ranks its chunks', () => {
      const flag = anchorFlag();
      Atomics.store(flag, 0, STARTED);
      const { port1, port2 } = new MessageChannel();
      const t0 = performance.now();
      expect(awaitAnchorThread(flag, port1, 300)).toEqual([]);
      expect(performance.now() - t0).toBeGreaterThanOrEqual(290);
      expect(Atomics.load(flag, 0)).toBe(ABANDONED);
      port1.close();
      port2.close();
    });

    it('waits as long as the thread ranks chunks, however long that is, and takes its answer', async () => {
      const flag = anchorFlag();
      const { port1, port2 } = new MessageChannel();
      // a thread that ranks a chunk every 50 ms for 4 s (more than twice the stall bound), then answers
      const code = `
        const { workerData } = require('node:worker_threads');
        const { flag, port } = workerData;
        Atomics.store(flag, 0, ${STARTED});
        let n = 0;
        const tick = setInterval(() => {
          Atomics.add(flag, ${PROGRESS}, 1);
          if (++n < 80) return;
          clearInterval(tick);
          port.postMessage([[3, 'the lists']]);
          Atomics.store(flag, 0, ${DONE});
          Atomics.notify(flag, 0);
          port.close();
        }, 50);`;
      const worker = new Worker(code, { eval: true, workerData: { flag, port: port2 }, transferList: [port2] });
      try {
        for (const deadline = Date.now() + 30_000; Atomics.load(flag, 0) !== STARTED && Date.now() < deadline;) await sleep(5);
        expect(awaitAnchorThread(flag, port1, 1_500)).toEqual([[3, 'the lists']]);
        expect(Atomics.load(flag, 0)).toBe(DONE);
      } finally {
        port1.close();
        await worker.terminate();
      }
    }, 60_000);
  });
});
