import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { EmbeddedIngest } from '../../src/backends/embedded/index.js';
import { openRecsData } from '../../src/backends/embedded/loadFromStore.js';
import { openEmbeddedRecs } from '../../src/backends/embedded/openRecs.js';
import { type EmbeddedRecs } from '../../src/backends/embedded/recs.js';
import type { EventInputModel } from '../../src/ports/backend.js';
import { runPrune } from '../../src/cli/pruneCommand.js';
import { DB_FILE, RecsStore } from '../../src/backends/embedded/store.js';
import type { RecEvent } from '../../src/recommender/index.js';
import { itemsFrom, principal, shopping, storeCatalogue } from '../helpers/liveEvents.js';
import { match } from '../helpers/matchers.js';
import { runCli } from '../helpers/processes.js';
import { DATABASE_URL, recsStoreKinds, tempDir, type FreshRecsStore } from '../helpers/stores.js';

/*
 * `recs-gateway prune events`: the events too old to count leave the store; what gateways serve,
 * started before or after, does not change, and gateways writing meanwhile lose nothing.
 */

const ADMIN = principal(true);
const ITEMS = itemsFrom(100, 12);

interface Store extends FreshRecsStore {
  open(maxAgeDays: number, followIntervalMs?: number): Promise<EmbeddedRecs>;
}

const kinds = recsStoreKinds.map(({ name, fresh }) => ({
  name,
  fresh: (): Store => {
    const store = fresh('recs-prune');
    return { ...store, open: (maxAgeDays, followIntervalMs = 0) => openEmbeddedRecs({ ...store.io, followIntervalMs, model: { maxAgeDays } }) };
  },
}));

/** Whether the store's file, or its tables, are there. */
async function exists(store: Store): Promise<boolean> {
  if (store.source.kind === 'sqlite') return existsSync(join(store.source.dataDir, DB_FILE));
  const client = new pg.Client({ connectionString: DATABASE_URL });
  await client.connect();
  try {
    return (await client.query('SELECT 1 FROM information_schema.tables WHERE table_schema = $1', [store.source.schema])).rows.length > 0;
  } finally {
    await client.end();
  }
}

const text = (): { stream: Writable; lines(): string } => {
  let all = '';
  return { stream: new Writable({ write: (c, _e, done) => { all += String(c); done(); } }), lines: () => all };
};

async function prune(store: Store, argv: string[] = ['events'], maxAgeDays = 90): Promise<{ code: number; out: string; err: string }> {
  const out = text();
  const err = text();
  const code = await runPrune(argv, { ...store.io, maxAgeDays, stdout: out.stream, stderr: err.stream });
  return { code, out: out.lines(), err: err.lines() };
}

async function eventCount(store: Store): Promise<number> {
  const opened = (await openRecsData(store.source))!;
  try {
    return (await opened.counts()).events;
  } finally {
    await opened.close();
  }
}

/** Takes the eventIds' times out of the store, as the version before they had one kept it (no such column). */
async function earlierVersion(store: Store): Promise<void> {
  if (store.source.kind === 'sqlite') {
    const db = new Database(join(store.source.dataDir, DB_FILE));
    try {
      db.exec('ALTER TABLE keys DROP COLUMN time');
    } finally {
      db.close();
    }
    return;
  }
  const client = new pg.Client({ connectionString: DATABASE_URL });
  await client.connect();
  try {
    await client.query(`ALTER TABLE ${store.source.schema!}.recs_keys DROP COLUMN time`);
  } finally {
    await client.end();
  }
}

/** Every list of both kinds over the catalogue, as served. */
function lists(recs: EmbeddedRecs): unknown[] {
  return ITEMS.flatMap((item) => (['POST_BROWSE', 'NEXT_BEST_PRODUCT'] as const).map((k) => recs.recommendNow(k, item.itemId).entries));
}

const withIds = (events: EventInputModel[], tag: string): EventInputModel[] => events.map((e, i) => ({ ...e, eventId: `${tag}-${i}` }));

/** The catalogue, then `batches` sent as a gateway takes them. */
async function write(store: Store, batches: EventInputModel[][]): Promise<void> {
  await storeCatalogue(store.source, ITEMS);
  const writer = await store.open(0);
  try {
    const ingest = new EmbeddedIngest(writer);
    for (const batch of batches) await ingest.recordEvents(ADMIN, batch);
  } finally {
    await writer.close();
  }
}

for (const kind of kinds) {
  describe(`prune events on ${kind.name}`, () => {
    const disposals: (() => Promise<void>)[] = [];
    afterAll(async () => {
      for (const d of disposals.reverse()) await d();
    });
    const fresh = (): Store => {
      const store = kind.fresh();
      disposals.push(() => store.dispose());
      return store;
    };

    it('deletes the events too old to count, and the lists served before and after are the same', async () => {
      const store = fresh();
      const old = shopping('old', 200, [[100, 101], [102, 103]]);
      const edge = shopping('edge', 89, [[104, 105]]);
      const recent = shopping('new', 1, [[100, 102], [101, 103], [105, 106]]);
      await write(store, [old, edge, recent]);
      // a gateway running on the store through the prune, following it
      const running = await store.open(90, 50);
      disposals.push(() => running.close());
      const before = lists(running);
      expect(before.flat().length).toBeGreaterThan(0);

      // --dry-run says what would go, and deletes nothing
      const dry = await prune(store, ['events', '--dry-run']);
      expect(dry).toMatchObject({ code: 0, err: '' });
      expect(dry.out).toMatch(new RegExp(`^events: ${old.length} older than 90 days before the newest \\(\\d{4}-.*\\) would be deleted, ${edge.length + recent.length} left in .*\\(dry run: nothing deleted\\)`));
      expect(await eventCount(store)).toBe(old.length + edge.length + recent.length);

      const done = await prune(store);
      expect(done).toMatchObject({ code: 0, err: '' });
      expect(done.out).toMatch(new RegExp(`^events: ${old.length} older than 90 days before the newest \\(\\d{4}-.*\\) deleted, ${edge.length + recent.length} left in .*; 0 eventIds`));
      expect(await eventCount(store)).toBe(edge.length + recent.length);

      // the running gateway was not made to reload (nothing it counts went), and serves as before
      await running.poll();
      expect(running.wholeReloads).toEqual({ inWorker: 0, onLoop: 0 });
      expect(lists(running)).toEqual(before);
      // and one started now
      const started = await store.open(90);
      disposals.push(() => started.close());
      expect(lists(started)).toEqual(before);

      // again: nothing more to delete
      expect((await prune(store)).out).toMatch(/^events: 0 older than 90 days/);
    }, 60_000);

    it('loses nothing a gateway writes while it runs, over several transactions, and keeps the last event whatever its age', async () => {
      const store = fresh();
      // more old events than one transaction deletes
      const old = Array.from({ length: 5 }, (_, i) => shopping(`old${i}`, 300 - i, [[100, 101], [102, 103]], 3000));
      const recent = shopping('new', 1, [[100, 102]]);
      expect(old.flat().length).toBeGreaterThan(40_000);
      await write(store, [...old, recent]);

      const writer = await store.open(90);
      disposals.push(() => writer.close());
      const ingest = new EmbeddedIngest(writer);
      const during = Array.from({ length: 10 }, (_, i) => shopping(`during${i}`, 0.5, [[108, 109]], 10));
      const [done] = await Promise.all([
        prune(store),
        (async () => {
          for (const batch of during) await ingest.recordEvents(ADMIN, batch);
        })(),
      ]);
      expect(done.code).toBe(0);
      const left = recent.length + during.flat().length;
      expect(await eventCount(store)).toBe(left);

      // an old event stored last (an import of history after the live ones) keeps its id taken
      const lastOld: EventInputModel = { kind: 'VIEW', itemId: 110, sessionId: 'late-import', userId: null, orderId: null, time: Date.now() - 250 * 86_400_000 };
      await ingest.recordEvents(ADMIN, [lastOld]);
      expect((await prune(store)).out).toMatch(/^events: 0 older than 90 days/);
      expect(await eventCount(store)).toBe(left + 1);
    }, 120_000);

    it('forgets the eventIds of the events it deletes, and keeps those of the events that count', async () => {
      const store = fresh();
      const old = withIds(shopping('old', 200, [[100, 101]], 4), 'old');
      const recent = withIds(shopping('new', 1, [[100, 102]], 4), 'new');
      await write(store, [old, recent]);

      expect((await prune(store, ['events', '--dry-run'])).out).toMatch(new RegExp(`would be deleted, ${recent.length} left in .*; ${old.length} eventIds of events that old would be forgotten \\(dry run`));
      const done = await prune(store);
      expect(done.out).toMatch(new RegExp(`^events: ${old.length} older than 90 days .* deleted, ${recent.length} left in .*; ${old.length} eventIds of events that old forgotten`));
      const writer = await store.open(90);
      disposals.push(() => writer.close());
      const ingest = new EmbeddedIngest(writer);
      // the recent ones are still known
      expect(await ingest.recordEvents(ADMIN, recent)).toMatchObject({ accepted: recent.length, duplicates: recent.length });
      // an old one sent again is stored again: it counts for nothing (as old as the rest), and goes at the next prune
      expect(await ingest.recordEvents(ADMIN, old.slice(1, 3))).toMatchObject({ accepted: 2, duplicates: 0 });
      expect(await eventCount(store)).toBe(recent.length + 2);
      // (a live one after them, so that the last event stored is not one of them: it would stay)
      await ingest.recordEvents(ADMIN, withIds(shopping('later', 0.5, [[103, 104]], 1), 'later'));
      expect((await prune(store)).out).toMatch(/^events: 2 older than 90 days .*; 2 eventIds of events that old forgotten/);
    }, 60_000);

    it('a store of the version before eventIds had a time: opened, it keeps them all, and still knows them', async () => {
      const store = fresh();
      const old = withIds(shopping('old', 200, [[100, 101]], 2), 'old');
      const recent = withIds(shopping('new', 1, [[100, 102]], 2), 'new');
      await write(store, [old, recent]);
      await earlierVersion(store);
      const writer = await store.open(90);
      disposals.push(() => writer.close());
      expect((await prune(store)).out).toMatch(new RegExp(`^events: ${old.length} older .*; 0 eventIds of events that old forgotten`));
      expect(await new EmbeddedIngest(writer).recordEvents(ADMIN, [...old, ...recent])).toMatchObject({ duplicates: old.length + recent.length });
    }, 60_000);

    // On PostgreSQL it made the tables (and the schema) of a database that had none, as a gateway
    // does, and said "no events": a DATABASE_URL naming the wrong database got five recs_ tables.
    it('on a store that is not there says so, and makes none', async () => {
      const store = fresh();
      const done = await prune(store);
      expect(done).toMatchObject({ code: 0, err: '', out: match.stringMatching(/^no store (at|in) .*: nothing to prune/) });
      expect(await exists(store)).toBe(false);
    });

    it('refuses what makes no sense, saying why, and deletes nothing', async () => {
      const store = fresh();
      await write(store, [shopping('old', 200, [[100, 101]], 2), shopping('new', 1, [[100, 101]], 2)]);
      for (const argv of [['events', '--older-than-days', '0'], ['events', '--older-than-days', 'abc'], ['events', '--older-than-days', '-3'], ['events', '--older-than-days', '1.5'], [], ['items'], ['events', '--days', '3']]) {
        const refused = await prune(store, argv);
        expect(refused.code, JSON.stringify(argv)).toBe(2);
        expect(refused.err.length, JSON.stringify(argv)).toBeGreaterThan(0);
      }
      const noWindow = await prune(store, ['events'], 0);
      expect(noWindow).toMatchObject({ code: 2, err: match.stringContaining('RECS_EVENTS_MAX_AGE_DAYS is 0') });
      expect(await eventCount(store)).toBe(12);
      // given a window, it prunes even then
      expect((await prune(store, ['events', '--older-than-days', '30'], 0)).out).toMatch(/^events: 6 older than 30 days/);
      expect(await eventCount(store)).toBe(6);
      // one day is a day (a probe read "older than 1 days")
      expect((await prune(store, ['events', '--older-than-days', '1', '--dry-run'], 0)).out).toMatch(/^events: \d+ older than 1 day before the newest/);
    }, 60_000);
  });
}

describe('recs-gateway prune events, as a command (a process of its own)', () => {
  const dirs: { remove(): void }[] = [];
  afterAll(() => {
    for (const d of dirs) d.remove();
  });

  it('on a DATA_DIR without a store says so; with one, prunes by RECS_EVENTS_MAX_AGE_DAYS', async () => {
    const empty = tempDir('recs-prune-cli-');
    dirs.push(empty);
    const none = await runCli(['prune', 'events'], { DATA_DIR: empty.dir });
    expect(none).toMatchObject({ code: 0, stdout: match.stringContaining('nothing to prune') });

    const d = tempDir('recs-prune-cli-');
    dirs.push(d);
    const store: Store = { source: { kind: 'sqlite', dataDir: d.dir }, io: { dataDir: d.dir }, open: (maxAgeDays) => openEmbeddedRecs({ dataDir: d.dir, followIntervalMs: 0, model: { maxAgeDays } }), dispose: () => Promise.resolve() };
    await write(store, [shopping('old', 40, [[100, 101]], 2), shopping('new', 1, [[100, 101]], 2)]);
    const pruned = await runCli(['prune', 'events'], { DATA_DIR: d.dir, RECS_EVENTS_MAX_AGE_DAYS: '30' });
    expect(pruned.code).toBe(0);
    expect(pruned.stdout).toMatch(/^events: 6 older than 30 days/);
    expect(await eventCount(store)).toBe(6);
    const help = await runCli(['--help'], {});
    expect(help.stdout).toContain('prune events');
  }, 60_000);

  // It holds the write lock for one transaction of 20,000 ids after another. A gateway starting
  // meanwhile (a replica restarted, one more started), an import or another prune opened the file
  // in a write transaction that waited 50 ms for that lock: "cannot open recs.db: locked by another
  // process", the start failed. And it took the lock again within microseconds of letting it go,
  // while a write waiting elsewhere looks every 25 ms: gateways' writes waited for many of its
  // transactions (1 s of a prune of 2.5 s measured), not for one at most.
  it('lets a store open (a start, an import) and a write in between its transactions', async () => {
    const d = tempDir('recs-prune-beside-');
    dirs.push(d);
    const OLD = 600_000;
    const store = RecsStore.open(d.dir);
    try {
      const old = Date.now() - 200 * 86_400_000;
      const history = await store.beginImport('events', 'csv', 'history.csv', 'f'.repeat(64));
      for (let from = 0; from < OLD; from += 50_000) {
        const events: RecEvent[] = [];
        for (let i = from; i < from + 50_000; i++) events.push({ kind: 'view', session: `s${i >> 2}`, user: null, itemId: 100 + (i % 40), time: old + i, orderId: null });
        await history.addEvents(events);
      }
      await history.finish(OLD, 0);
      await store.appendEvents([{ kind: 'view', session: 'recent', user: null, itemId: 100, time: Date.now() - 60_000, orderId: null }]);

      const run = runCli(['prune', 'events'], { DATA_DIR: d.dir });
      let running = true;
      void run.then(() => (running = false));

      const openFailures: string[] = [];
      let midway = 0;
      let appended = 0;
      while (running) {
        const oldLeft = (await store.counts()).events - 1 - appended;
        if (oldLeft > 0 && oldLeft < OLD) midway++;
        try {
          await RecsStore.open(d.dir).close();
        } catch (error) {
          openFailures.push((error as Error).message);
        }
        await store.appendEvents([{ kind: 'view', session: `during-${appended}`, user: null, itemId: 101, time: Date.now() - 30_000, orderId: null }]);
        appended++;
        await new Promise((r) => setTimeout(r, 5));
      }
      const done = await run;
      expect(done.code, done.stderr).toBe(0);
      expect(done.stdout).toMatch(new RegExp(`^events: ${OLD.toLocaleString('en-US')} older than 90 days`));
      expect(openFailures).toEqual([]);
      // the opens and writes above ran while the prune was under way (it leaves the lock free for
      // 30 ms after each of its 30 transactions); how long a write waited is the machine's, not
      // asserted here (the probe's figures: README, "Your own data")
      expect(midway).toBeGreaterThanOrEqual(1);
      expect((await store.counts()).events).toBe(1 + appended);
    } finally {
      await store.close();
    }
  }, 120_000);
});
