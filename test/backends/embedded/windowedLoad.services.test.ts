import { afterAll, describe, expect, it } from 'vitest';
import { EmbeddedIngest } from '../../../src/backends/embedded/index.js';
import { openRecsData } from '../../../src/backends/embedded/loadFromStore.js';
import { EmbeddedRecs } from '../../../src/backends/embedded/recs.js';
import { openEmbeddedRecs } from '../../../src/backends/embedded/openRecs.js';
import { buildDemo, demoEndsAt } from '../../../src/backends/embedded/demo.js';
import { Catalog, EventLog } from '../../../src/recommender/index.js';
import type { ModelOptions } from '../../../src/recommender/index.js';
import { itemsFrom, principal, shopping } from '../../helpers/liveEvents.js';
import { recsStoreKinds } from '../../helpers/stores.js';

/*
 * A shop's store keeps every event it was sent; the model counts those within
 * RECS_EVENTS_MAX_AGE_DAYS of the newest. A start (and a whole reload) reads only those: the
 * older ones stay in the store, unread, and the lists are those of a model given every event.
 */

const ADMIN = principal(true);
const options: ModelOptions = { maxAgeDays: 90 };

const kinds = recsStoreKinds.map(({ name, fresh }) => ({
  name,
  fresh: () => {
    const store = fresh('recs-window');
    return { ...store, open: (model: ModelOptions): Promise<EmbeddedRecs> => openEmbeddedRecs({ ...store.io, followIntervalMs: 0, model }) };
  },
}));

for (const kind of kinds) {
  describe(`a start on ${kind.name} reads the events that count`, () => {
    const disposals: (() => Promise<void>)[] = [];
    afterAll(async () => {
      for (const d of disposals.reverse()) await d();
    });

    it('leaves the events older than the window in the store, and serves the lists of a model given all of them', async () => {
      const f = kind.fresh();
      disposals.push(() => f.dispose());
      const items = itemsFrom(100, 12);
      const old = shopping('old', 200, [[100, 101], [102, 103], [104, 100]]);
      // one visit just inside the window's edge, measured from the newest event
      const edge = shopping('edge', 89, [[105, 106]]);
      const recent = shopping('new', 1, [[100, 102], [101, 103], [106, 107], [104, 105]]);
      {
        const writer = await f.open({ maxAgeDays: 0 });
        const ingest = new EmbeddedIngest(writer);
        await ingest.upsertItems(ADMIN, items);
        for (const batch of [old, edge, recent]) await ingest.recordEvents(ADMIN, batch);
        await writer.close();
      }
      const all = [...old, ...edge, ...recent];
      const store = (await openRecsData(f.source))!;
      try {
        expect((await store.counts()).events).toBe(all.length);
      } finally {
        await store.close();
      }

      const recs = await f.open(options);
      disposals.push(() => recs.close());
      // the old ones were not read: only the window's events are in the model's log
      expect(recs.state().events).toBe(edge.length + recent.length);

      // the lists of a model given every event (which leaves the old ones out itself)
      const catalog = new Catalog();
      for (const item of items) catalog.add(item);
      const log = new EventLog();
      for (const e of all) log.add({ kind: e.kind === 'PURCHASE' ? 'purchase' : 'view', itemId: e.itemId, session: e.sessionId, user: e.userId, orderId: e.orderId, time: e.time });
      const whole = new EmbeddedRecs(catalog, log, options);
      let entries = 0;
      for (const item of items) {
        for (const k of ['POST_BROWSE', 'NEXT_BEST_PRODUCT'] as const) {
          const served = recs.recommendNow(k, item.itemId).entries;
          expect(served, `${k} of ${item.itemId}`).toEqual(whole.recommendNow(k, item.itemId).entries);
          entries += served.length;
        }
      }
      expect(entries).toBeGreaterThan(0);

      // RECS_EVENTS_MAX_AGE_DAYS=0 counts them all: all are read
      const everything = await f.open({ maxAgeDays: 0 });
      disposals.push(() => everything.close());
      expect(everything.state().events).toBe(all.length);
    }, 60_000);

    it('a store without a catalogue: the demo shop with the stored events that count', async () => {
      const f = kind.fresh();
      disposals.push(() => f.dispose());
      const old = shopping('old', 200, [[31000124, 31000125]]);
      const recent = shopping('new', 1, [[31000124, 31000126]]);
      {
        const writer = await f.open({ maxAgeDays: 0 });
        const ingest = new EmbeddedIngest(writer);
        for (const batch of [old, recent]) await ingest.recordEvents(ADMIN, batch);
        await writer.close();
      }
      const recs = await f.open(options);
      disposals.push(() => recs.close());
      expect(recs.state().mode).toBe('demo');
      expect(recs.state().events).toBe(buildDemo({ endsAt: demoEndsAt() }).log.length + recent.length);
    }, 60_000);
  });
}
