import { Writable } from 'node:stream';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { match } from '../../helpers/matchers.js';
import { EmbeddedIngest } from '../../../src/backends/embedded/index.js';
import { openRecsData } from '../../../src/backends/embedded/loadFromStore.js';
import type { RecsSource } from '../../../src/backends/embedded/liveStore.js';
import { openEmbeddedRecs } from '../../../src/backends/embedded/openRecs.js';
import { DB_FILE, RecsStore } from '../../../src/backends/embedded/store.js';
import { DELETE_EVENTS_OF_IMPORT } from '../../../src/backends/embedded/sqliteSchema.js';
import Database from 'better-sqlite3';
import type { RecEvent } from '../../../src/recommender/index.js';
import type { EmbeddedRecs } from '../../../src/backends/embedded/recs.js';
import type { EventInputModel } from '../../../src/ports/backend.js';
import { runImport } from '../../../src/cli/importCommand.js';
import { coViews, itemsFrom, principal, storeCatalogue } from '../../helpers/liveEvents.js';
import { DATABASE_URL, dropSchema, tempDir, testSchema } from '../../helpers/stores.js';

const ADMIN = principal(true);

/** A fresh store of each kind: a DATA_DIR, or a PostgreSQL schema of its own. */
interface Kind {
  name: string;
  fresh(): {
    source: RecsSource;
    open(followIntervalMs?: number): Promise<EmbeddedRecs>;
    options: Parameters<typeof openEmbeddedRecs>[0];
    io: { dataDir: string; databaseUrl?: string; schema?: string };
    dispose: () => Promise<void>;
  };
}

const kinds: Kind[] = [
  {
    name: 'sqlite',
    fresh() {
      const { dir, remove } = tempDir('recs-live-');
      return {
        source: { kind: 'sqlite', dataDir: dir },
        open: (followIntervalMs = 0) => openEmbeddedRecs({ dataDir: dir, followIntervalMs }),
        options: { dataDir: dir },
        io: { dataDir: dir },
        dispose: () => Promise.resolve(remove()),
      };
    },
  },
  {
    name: 'postgres',
    fresh() {
      const schema = testSchema();
      const { dir, remove } = tempDir('recs-live-pg-');
      return {
        source: { kind: 'postgres', connectionString: DATABASE_URL, schema },
        open: (followIntervalMs = 0) => openEmbeddedRecs({ dataDir: dir, databaseUrl: DATABASE_URL, schema, followIntervalMs }),
        options: { dataDir: dir, databaseUrl: DATABASE_URL, schema },
        io: { dataDir: dir, databaseUrl: DATABASE_URL, schema },
        dispose: async () => {
          await dropSchema(schema);
          remove();
        },
      };
    },
  },
];

const quiet = (): Writable => new Writable({ write: (_c, _e, done) => done() });
const collect = (): { stream: Writable; text(): string } => {
  let text = '';
  return { stream: new Writable({ write: (c, _e, done) => { text += String(c); done(); } }), text: () => text };
};

async function until(what: () => boolean, ms: number): Promise<number> {
  const t0 = Date.now();
  while (!what()) {
    if (Date.now() - t0 > ms) throw new Error(`not within ${ms} ms`);
    await sleep(20);
  }
  return Date.now() - t0;
}

const first = (recs: EmbeddedRecs, anchor: number): { itemId: number; evidence: number } | undefined => {
  const entry = recs.recommendNow('POST_BROWSE', anchor).entries[0];
  return entry && { itemId: entry.itemId, evidence: entry.evidence };
};

for (const kind of kinds) {
  describe(`live store on ${kind.name}`, () => {
    const disposals: (() => Promise<void>)[] = [];
    afterAll(async () => {
      for (const d of disposals.reverse()) await d();
    });
    // where the demo shop is not the subject, the catalogue is stored before the first open: an
    // open on a store without one builds the demo shop first
    const fresh = (): ReturnType<Kind['fresh']> => {
      const f = kind.fresh();
      disposals.push(f.dispose);
      return f;
    };

    it('keeps nothing of a call with one invalid event, and refuses non-administrators', async () => {
      const f = fresh();
      await storeCatalogue(f.source, itemsFrom(100, 12));
      const recs = await f.open();
      disposals.push(() => recs.close());
      const ingest = new EmbeddedIngest(recs);
      await ingest.upsertItems(ADMIN, itemsFrom(100, 12));
      const bad: EventInputModel[] = [...coViews(100, 101, 2, 1), { kind: 'VIEW', itemId: 102, sessionId: null, userId: null, orderId: null, time: Date.now() }];
      await expect(ingest.recordEvents(ADMIN, bad)).rejects.toMatchObject({ extensions: { code: 'BAD_USER_INPUT' }, message: match.stringContaining('events[4].sessionId') });
      await expect(ingest.recordEvents(principal(false), coViews(100, 101, 1, 9))).rejects.toMatchObject({ extensions: { code: 'FORBIDDEN' } });
      await expect(ingest.upsertItems(principal(false), itemsFrom(500, 1))).rejects.toMatchObject({ extensions: { code: 'FORBIDDEN' } });
      const store = (await openRecsData(f.source))!;
      try {
        expect(await store.counts()).toEqual({ items: 12, events: 0 });
      } finally {
        await store.close();
      }
      // and a valid call is stored whole and applied before the answer
      expect(await ingest.recordEvents(ADMIN, coViews(100, 101, 3, 1))).toEqual({ accepted: 6, duplicates: 0, itemsWithoutRecord: 0 });
      expect(first(recs, 100)).toEqual({ itemId: 101, evidence: 3 });
    });

    it('a second process over the same store follows: events, then records, within the bound, applied once', async () => {
      const f = fresh();
      await storeCatalogue(f.source, itemsFrom(200, 12));
      const a = await f.open(0);
      disposals.push(() => a.close());
      const ingest = new EmbeddedIngest(a);
      const b = await f.open(100);
      disposals.push(() => b.close());
      expect(b.applied.lastItemSeq).toBe(1);

      await ingest.recordEvents(ADMIN, coViews(200, 205, 4, 1));
      expect(first(a, 200)).toEqual({ itemId: 205, evidence: 4 });
      const ms = await until(() => first(b, 200)?.itemId === 205, 5_000);
      expect(first(b, 200)).toEqual({ itemId: 205, evidence: 4 });
      expect(ms).toBeLessThan(5_000);

      // b writes too; a (not following by timer) catches up when it writes next: rows in id order, once each
      await new EmbeddedIngest(b).recordEvents(ADMIN, coViews(200, 207, 6, 100));
      await ingest.recordEvents(ADMIN, coViews(200, 207, 1, 200));
      expect(first(a, 200)).toEqual({ itemId: 207, evidence: 7 });
      expect(a.state().events).toBe(2 * (4 + 6 + 1));
      await until(() => first(b, 200)?.evidence === 7, 5_000);
      expect(b.state().events).toBe(a.state().events);

      // a record sent through a shows up in b
      await ingest.upsertItems(ADMIN, itemsFrom(300, 1));
      await until(() => b.catalog.get(300) !== undefined, 5_000);
    });

    it('a head the follower read before a batch of its own was stored is no reason to reload whole', async () => {
      const f = fresh();
      await storeCatalogue(f.source, itemsFrom(400, 12));
      const recs = await f.open(0);
      disposals.push(() => recs.close());
      const ingest = new EmbeddedIngest(recs);
      await ingest.recordEvents(ADMIN, coViews(400, 401, 2, 1));
      const reloads = { ...recs.wholeReloads };
      const applied = recs.applied.lastEventId;

      // the follower's head is read, then answered only once the next batch is stored and applied
      const store = recs.store!;
      const head = store.head.bind(store);
      let read!: () => void;
      let release!: () => void;
      const headRead = new Promise<void>((resolve) => (read = resolve));
      const held = new Promise<void>((resolve) => (release = resolve));
      store.head = async () => {
        const h = await head();
        read();
        await held;
        return h;
      };
      const following = recs.poll();
      await headRead;
      await ingest.recordEvents(ADMIN, coViews(400, 402, 3, 10));
      expect(recs.applied.lastEventId).toBe(applied + 6);
      release();
      await following;

      expect(recs.wholeReloads).toEqual(reloads);
      expect(recs.applied.lastEventId).toBe(applied + 6);
      expect(first(recs, 400)).toEqual({ itemId: 402, evidence: 3 });
    });

    it('import writes through the same store and a running process follows it; events-only says what lacks a record', async () => {
      const f = fresh();
      const recs = await f.open(100);
      disposals.push(() => recs.close());
      // a fresh store: the demo shop, and an events-only import says so
      expect(recs.state()).toMatchObject({ mode: 'demo', lastEventId: 0 });
      const dir = tempDir('recs-live-files-');
      disposals.push(() => Promise.resolve(dir.remove()));
      const views = join(dir.dir, 'views.csv');
      const lines = ['session_id;user_id;item_id;timeframe;eventdate'];
      for (let s = 0; s < 3; s++) lines.push(`${s};NA;400;10;2016-05-09`, `${s};NA;411;20;2016-05-09`);
      writeFileSync(views, `${lines.join('\n')}\n`);
      const out = collect();
      expect(await runImport(['events', views, '--format', 'diginetica-views'], { ...f.io, stdout: out.stream, stderr: quiet() })).toBe(0);
      expect(out.text()).toMatch(/2 of its items have no record: the store has no catalogue yet/);
      await until(() => recs.state().lastEventId > 0, 5_000);
      expect(recs.state()).toMatchObject({ mode: 'demo', itemsWithoutRecord: 2 });

      // the catalogue arrives: a switch from the demo to the stored catalogue, with the events
      const catalog = join(dir.dir, 'items.jsonl');
      writeFileSync(catalog, itemsFrom(400, 12).map((i) => JSON.stringify({ itemId: i.itemId, name: i.name, categoryPath: 'Home/Lamps' })).join('\n'));
      expect(await runImport(['catalog', catalog], { ...f.io, stdout: quiet(), stderr: quiet() })).toBe(0);
      await until(() => recs.state().mode === 'store' && first(recs, 400)?.itemId === 411, 10_000);
      expect(recs.state()).toMatchObject({ items: 12, events: 6, itemsWithoutRecord: 0 });

      // an updated export replacing the old one (--replace deletes): followed by a whole reload
      const replaced = ['session_id;user_id;item_id;timeframe;eventdate'];
      for (let s = 0; s < 5; s++) replaced.push(`${s};NA;400;10;2016-05-09`, `${s};NA;405;20;2016-05-09`);
      writeFileSync(views, `${replaced.join('\n')}\n`);
      expect(await runImport(['events', views, '--format', 'diginetica-views', '--replace'], { ...f.io, stdout: quiet(), stderr: quiet() })).toBe(0);
      await until(() => first(recs, 400)?.itemId === 405, 10_000);
      expect(first(recs, 400)).toEqual({ itemId: 405, evidence: 5 });
      expect(recs.state().events).toBe(10);
    });

    it('behind by more events than the bound (a large import elsewhere), reloads whole; an id sent twice in a call keeps the last record', async () => {
      const f = fresh();
      await storeCatalogue(f.source, itemsFrom(600, 12));
      const writer = await f.open(0);
      disposals.push(() => writer.close());
      const ingest = new EmbeddedIngest(writer);
      await ingest.upsertItems(ADMIN, [...itemsFrom(600, 12), ...itemsFrom(600, 1, 'Garden/Tools')]);
      expect(writer.catalog.get(600)?.categoryPath).toBe('Garden/Tools');
      const lines: string[] = [];
      const follower = await openEmbeddedRecs({ ...f.options, followIntervalMs: 50, fullReloadEvents: 10, log: (l) => lines.push(l) });
      disposals.push(() => follower.close());
      await ingest.recordEvents(ADMIN, coViews(601, 602, 6, 1));
      await until(() => first(follower, 601)?.evidence === 6, 10_000);
      expect(lines.join('\n'), lines.join('\n')).toMatch(/reloaded 12 items and 12 events whole/);
      await ingest.recordEvents(ADMIN, coViews(601, 603, 2, 100)); // 4 events: applied, not reloaded
      await until(() => follower.state().events === 16, 5_000);
      expect(lines.filter((l) => l.includes('reloaded'))).toHaveLength(1);
    });

    it('one visit stored before a process loads and continued after is one visit in its model', async () => {
      const f = fresh();
      await storeCatalogue(f.source, itemsFrom(700, 12));
      const writer = await f.open(0);
      disposals.push(() => writer.close());
      const ingest = new EmbeddedIngest(writer);
      const visits = coViews(700, 709, 3, 1); // each visit: 700 then 709
      await ingest.recordEvents(ADMIN, visits.filter((_, i) => i % 2 === 0));
      const follower = await f.open(50); // loads the first halves in its worker
      disposals.push(() => follower.close());
      await ingest.recordEvents(ADMIN, visits.filter((_, i) => i % 2 === 1));
      await until(() => first(follower, 700)?.evidence === 3, 5_000);
      expect(first(follower, 700)).toEqual({ itemId: 709, evidence: 3 });
    });

    it('a store without a catalogue, behind by more than the bound, reloads whole in the worker: the demo shop with the stored events', async () => {
      const f = fresh();
      const writer = await f.open(0);
      disposals.push(() => writer.close());
      const lines: string[] = [];
      const follower = await openEmbeddedRecs({ ...f.options, followIntervalMs: 50, fullReloadEvents: 10, log: (l) => lines.push(l) });
      disposals.push(() => follower.close());
      expect(follower.state().mode).toBe('demo');
      const all = [...follower.catalog.values()];
      const anchor = all[0]!.itemId;
      const other = all.find((i) => i.parentItemId !== all[0]!.parentItemId && i.categoryPath === all[0]!.categoryPath)!.itemId;
      const before = follower.recommendNow('POST_BROWSE', anchor).entries.find((e) => e.itemId === other)?.evidence ?? 0;
      await new EmbeddedIngest(writer).recordEvents(ADMIN, coViews(anchor, other, 30, 1)); // 60 events: past the bound of 10
      await until(() => follower.wholeReloads.inWorker + follower.wholeReloads.onLoop > 0 && follower.state().lastEventId === writer.state().lastEventId, 20_000);
      // built in the worker (before, the demo shop and its stored events were built on the event loop)
      expect(follower.wholeReloads).toEqual({ inWorker: 1, onLoop: 0 });
      expect(lines.join('\n')).toMatch(/the store has no catalogue; serving the demo shop with the stored events/);
      expect(follower.state()).toMatchObject({ mode: 'demo', events: writer.state().events });
      expect(follower.recommendNow('POST_BROWSE', anchor).entries.find((e) => e.itemId === other)?.evidence).toBeGreaterThanOrEqual(before + 30);
      // the same lists as the writer, which applied the events to its own demo model
      expect(follower.recommendNow('POST_BROWSE', anchor).entries).toEqual(writer.recommendNow('POST_BROWSE', anchor).entries);
    }, 60_000);

    it('closed while a whole reload runs in its worker, logs no failure to follow (the stop ends the worker, not the store)', async () => {
      const f = fresh();
      const writer = await f.open(0);
      disposals.push(() => writer.close());
      const lines: string[] = [];
      const follower = await openEmbeddedRecs({ ...f.options, followIntervalMs: 50, fullReloadEvents: 10, log: (l) => lines.push(l) });
      const anchor = [...follower.catalog.values()][0]!.itemId;
      await new EmbeddedIngest(writer).recordEvents(ADMIN, coViews(anchor, anchor + 1, 30, 1)); // past the bound: a whole reload (the demo shop's, about a second)
      const loading = (): boolean => (follower as unknown as { worker: unknown }).worker !== null;
      await until(loading, 10_000);
      await follower.close();
      await sleep(200); // a poll's callbacks run after close (they did: "cannot follow …", then "following … again")
      expect(lines.filter((l) => /cannot follow|again/.test(l))).toEqual([]);
    }, 30_000);

    it('a demo shop takes events for its items', async () => {
      const f = fresh();
      const recs = await f.open(0);
      disposals.push(() => recs.close());
      const ingest = new EmbeddedIngest(recs);
      // two items of different products (variants of one are never each other's recommendation)
      const all = [...recs.catalog.values()];
      const anchor = all[0]!.itemId;
      const other = all.find((i) => i.parentItemId !== all[0]!.parentItemId && i.categoryPath === all[0]!.categoryPath)!.itemId;
      const before = recs.recommendNow('POST_BROWSE', anchor).entries.find((e) => e.itemId === other)?.evidence ?? 0;
      const result = await ingest.recordEvents(ADMIN, coViews(anchor, other, 50, 1));
      expect(result).toEqual({ accepted: 100, duplicates: 0, itemsWithoutRecord: 0 });
      expect(recs.recommendNow('POST_BROWSE', anchor).entries.find((e) => e.itemId === other)?.evidence).toBeGreaterThanOrEqual(before + 50);
      expect(recs.state().mode).toBe('demo');
    });
  });
}

describe('the PostgreSQL store', () => {
  it('keeps session, user and order identifiers as key ids only in the events', async () => {
    const schema = testSchema();
    const recs = await openEmbeddedRecs({ dataDir: null, databaseUrl: DATABASE_URL, schema, followIntervalMs: 0 });
    try {
      await new EmbeddedIngest(recs).recordEvents(ADMIN, [{ kind: 'PURCHASE', itemId: 7, sessionId: 'secret-session', userId: 'secret-user', orderId: 'secret-order', time: Date.now() }]);
      const client = new pg.Client({ connectionString: DATABASE_URL, options: `-c search_path=${schema}` });
      await client.connect();
      try {
        const { rows } = await client.query('SELECT * FROM recs_events');
        expect(JSON.stringify(rows)).not.toContain('secret');
        expect(JSON.stringify(recs.state())).not.toContain('secret');
      } finally {
        await client.end();
      }
    } finally {
      await recs.close();
      await dropSchema(schema);
    }
  });
});

describe('PostgreSQL appends from several processes', () => {
  const t = Date.UTC(2026, 0, 1);
  // the writers' calls of the same number name the same new sessions at the same time
  const batch = (writer: number, call: number, size: number): RecEvent[] => Array.from({ length: size }, (_, i) => (
    { kind: i % 10 === 9 ? 'purchase' : 'view', itemId: 1 + (i % 50), session: `s${call}-${i >> 2}`, user: null, orderId: i % 10 === 9 ? `o${writer}-${call}-${i}` : null, time: t + i }));

  it('a follower reading meanwhile never misses a row: ids become visible in order', async () => {
    const schema = testSchema();
    const source: RecsSource = { kind: 'postgres', connectionString: DATABASE_URL, schema };
    const writers = [(await openRecsData(source))!, (await openRecsData(source))!];
    const follower = (await openRecsData(source))!;
    try {
      let writing = true;
      const seen: number[] = [];
      const follow = (async () => {
        for (let after = 0, last = false; !last;) {
          last = !writing; // one more read once every writer is done
          const rows = await follower.eventsAfter(after, 1_000_000);
          for (const r of rows) seen.push(r[0]);
          if (rows.length > 0) after = rows[rows.length - 1]![0];
        }
      })();
      // two calls in flight a writer, each its own pool: four transactions race for ids
      const sessionKeys = new Map<string, Set<number>>();
      const calls = writers.flatMap((store, w) => [0, 1].map(async (lane) => {
        for (let c = lane; c < 16; c += 2) {
          const events = batch(w, c, 300);
          const rows = await store.appendEvents(events);
          rows.forEach((r, i) => sessionKeys.set(events[i]!.session!, (sessionKeys.get(events[i]!.session!) ?? new Set()).add(r[3])));
        }
      }));
      await Promise.all(calls).finally(() => (writing = false));
      await follow;
      const stored = (await follower.eventsAfter(0, 1_000_000)).map((r) => r[0]);
      expect(stored).toHaveLength(2 * 16 * 300);
      expect(seen).toEqual(stored);
      // a name both writers added at once has one key id, in the answers of both
      const keyIds = [...sessionKeys.values()].map((ids) => [...ids]);
      expect(keyIds.filter((ids) => ids.length !== 1 || ids[0]! < 1)).toEqual([]);
      expect(new Set(keyIds.flat()).size).toBe(16 * 75);
    } finally {
      for (const store of [...writers, follower]) await store.close();
      await dropSchema(schema);
    }
  });

  it('a batch that fails stores none of its events; the next is stored whole', async () => {
    const schema = testSchema();
    const store = (await openRecsData({ kind: 'postgres', connectionString: DATABASE_URL, schema }))!;
    try {
      const good = batch(0, 0, 20);
      // NOT NULL refuses an item id of null, in the batch's last row
      const bad = [...batch(0, 1, 20), { ...good[0]!, itemId: null as unknown as number }];
      await expect(store.appendEvents(bad)).rejects.toThrow(/item_id/);
      expect(await store.counts()).toEqual({ items: 0, events: 0 });
      const rows = await store.appendEvents(good);
      expect(rows).toEqual(await store.eventsAfter(0, 100));
      expect(rows.map((r) => r[2])).toEqual(good.map((e) => e.itemId));
    } finally {
      await store.close();
      await dropSchema(schema);
    }
  });
});

describe('appendEvents answers the rows as stored', () => {
  it.each(['sqlite', 'postgres'] as const)('%s: ids, kinds and key ids as a follower reads them, across calls that share names', async (kind) => {
    const data = tempDir('recs-append-');
    const schema = testSchema();
    const source: RecsSource = kind === 'sqlite' ? { kind, dataDir: data.dir } : { kind, connectionString: DATABASE_URL, schema };
    const store = (await openRecsData(source))!;
    try {
      const t = Date.UTC(2026, 0, 1) + 0.4; // stored in whole ms
      const first = await store.appendEvents([
        { kind: 'view', itemId: 1, session: 's1', user: null, orderId: null, time: t },
        { kind: 'purchase', itemId: 2, session: 's1', user: 'u1', orderId: 'o1', time: t + 1 },
        { kind: 'view', itemId: 3, session: null, user: 'u1', orderId: null, time: t + 2 },
      ]);
      const second = await store.appendEvents([
        { kind: 'view', itemId: 1, session: 's2', user: 'u1', orderId: null, time: t + 3 },
        { kind: 'purchase', itemId: 4, session: 's1', user: null, orderId: 'o1', time: t + 4 },
      ]);
      expect([...first, ...second]).toEqual(await store.eventsAfter(0, 100));
      expect(first.map((r) => r[0])).toEqual([1, 2, 3].map((i) => first[0]![0] + i - 1));
      expect(second[1]![3]).toBe(first[0]![3]); // s1 again: the same key id
      expect(second[0]![4]).toBe(first[1]![4]); // u1
      expect(second[1]![5]).toBe(first[1]![5]); // o1
      expect(first[0]![4]).toBe(-1);
    } finally {
      await store.close();
      data.remove();
      if (kind === 'postgres') await dropSchema(schema);
    }
  });
});

describe('SQLite group commit', () => {
  it('commits the calls of one turn together, each answered its own rows; a failing call fails alone', async () => {
    const data = tempDir('recs-group-');
    const store = RecsStore.open(data.dir);
    try {
      const t = Date.UTC(2026, 0, 1);
      const view = (itemId: number, session: string): RecEvent => ({ kind: 'view', itemId, session, user: null, orderId: null, time: t });
      const calls = [[view(1, 'a'), view(2, 'a')], [view(3, 'b')], [view(4, 'a'), view(5, 'c')]];
      const answered = await Promise.all(calls.map((events) => store.appendEvents(events)));
      expect(store.groupCommits).toEqual({ commits: 1, calls: 3 });
      expect(answered.map((rows) => rows.map((r) => r[2]))).toEqual([[1, 2], [3], [4, 5]]);
      expect(answered.flat()).toEqual(await store.eventsAfter(0, 100));

      // NOT NULL refuses an item id of null: that call fails, the two beside it are kept
      const bad = { ...view(6, 'd'), itemId: null as unknown as number };
      const results = await Promise.allSettled([store.appendEvents([view(7, 'd')]), store.appendEvents([bad]), store.appendEvents([view(8, 'e')])]);
      expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
      expect((await store.eventsAfter(0, 100)).map((r) => r[2])).toEqual([1, 2, 3, 4, 5, 7, 8]);
    } finally {
      await store.close();
      data.remove();
    }
  });
});

describe('SQLite: events_by_import indexes imported events only', () => {
  const view = (itemId: number, session: string): RecEvent => ({ kind: 'view', itemId, session, user: null, orderId: null, time: Date.now() - 60_000 });

  it('is made partial in a file of an earlier version, and an import replaced leaves API events and other imports as they were', async () => {
    const data = tempDir('recs-index-');
    try {
      // a file as an earlier version left it: every event in the index
      const first = RecsStore.open(data.dir);
      await first.close();
      const old = new Database(join(data.dir, DB_FILE));
      old.exec('DROP INDEX events_by_import; CREATE INDEX events_by_import ON events (import_id)');
      old.close();

      const store = RecsStore.open(data.dir);
      try {
        const sql = store.db.prepare("SELECT sql FROM sqlite_master WHERE name = 'events_by_import'").pluck().get() as string;
        expect(sql).toMatch(/WHERE import_id <> 0/);
        const plan = (store.db.prepare(`EXPLAIN QUERY PLAN ${DELETE_EVENTS_OF_IMPORT}`).all(1) as { detail: string }[]).map((r) => r.detail).join('; ');
        expect(plan).toMatch(/USING (COVERING )?INDEX events_by_import/);

        await store.appendEvents([view(31000001, 'api-1'), view(31000002, 'api-1')]);
        const importOf = async (file: string, itemId: number): Promise<void> => {
          const session = await store.beginImport('events', 'test', file, `sha-${file}-${itemId}`);
          await session.addEvents([view(itemId, `imported-${file}`), view(itemId + 1, `imported-${file}`)]);
          await session.finish(2, 0, { replace: true });
        };
        await importOf('a.csv', 31000010);
        await importOf('b.csv', 31000020);
        await store.appendEvents([view(31000003, 'api-2')]);
        await importOf('a.csv', 31000030); // replaces a.csv's first import
        const items = (store.db.prepare('SELECT item_id FROM events ORDER BY rowid').pluck().all() as number[]);
        expect(items).toEqual([31000001, 31000002, 31000020, 31000021, 31000003, 31000030, 31000031]);
      } finally {
        await store.close();
      }
    } finally {
      data.remove();
    }
  });
});
