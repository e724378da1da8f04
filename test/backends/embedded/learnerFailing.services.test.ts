import { afterAll, describe, expect, it } from 'vitest';
import { readPublishState } from '../../../src/backends/embedded/publishedLists.js';
import { parseItemRecord } from '../../../src/model/itemRecord.js';
import { roleLagging } from '../../../src/observability/readiness.js';
import { seededEvents, startLearner, until } from '../../helpers/roles.js';

/** A learner whose sweeps fail (a probe found one: a category too large for a spread) stops saying its lists are
 * current, so every replica's /readyz turns degraded after RECS_MAX_LAG_SECONDS; it says why once, and recovers. */
describe('a learner that cannot, or should not, publish', () => {
  const cleanups: (() => Promise<unknown>)[] = [];
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
  });

  it('lets its lists age while its sweeps fail, and says current again once one succeeds', async () => {
    const { recs, pool, names, publisher } = await startLearner(200, seededEvents(200, 2000, 1), cleanups);
    expect(await until(() => publisher.stats.sweeps >= 1)).toBe(true);
    const lines: string[] = [];
    (publisher as unknown as { say: (line: string) => void }).say = (line) => lines.push(line);

    const ranked = recs.rankedUnderNow.bind(recs);
    recs.rankedUnderNow = () => {
      throw new RangeError('Maximum call stack size exceeded');
    };
    await recs.store!.appendEvents(seededEvents(200, 50, 2, Date.now() - 60_000));
    await recs.poll();
    // a sweep tried and failed: from then on no word that the lists are current
    expect(await until(() => lines.length > 0, 10_000)).toBe(true);
    const stalled = (await readPublishState(pool, names.lockKey)).publishedAt!;
    await new Promise((r) => setTimeout(r, 2500));
    const state = await readPublishState(pool, names.lockKey);
    expect(state.publishedAt).toBe(stalled);
    expect(lines.filter((l) => l.includes('cannot publish lists')).length).toBe(1);
    const age = (Date.now() - publisher.stats.lastPublishAt!) / 1000;
    expect(roleLagging({ role: 'learn', learnerActive: true, listsAgeSeconds: age, maxLagSeconds: 2 })).toBe(true);
    expect(roleLagging({ role: 'serve', learnerActive: true, listsAgeSeconds: (Date.now() - stalled) / 1000, maxLagSeconds: 2 })).toBe(true);

    recs.rankedUnderNow = ranked;
    expect(await until(async () => ((await readPublishState(pool, names.lockKey)).publishedAt ?? 0) > stalled, 10_000)).toBe(true);
    expect(lines.at(-1)).toContain('publishing lists again');
    expect(roleLagging({ role: 'learn', learnerActive: true, listsAgeSeconds: (Date.now() - publisher.stats.lastPublishAt!) / 1000, maxLagSeconds: 2 })).toBe(false);
  }, 60_000);

  it('publishes nothing of the demo shop an empty store gives it, and the shop\'s lists once it has a catalogue', async () => {
    const { recs, store, pool, publisher } = await startLearner(0, [], cleanups);
    expect(recs.state().mode).toBe('demo');
    expect(await until(() => publisher.stats.publishes >= 2, 10_000)).toBe(true);
    const count = async (): Promise<number> => Number((await pool.query<{ n: string }>('SELECT count(*) AS n FROM recs_published_lists')).rows[0]!.n);
    expect(await count()).toBe(0);
    await store.upsertItems(Array.from({ length: 20 }, (_, i) => parseItemRecord({ itemId: i + 1, name: `item ${i + 1}`, categoryPath: 'A/B' })));
    await store.appendEvents(seededEvents(20, 200, 3));
    await recs.poll();
    expect(await until(async () => (await count()) >= 40, 20_000)).toBe(true);
  }, 60_000);
});
