import { describe, expect, it } from 'vitest';
import type { ItemModel } from '../../src/ports/backend.js';
import { Catalog } from '../../src/recommender/catalog.js';
import { seededRandom } from '../../src/backends/embedded/demo.js';
import { EventLog, ItemIndex } from '../../src/recommender/eventLog.js';
import type { RecEvent } from '../../src/recommender/eventLog.js';
import type { Neighbours } from '../../src/recommender/cooccurrence.js';
import { buildKind, LiveModel } from '../../src/recommender/live.js';
import { buildModel } from '../../src/recommender/model.js';
import { EmbeddedRecs } from '../../src/backends/embedded/recs.js';

/** Anchor a's next-best list as served: the built arrays (next-best-product has a prior: never overridden). */
function listOf(n: Neighbours, a: number): number[][] {
  const out: number[][] = [];
  if (a + 1 >= n.start.length) return out;
  for (let j = n.start[a]!; j < n.start[a + 1]!; j++) out.push([n.item[j]!, n.score[j]!, n.evidence[j]!]);
  return out;
}

/** Views and purchases of 60 items in 4 categories by 300 shoppers, in time order. */
function shopping(n: number): RecEvent[] {
  const random = seededRandom(20);
  let t = Date.UTC(2026, 0, 1);
  return Array.from({ length: n }, (_, i) => {
    t += Math.floor(random() * 600_000);
    const buyer = Math.floor(random() * 300);
    const purchase = random() < 0.3;
    return {
      kind: purchase ? 'purchase' : 'view', itemId: 1 + Math.floor(random() * random() * 60), time: t,
      session: `s${Math.floor(i / 6)}`, user: `u${buyer}`, orderId: purchase ? `o${Math.floor(i / 3)}` : null,
    };
  });
}

async function settled(recs: EmbeddedRecs): Promise<void> {
  const deadline = Date.now() + 60_000; // a worker from source starts tsx first: seconds on a loaded machine
  while (recs.settling) {
    if (Date.now() > deadline) throw new Error('the flush and the rebuild did not finish within 60 s');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('next-best-product rebuilt in a worker thread after a batch', () => {
  const events = shopping(3200);
  const catalog = new Catalog();
  for (let id = 1; id <= 60; id++) catalog.add({ itemId: id, name: `item ${id}`, categoryPath: `Dept/Cat${id % 4}`, stock: 'Available' } as ItemModel);
  /** The first `n` events in a log numbered as `recs` numbers its items. */
  const logOf = (recs: EmbeddedRecs | null, n: number): EventLog => {
    const log = new EventLog(recs === null ? new ItemIndex() : ItemIndex.fromIds(recs.model.items.ids()));
    for (const e of events.slice(0, n)) log.add(e);
    return log;
  };

  it('swaps in the lists a full build over the same events gives', async () => {
    const recs = new EmbeddedRecs(catalog, logOf(null, 2000));
    try {
      const before = recs.model.nextBest;
      recs.applyEvents(events.slice(2000, 2500));
      recs.applyEvents(events.slice(2500, 3000));
      expect(recs.model.nextBest).toBe(before); // not on the loop: the flush comes later
      await settled(recs);
      expect(recs.offLoop.adopted).toBeGreaterThanOrEqual(1);
      const full = buildModel(logOf(recs, 3000), {}, catalog);
      expect(recs.model.nextBest).not.toBe(before);
      for (let a = 0; a < full.items.size; a++) expect(listOf(recs.model.nextBest, a), `next-best of ${full.items.idAt(a)}`).toEqual(listOf(full.nextBest, a));
      const served = new EmbeddedRecs(catalog, logOf(recs, 3000));
      for (const item of catalog.values()) {
        expect(recs.recommendNow('NEXT_BEST_PRODUCT', item.itemId).entries).toEqual(served.recommendNow('NEXT_BEST_PRODUCT', item.itemId).entries);
      }
    } finally {
      await recs.close();
    }
  }, 120_000);

  it('a rebuild taken before a later build on the loop is not swapped in', () => {
    const log = logOf(null, 2000);
    const live = new LiveModel(log, {}, catalog);
    live.applyEvents(events.slice(2000, 3000));
    const job = live.takeRebuild('nextBest')!;
    expect(job).not.toBeNull();
    expect(live.takeRebuild('nextBest')).toBeNull(); // taken: no longer stale
    live.applyEvents(events.slice(3000));
    live.flush(); // the later build, on the loop
    const onLoop = live.nextBest;
    expect(live.adoptRebuild(job, buildKind('nextBest', EventLog.fromColumns(job.log), job.options, job.cutoff, job.facts))).toBe(false);
    expect(live.nextBest).toBe(onLoop);
    // a failed job hands its kind back only while it is the latest
    live.requeueRebuild(job);
    expect(live.pending).toBe(false);
  });
});
