import { readdirSync, readFileSync } from 'node:fs';
import { getPriority } from 'node:os';
import { describe, expect, it } from 'vitest';
import type { ItemModel } from '../../src/ports/backend.js';
import { buildKind, buildModel, Catalog, cutoffOf, EventLog, itemFacts, ItemIndex, latestTime, LiveModel, Recommender } from '../../src/recommender/index.js';
import type { ModelOptions, Neighbours, PriorStats, RecEvent, RecModel } from '../../src/recommender/index.js';
import { seededRandom } from '../../src/backends/embedded/demo.js';
import { EmbeddedRecs } from '../../src/backends/embedded/recs.js';
import { REBUILD_NICE } from '../../src/backends/embedded/rebuildScheduler.js';
import { rebuildNice } from '../../src/backends/embedded/rebuildNice.js';

/** Anchor a's next-best list as served: a live override, else the built arrays. */
function listOf(n: Neighbours, a: number): number[][] {
  const o = n.overrides?.get(a);
  if (o !== undefined) return Array.from(o.item, (b, j) => [b, o.score[j]!, o.evidence[j]!]);
  const out: number[][] = [];
  if (a + 1 >= n.start.length) return out;
  for (let j = n.start[a]!; j < n.start[a + 1]!; j++) out.push([n.item[j]!, n.score[j]!, n.evidence[j]!]);
  return out;
}

/** Views and purchases of `items` items (60: in 4 categories) by 300 shoppers, in time order. */
function shopping(n: number, items = 60): RecEvent[] {
  const random = seededRandom(20);
  let t = Date.UTC(2026, 0, 1);
  return Array.from({ length: n }, (_, i) => {
    t += Math.floor(random() * 600_000);
    const buyer = Math.floor(random() * 300);
    const purchase = random() < 0.3;
    return {
      kind: purchase ? 'purchase' : 'view', itemId: 1 + Math.floor(random() * random() * items), time: t,
      session: `s${Math.floor(i / 6)}`, user: `u${buyer}`, orderId: purchase ? `o${Math.floor(i / 3)}` : null,
    };
  });
}

async function settled(recs: EmbeddedRecs): Promise<void> {
  const deadline = Date.now() + 60_000; // a worker thread starts first: seconds on a loaded machine
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
    // due after every batch with purchases: the flush below rebuilds
    const live = new LiveModel(log, { nextBestRebuildShare: 0 }, catalog);
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

describe('next-best-product as a full build plus an overlay', () => {
  // Enough items that a batch marks a small share of them (else the flush builds the kind whole: quicker).
  const events = shopping(4000, 1000);
  const catalog = new Catalog();
  for (let id = 1; id <= 1000; id++) catalog.add({ itemId: id, name: `item ${id}`, categoryPath: `Dept/Cat${id % 7}`, stock: 'Available' } as ItemModel);
  // Events 5 minutes apart on average: 3 days hold about 860, and every batch takes some out by age.
  const options: ModelOptions = { maxAgeDays: 3, nextBestRebuildShare: 1, nextBestRebuildSeconds: 1e9 };
  /** The first `n` events in a log numbered as `live` numbers its items. */
  const logOf = (live: LiveModel, n: number): EventLog => {
    const log = new EventLog(ItemIndex.fromIds(live.items.ids()));
    for (const e of events.slice(0, n)) log.add(e);
    return log;
  };
  const expectLists = (live: LiveModel, expected: Neighbours, what: string): void => {
    for (let a = 0; a < live.items.size; a++) expect(listOf(live.nextBest, a), `${what}: next-best of ${live.items.idAt(a)}`).toEqual(listOf(expected, a));
  };
  /** A build over the first `n` events, given the prior statistics the live model keeps (none: its own). */
  const build = (live: LiveModel, n: number, frozen?: PriorStats): Neighbours => {
    const log = logOf(live, n);
    return buildKind('nextBest', log, options, cutoffOf(latestTime(log), options), itemFacts(log.items, catalog), frozen);
  };

  it('re-ranks what batches touch under the last full build\'s statistics, and is rebuilt whole when purchases since exceed the share', () => {
    const live = new LiveModel(new EventLog(), options, catalog);
    live.applyEvents(events.slice(0, 2000));
    expect(live.flush().rebuilt).toContain('nextBest'); // from an empty log: due at once
    const stats = live.nextBest.priorStats!;
    expectLists(live, build(live, 2000), 'after the rebuild');
    // Batches of a few purchases each, in and out, fewer than the window holds: the overlay, re-ranked at lookup or flush.
    let expired = 0;
    for (let at = 2000; at < 2300; at += 30) {
      const applied = live.applyEvents(events.slice(at, at + 30));
      expired += applied.expired;
      expect(applied.rebuilt).toEqual([]);
      expect(live.flush().rebuilt).not.toContain('nextBest');
    }
    expect(expired).toBeGreaterThan(0);
    expect(live.nextBest.priorStats).toBe(stats);
    const overlay = build(live, 2300, stats);
    expectLists(live, overlay, 'the overlay');
    // The overlay is not simply a full build: the statistics it keeps have moved since.
    const plain = build(live, 2300);
    expect(plain.priorStats!.total).not.toBe(stats.total);
    expect(Array.from({ length: live.items.size }, (_, a) => listOf(plain, a))).not.toEqual(Array.from({ length: live.items.size }, (_, a) => listOf(overlay, a)));
    // Past the share, the flush builds it whole: a plain full build's lists and statistics.
    live.applyEvents(events.slice(2300, 3000));
    expect(live.flush().rebuilt).toContain('nextBest');
    expectLists(live, build(live, 3000), 'after the periodic rebuild');
    expect(live.nextBest.priorStats!.total).toBe(build(live, 3000).priorStats!.total);
  });

  it('takes a rebuild made in another thread and re-ranks, under its statistics, what batches touched meanwhile', () => {
    const live = new LiveModel(new EventLog(), options, catalog);
    live.applyEvents(events.slice(0, 2000));
    live.flush();
    live.applyEvents(events.slice(2000, 2800));
    const job = live.takeRebuild('nextBest')!;
    expect(job).not.toBeNull();
    expect(live.takeRebuild('nextBest')).toBeNull(); // taken: purchases since start from 0
    // While the worker builds: more events, with some taken out by age.
    expect(live.applyEvents(events.slice(2800, 2900)).expired).toBeGreaterThan(0);
    const built = buildKind('nextBest', EventLog.fromColumns(job.log), job.options, job.cutoff, job.facts);
    expect(live.adoptRebuild(job, built)).toBe(true);
    expect(live.nextBest.priorStats).toBe(built.priorStats);
    // Lookups re-rank what is marked (a flush here would build the kind whole: the small log's
    // batches mark a large share of it): the lists of a build of every event under the job's statistics.
    for (let a = 0; a < live.items.size; a++) live.refresh('nextBest', a);
    expectLists(live, build(live, 2900, built.priorStats), 'after the adoption');
  });

  it('takes a rebuild taken before the log was compacted: the job keeps the columns it was given', () => {
    const log = new EventLog();
    const live = new LiveModel(log, options, catalog);
    live.applyEvents(events.slice(0, 2000));
    live.flush();
    live.applyEvents(events.slice(2000, 2800));
    const job = live.takeRebuild('nextBest')!;
    expect(job).not.toBeNull();
    // While the worker builds: the log compacted, more events (some taken out by age), compacted again.
    const held = log.length;
    expect(live.compact()!.kept).toBeLessThan(held);
    expect(live.applyEvents(events.slice(2800, 2900)).expired).toBeGreaterThan(0);
    live.compact();
    expect(job.log.length).toBe(held);
    const built = buildKind('nextBest', EventLog.fromColumns(job.log), job.options, job.cutoff, job.facts);
    expect(live.adoptRebuild(job, built)).toBe(true);
    for (let a = 0; a < live.items.size; a++) live.refresh('nextBest', a);
    expectLists(live, build(live, 2900, built.priorStats), 'after the adoption');
    const cutoff = cutoffOf(latestTime(log), options);
    expect(log.length).toBe(events.slice(0, 2900).filter((e) => e.time >= cutoff).length);
  });
});

const DAY = 86_400_000;

describe('post-browse rebuilt in a worker thread where a batch marks much of it', () => {
  // 1,000 items: a batch of 600 views marks a large share (the flush would build anew), one of 20 does not.
  const events = shopping(4000, 1000).map((e) => ({ ...e, kind: 'view' as const, orderId: null }));
  const catalog = new Catalog();
  for (let id = 1; id <= 1000; id++) catalog.add({ itemId: id, name: `item ${id}`, categoryPath: `Dept/Cat${id % 7}`, stock: 'Available' } as ItemModel);
  const logOf = (live: LiveModel, n: number): EventLog => {
    const log = new EventLog(ItemIndex.fromIds(live.items.ids()));
    for (const e of events.slice(0, n)) log.add(e);
    return log;
  };
  const build = (live: LiveModel, n: number, options: ModelOptions): Neighbours => {
    const log = logOf(live, n);
    return buildKind('postBrowse', log, options, cutoffOf(latestTime(log), options), itemFacts(log.items, catalog));
  };
  const expectLists = (live: LiveModel, expected: Neighbours, what: string): void => {
    for (let a = 0; a < live.items.size; a++) expect(listOf(live.postBrowse, a), `${what}: post-browse of ${live.items.idAt(a)}`).toEqual(listOf(expected, a));
  };

  // The default (no popularity discount), and a discount with a half-life: n(b) then enters the
  // neighbours' scores, and a later reference time moves every one (both re-marked at adoption).
  const cases: [string, ModelOptions][] = [
    ['the default scoring', { maxAgeDays: 3 }],
    ['a popularity discount', { maxAgeDays: 3, postBrowse: { damping: 0.3, prior: 0, order: { window: 10, backward: 0.5, exponent: 1 } } }],
    ['a popularity discount and a half-life', { maxAgeDays: 3, postBrowse: { damping: 0.3, prior: 0, order: { window: 10, backward: 0.5, exponent: 1 }, halfLifeDays: 1 } }],
  ];
  for (const [name, options] of cases) {
    it(`takes the job instead of building on the loop, and the lists equal a build of every event (${name})`, () => {
      const live = new LiveModel(new EventLog(), options, catalog);
      live.applyEvents(events.slice(0, 2000));
      live.flush();
      // A small batch: re-ranked, no job.
      live.applyEvents(events.slice(2000, 2020));
      expect(live.takeRebuild('postBrowse')).toBeNull();
      // A large one: a job, taken from the log's shared memory (no copy on the loop).
      live.applyEvents(events.slice(2020, 2620));
      const before = live.postBrowse;
      const job = live.takeRebuild('postBrowse')!;
      expect(job).not.toBeNull();
      expect(job.log.item.buffer).toBeInstanceOf(SharedArrayBuffer);
      expect(live.takeRebuild('postBrowse')).toBeNull(); // one at a time
      // The flush leaves the kind to the worker; lookups still re-rank what they read.
      expect(live.flush(['postBrowse']).rebuilt).toEqual([]);
      expect(live.postBrowse).toBe(before);
      // While the worker builds: more events (the log grows past its buffers), some taken out by age.
      let expired = 0;
      for (let at = 2620; at < 3400; at += 60) expired += live.applyEvents(events.slice(at, at + 60)).expired;
      expect(expired).toBeGreaterThan(0);
      const built = buildKind('postBrowse', EventLog.fromColumns(job.log), job.options, job.cutoff, job.facts);
      expect(live.adoptRebuild(job, built)).toBe(true);
      expect(live.postBrowse).toBe(built);
      // Lookups re-rank what changed since the take; the rest is the job's build.
      for (let a = 0; a < live.items.size; a++) live.refresh('postBrowse', a);
      expectLists(live, build(live, 3400, options), 'after the adoption');
    });
  }

  it('re-ranks every anchor at adoption where the recency reference moved since the take (a discount moves every score)', () => {
    const options: ModelOptions = { postBrowse: { damping: 0.3, prior: 0, order: { window: 10, backward: 0.5, exponent: 1 }, halfLifeDays: 1 } };
    const live = new LiveModel(new EventLog(), options, catalog);
    live.applyEvents(events.slice(0, 2000));
    live.flush();
    live.applyEvents(events.slice(2000, 2600));
    const job = live.takeRebuild('postBrowse')!;
    expect(job).not.toBeNull();
    // Three views a day and a half later, of items few others viewed: few anchors stand near them.
    const later = events[2599]!.time + 1.5 * DAY;
    const visit = [990, 995, 999].map((itemId, i) => ({ kind: 'view' as const, itemId, time: later + i, session: 'late', user: null, orderId: null }));
    live.applyEvents(visit);
    expect(live.adoptRebuild(job, buildKind('postBrowse', EventLog.fromColumns(job.log), job.options, job.cutoff, job.facts))).toBe(true);
    for (let a = 0; a < live.items.size; a++) live.refresh('postBrowse', a);
    const log = logOf(live, 2600);
    for (const e of visit) log.add(e);
    expectLists(live, buildKind('postBrowse', log, options, cutoffOf(latestTime(log), options), itemFacts(log.items, catalog)), 'after the adoption');
  });

  it('a job that failed leaves its anchors marked, and the next flush makes the lists current', () => {
    const options: ModelOptions = { maxAgeDays: 3 };
    const live = new LiveModel(new EventLog(), options, catalog);
    live.applyEvents(events.slice(0, 2000));
    live.flush();
    live.applyEvents(events.slice(2000, 2600));
    const job = live.takeRebuild('postBrowse')!;
    live.applyEvents(events.slice(2600, 2700));
    live.requeueRebuild(job);
    expect(live.pending).toBe(true);
    live.flush();
    expectLists(live, build(live, 2700, options), 'after the flush');
    expect(live.takeRebuild('postBrowse')).toBeNull(); // nothing left to rebuild
  });

  it('serves, through EmbeddedRecs, every lookup fresh while the worker builds and the full build\'s lists after', async () => {
    const log = new EventLog();
    for (const e of events.slice(0, 2000)) log.add(e);
    const recs = new EmbeddedRecs(catalog, log, { maxAgeDays: 3 });
    try {
      recs.applyEvents(events.slice(2000, 2020)); // the live model is made at the first batch
      recs.flush();
      const before = recs.model.postBrowse;
      recs.applyEvents(events.slice(2020, 2800));
      const live = recs.model as LiveModel;
      // Answers follow the batch at once (the anchors a lookup reads are re-ranked), not after the worker.
      const now = (): RecModel => buildModel(logOf(live, 2800), { maxAgeDays: 3 }, catalog);
      const expected = new Recommender(now(), catalog);
      for (let id = 1; id <= 1000; id += 7) expect(recs.recommendNow('POST_BROWSE', id).entries, `post-browse of ${id}`).toEqual(expected.recommend('POST_BROWSE', id));
      await settled(recs);
      expect(recs.offLoop.adopted).toBeGreaterThanOrEqual(1);
      expect(recs.model.postBrowse).not.toBe(before);
      recs.flush();
      expectLists(recs.model as LiveModel, build(live, 2800, { maxAgeDays: 3 }), 'after the worker');
    } finally {
      await recs.close();
    }
  }, 120_000);
});

/** The nice value of each of this process's threads (Linux: /proc/self/task/<tid>/stat, its 19th field). */
function threadNices(): number[] {
  const nices: number[] = [];
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      nices.push(Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]));
    } catch {
      // the thread ended between the listing and the read
    }
  }
  return nices;
}

describe('rebuildNice', () => {
  it('is REBUILD_NICE below the gateway\'s own nice value, never past 19', () => {
    expect(rebuildNice(0, 10)).toBe(10);
    expect(rebuildNice(5, 10)).toBe(15);
    expect(rebuildNice(15, 10)).toBe(19);
    expect(rebuildNice(-5, 10)).toBe(5);
  });
});

describe.runIf(process.platform === 'linux')('a rebuild thread takes what CPU requests leave', () => {
  it('runs REBUILD_NICE below the event loop, which keeps its own priority', async () => {
    const own = getPriority();
    const expected = rebuildNice(own, REBUILD_NICE);
    expect(expected).toBeGreaterThan(own);
    const atNice = (): number => threadNices().filter((nice) => nice === expected).length;
    const before = atNice();
    const log = new EventLog();
    for (const e of shopping(2000)) log.add(e);
    const recs = new EmbeddedRecs(new Catalog(), log);
    try {
      recs.applyEvents(shopping(3000).slice(2000)); // next-best-product's rebuild is due: a worker takes it
      await settled(recs);
      expect(recs.offLoop.adopted).toBeGreaterThanOrEqual(1);
      expect(atNice()).toBeGreaterThan(before); // the worker waits for the next job
      expect(getPriority()).toBe(own);
    } finally {
      await recs.close();
    }
  }, 120_000);
});
