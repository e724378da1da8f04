import type pg from 'pg';
import { openPool } from '../../src/backends/embedded/keys/postgresStore.js';
import { LearnerLock } from '../../src/backends/embedded/learnerLock.js';
import type { RecsDataStore } from '../../src/backends/embedded/liveStore.js';
import { openRecsData } from '../../src/backends/embedded/loadFromStore.js';
import { openEmbeddedRecs } from '../../src/backends/embedded/openRecs.js';
import { Publisher } from '../../src/backends/embedded/publisher.js';
import type { EmbeddedRecs } from '../../src/backends/embedded/recs.js';
import { preparePublished } from '../../src/backends/embedded/roles.js';
import { parseItemRecord } from '../../src/model/itemRecord.js';
import type { RecEvent } from '../../src/recommender/index.js';
import { DATABASE_URL, dropSchema, testSchema } from './stores.js';

/** Seeded co-views and purchases among items 1..items, so lists differ by anchor. */
export function seededEvents(items: number, n: number, seed: number, t0 = Date.now() - 3_600_000): RecEvent[] {
  let s = seed;
  const rand = (k: number): number => ((s = (s * 1_103_515_245 + 12_345) % 2 ** 31) % k);
  const out: RecEvent[] = [];
  for (let i = 0; i < n; i++) {
    const a = 1 + rand(items);
    const session = `s${seed}-${i}`;
    out.push({ kind: 'view', itemId: a, session, user: null, orderId: null, time: t0 + i * 100 });
    out.push({ kind: 'view', itemId: 1 + ((a + rand(5)) % items), session, user: null, orderId: null, time: t0 + i * 100 + 10 });
    if (rand(4) === 0) out.push({ kind: 'purchase', itemId: a, session, user: `u${rand(30)}`, orderId: `o${seed}-${i}`, time: t0 + i * 100 + 20 });
  }
  return out;
}

/** Polls `check` until true, at most `ms`. */
export async function until(check: () => Promise<boolean> | boolean, ms = 10_000): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
}

export interface LearnerSetup {
  schema: string;
  store: RecsDataStore;
  recs: EmbeddedRecs;
  pool: pg.Pool;
  names: { lockKey: string; channel: string };
  publisher: Publisher;
  lock: LearnerLock;
}

/** A schema of its own with `items` records (4 departments, 20 categories, a brand a tenth, a seventh out of stock) and
 * `events`, a learner's model following it, and its publisher started under the learner lock; `cleanups` stops them. */
export async function startLearner(items: number, events: readonly RecEvent[], cleanups: (() => Promise<unknown>)[]): Promise<LearnerSetup> {
  const schema = testSchema();
  cleanups.push(() => dropSchema(schema));
  const store = (await openRecsData({ kind: 'postgres', connectionString: DATABASE_URL, schema }))!;
  cleanups.push(() => store.close());
  await store.upsertItems(Array.from({ length: items }, (_, i) => parseItemRecord({
    itemId: i + 1, name: `item ${i + 1}`, categoryPath: `Dept${i % 4}/Cat${i % 20}`, brandName: i % 10 === 0 ? 'Acme' : 'Other',
    salePrice: i, stock: i % 7 === 0 ? 'Not available' : 'Available',
  })));
  await store.appendEvents(events);
  const recs = await openEmbeddedRecs({ dataDir: null, databaseUrl: DATABASE_URL, schema, followIntervalMs: 50 });
  cleanups.push(() => recs.close());
  const pool = openPool({ connectionString: DATABASE_URL, schema, max: 4 });
  cleanups.push(() => pool.end());
  const names = await preparePublished(pool);
  const publisher = new Publisher(recs, pool, names, () => undefined);
  cleanups.push(() => publisher.close());
  const lock = new LearnerLock({ connectionString: DATABASE_URL, lockKey: names.lockKey, retryMs: 100 }, {
    acquired: (pid) => void publisher.activate(pid), lost: () => publisher.deactivate(), say: () => undefined,
  });
  cleanups.push(() => lock.close());
  lock.start();
  return { schema, store, recs, pool, names, publisher, lock };
}
