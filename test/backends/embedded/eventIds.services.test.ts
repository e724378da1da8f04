import { afterAll, describe, expect, it } from 'vitest';
import { EmbeddedIngest } from '../../../src/backends/embedded/index.js';
import { openRecsData } from '../../../src/backends/embedded/loadFromStore.js';
import type { EventRow, RecsDataStore, RecsSource } from '../../../src/backends/embedded/liveStore.js';
import { openEmbeddedRecs } from '../../../src/backends/embedded/openRecs.js';
import { type EmbeddedRecs } from '../../../src/backends/embedded/recs.js';
import type { EventInputModel } from '../../../src/ports/backend.js';
import type { RecEvent } from '../../../src/recommender/index.js';
import { coViews, itemsFrom, principal } from '../../helpers/liveEvents.js';
import { DATABASE_URL, dropSchema, tempDir, testSchema } from '../../helpers/stores.js';
import { inMemoryIngest } from '../../helpers/memoryIngest.js';

/**
 * Events' own ids (eventId): a call sent again after its answer was lost (a timeout, a dropped
 * connection, a process killed between its commit and its answer) keeps each event once, on both
 * stores, across replicas sending at once, and a call that fails takes none of its ids.
 */
const ADMIN = principal(true);
const T = Date.UTC(2026, 0, 1);
const view = (itemId: number, session: string, eventId?: string): RecEvent => ({ kind: 'view', itemId, session, user: null, orderId: null, time: T, eventId: eventId ?? null });
const items = (rows: readonly EventRow[]): number[] => rows.map((row) => row[2]);

interface Fresh {
  source: RecsSource;
  dispose(): Promise<void>;
}

const kinds: { name: 'sqlite' | 'postgres'; fresh(): Fresh }[] = [
  {
    name: 'sqlite',
    fresh() {
      const data = tempDir('recs-eventids-');
      return { source: { kind: 'sqlite', dataDir: data.dir }, dispose: () => Promise.resolve(data.remove()) };
    },
  },
  {
    name: 'postgres',
    fresh() {
      const schema = testSchema();
      return { source: { kind: 'postgres', connectionString: DATABASE_URL, schema }, dispose: () => dropSchema(schema) };
    },
  },
];

for (const kind of kinds) {
  describe(`eventId on ${kind.name}`, () => {
    const disposals: (() => Promise<void>)[] = [];
    afterAll(async () => {
      for (const dispose of disposals.reverse()) await dispose();
    });
    const open = async (): Promise<{ source: RecsSource; store: RecsDataStore }> => {
      const fresh = kind.fresh();
      disposals.push(() => fresh.dispose());
      const store = (await openRecsData(fresh.source))!;
      disposals.push(() => store.close());
      return { source: fresh.source, store };
    };

    it('a call sent again stores nothing twice: ids of earlier calls and earlier in the call are left out, events without one kept', async () => {
      const { store } = await open();
      const call = [view(1, 's', 'e-1'), view(2, 's', 'e-2'), view(3, 's')];
      const first = await store.appendEvents(call);
      expect(items(first)).toEqual([1, 2, 3]);
      // the same call again: only the event without an id is stored again
      const again = await store.appendEvents(call);
      expect(items(again)).toEqual([3]);
      // a repeat within a call keeps its first; an id of an earlier call is left out wherever it stands
      const mixed = await store.appendEvents([view(4, 't', 'e-3'), view(5, 't', 'e-3'), view(6, 't', 'e-1'), view(7, 't', 'e-4')]);
      expect(items(mixed)).toEqual([4, 7]);
      // a call of duplicates only stores nothing, and answers no rows
      expect(await store.appendEvents([view(8, 'u', 'e-2'), view(9, 'u', 'e-4')])).toEqual([]);
      // the rows answered are the rows stored, in id order, with no gap a follower would trip on
      const stored = await store.eventsAfter(0, 100);
      expect(stored).toEqual([...first, ...again, ...mixed]);
      expect(stored.map((row) => row[0])).toEqual(stored.map((_, i) => stored[0]![0] + i));
      // ids are names of their own: an eventId equal to a session's name is no duplicate of it
      expect(items(await store.appendEvents([view(10, 'e-9', 's')]))).toEqual([10]);
    });

    it('answers the rows it stored, whatever the database makes of a name', async () => {
      // PostgreSQL gets a lone surrogate as U+FFFD (recordEvents refuses one; the store is below
      // that check): the events kept were matched by name, the name sent against the name stored,
      // and row 1's id was answered for item 2's event, and row 2 not at all
      const { store } = await open();
      const answered = await store.appendEvents([view(1, 's', 'q\uD800'), view(2, 's', 'plain'), view(3, 's', 'z\uD801'), view(4, 's', 'z\uDC01')]);
      expect(answered).toEqual(await store.eventsAfter(0, 100));
      expect(answered.length).toBeGreaterThanOrEqual(3);
    });

    it('a call that fails takes none of its ids: sent again, it is stored', async () => {
      const { store } = await open();
      // NOT NULL refuses an item id of null: the call fails whole
      const bad = { ...view(11, 'v', 'f-2'), itemId: null as unknown as number };
      await expect(store.appendEvents([view(10, 'v', 'f-1'), bad])).rejects.toThrow();
      expect(await store.eventsAfter(0, 100)).toEqual([]);
      expect(items(await store.appendEvents([view(10, 'v', 'f-1'), view(11, 'v', 'f-2')]))).toEqual([10, 11]);
    });

    it('two replicas sending the same call at once store it once', async () => {
      const { source, store } = await open();
      const other = (await openRecsData(source))!;
      disposals.push(() => other.close());
      const call = Array.from({ length: 50 }, (_, i) => view(100 + i, `r-${i % 5}`, `race-${i}`));
      for (let round = 0; round < 3; round++) {
        const answers = await Promise.all([store.appendEvents(call), other.appendEvents(call), store.appendEvents(call)]);
        // whichever came first stored them; the others found every id taken
        expect(answers.map((rows) => rows.length).sort((a, b) => a - b)).toEqual(round === 0 ? [0, 0, 50] : [0, 0, 0]);
      }
      expect(items(await store.eventsAfter(0, 1000))).toEqual(call.map((e) => e.itemId));
    });

    /** A fresh store's model and recordEvents, as a gateway opens them. */
    const openIngest = async (): Promise<{ fresh: Fresh; recs: EmbeddedRecs; ingest: EmbeddedIngest }> => {
      const fresh = kind.fresh();
      disposals.push(() => fresh.dispose());
      const { dir, remove } = tempDir('recs-eventids-open-');
      disposals.push(() => Promise.resolve(remove()));
      const recs: EmbeddedRecs = await openEmbeddedRecs(
        fresh.source.kind === 'sqlite' ? { dataDir: fresh.source.dataDir, followIntervalMs: 0 } : { dataDir: dir, databaseUrl: DATABASE_URL, schema: fresh.source.schema!, followIntervalMs: 0 },
      );
      disposals.push(() => recs.close());
      return { fresh, recs, ingest: new EmbeddedIngest(recs) };
    };

    it('through recordEvents: the answer counts the duplicates, and the model takes each event once', async () => {
      const { fresh, recs, ingest } = await openIngest();
      await ingest.upsertItems(ADMIN, itemsFrom(300, 12));
      const withIds = (events: EventInputModel[], prefix: string): EventInputModel[] => events.map((e, i) => ({ ...e, eventId: `${prefix}-${i}` }));
      const call = withIds(coViews(300, 301, 3, 1), 'visit');
      expect(await ingest.recordEvents(ADMIN, call)).toEqual({ accepted: 6, duplicates: 0, itemsWithoutRecord: 0 });
      const evidence = (): number | undefined => recs.recommendNow('POST_BROWSE', 300).entries.find((e) => e.itemId === 301)?.evidence;
      expect(evidence()).toBe(3);
      // the retry, and a call half of which was sent before
      expect(await ingest.recordEvents(ADMIN, call)).toEqual({ accepted: 6, duplicates: 6, itemsWithoutRecord: 0, kept: Array(6).fill(false) });
      const half = [...call.slice(0, 2), ...withIds(coViews(300, 301, 1, 10), 'later')];
      expect(await ingest.recordEvents(ADMIN, half)).toEqual({ accepted: 4, duplicates: 2, itemsWithoutRecord: 0, kept: [false, false, true, true] });
      expect(evidence()).toBe(4);
      const store = (await openRecsData(fresh.source))!;
      try {
        expect((await store.counts()).events).toBe(8);
      } finally {
        await store.close();
      }
    });

    it('refuses an identifier with a lone surrogate, which PostgreSQL cannot hold as sent, and stores nothing of the call', async () => {
      // node-postgres writes a lone surrogate as U+FFFD: \uD800 and \uDC00 were one eventId there
      // (a first call answered duplicates: 1, yet stored), the store's rows were matched to the
      // wrong events (the model took the next event under the refused one's row id), and a
      // session named so was stored as none. SQLite kept them apart: refused alike on both.
      const { recs, ingest } = await openIngest();
      const [first, second] = coViews(400, 401, 1, 1);
      for (const [field, value] of [['eventId', 'a\uD800'], ['eventId', '\uDC00b'], ['sessionId', 'visit-\uDBFF'], ['userId', '\uDFFF'], ['orderId', 'o\uD800\uD800']] as const) {
        await expect(ingest.recordEvents(ADMIN, [{ ...first!, eventId: 'plain' }, { ...second!, kind: 'PURCHASE', [field]: value }])).rejects.toMatchObject({
          message: `events[1].${field}: must be well-formed Unicode (no lone surrogate, \\uD800 to \\uDFFF)`,
          extensions: { code: 'BAD_USER_INPUT', field: `events[1].${field}` },
        });
      }
      expect(recs.state().lastEventId).toBe(0);
      // a pair (an emoji) is a character like any other, and ids that differ only there stay apart
      expect(await ingest.recordEvents(ADMIN, [{ ...first!, eventId: 'p-\uD83C\uDF89' }, { ...second!, eventId: 'p-\uD83C\uDF8A' }])).toEqual({ accepted: 2, duplicates: 0, itemsWithoutRecord: 2 });
      expect(await ingest.recordEvents(ADMIN, [{ ...first!, eventId: 'p-\uD83C\uDF89' }])).toMatchObject({ accepted: 1, duplicates: 1 });
    });
  });
}

describe('eventId on the demo shop in memory, with a store in memory (test/helpers/memoryIngest.ts)', () => {
  it('is kept once too, for as long as the process runs; an eventId too long or empty is refused, naming the event', async () => {
    const recs = await openEmbeddedRecs({ dataDir: null });
    try {
      const ingest = inMemoryIngest(recs);
      const events = coViews(31000124, 31000005, 2, 1).map((e, i) => ({ ...e, eventId: `m-${i}` }));
      expect(await ingest.recordEvents(ADMIN, events)).toMatchObject({ accepted: 4, duplicates: 0 });
      expect(await ingest.recordEvents(ADMIN, [...events, { ...events[0]!, eventId: 'm-new' }])).toMatchObject({ accepted: 5, duplicates: 4 });
      await expect(ingest.recordEvents(ADMIN, [{ ...events[0]!, eventId: 'x'.repeat(201) }])).rejects.toMatchObject({
        message: 'events[0].eventId: at most 200 characters', extensions: { code: 'BAD_USER_INPUT', field: 'events[0].eventId' },
      });
      await expect(ingest.recordEvents(ADMIN, [events[1]!, { ...events[0]!, eventId: '' }])).rejects.toMatchObject({
        message: 'events[1].eventId: must not be empty', extensions: { code: 'BAD_USER_INPUT' },
      });
    } finally {
      await recs.close();
    }
  });
});
