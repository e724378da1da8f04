import pg from 'pg';
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
import { itemsFrom, storeCatalogue } from './liveEvents.js';
import { gql } from './processes.js';
import { DATABASE_URL, dropSchema, tempDir, testSchema } from './stores.js';

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
 * `events`, a learner's model (window `maxAgeDays`, 0 none) following it, and its publisher started under the learner lock; `cleanups` stops them. */
export async function startLearner(items: number, events: readonly RecEvent[], cleanups: (() => Promise<unknown>)[], maxAgeDays = 0): Promise<LearnerSetup> {
  const schema = testSchema();
  cleanups.push(() => dropSchema(schema));
  const store = (await openRecsData({ kind: 'postgres', connectionString: DATABASE_URL, schema }))!;
  cleanups.push(() => store.close());
  await store.upsertItems(Array.from({ length: items }, (_, i) => parseItemRecord({
    itemId: i + 1, name: `item ${i + 1}`, categoryPath: `Dept${i % 4}/Cat${i % 20}`, brandName: i % 10 === 0 ? 'Acme' : 'Other',
    salePrice: i, stock: i % 7 === 0 ? 'Not available' : 'Available',
  })));
  await store.appendEvents(events);
  const recs = await openEmbeddedRecs({ dataDir: null, databaseUrl: DATABASE_URL, schema, followIntervalMs: 50, model: { maxAgeDays } });
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

/** A schema of its own with items 900..919 (liveEvents' catalogue), and the environment of a role's process on it. */
export async function rolesShop(cleanups: (() => Promise<unknown>)[]): Promise<{ schema: string; env: (role: string, more?: Record<string, string>) => Record<string, string> }> {
  const schema = testSchema();
  const client = new pg.Client({ connectionString: DATABASE_URL });
  await client.connect();
  await client.query(`CREATE SCHEMA ${schema}`);
  await client.end();
  cleanups.push(() => dropSchema(schema));
  const url = new URL(DATABASE_URL);
  url.searchParams.set('options', `-c search_path=${schema}`);
  await storeCatalogue({ kind: 'postgres', connectionString: DATABASE_URL, schema }, itemsFrom(900, 20));
  const env = (role: string, more: Record<string, string> = {}): Record<string, string> => {
    const dir = tempDir('recs-roles-');
    cleanups.push(() => Promise.resolve(dir.remove()));
    return {
      RECS_ROLE: role, DATABASE_URL: url.toString(), DATA_DIR: dir.dir, REDIS_URL: '', OTEL_EXPORTER_OTLP_ENDPOINT: '', RECS_MAX_LAG_SECONDS: '3', RECS_FOLLOW_INTERVAL_MS: '100', ...more,
    };
  };
  return { schema, env };
}

let poll = 0;
/** The first item of an anchor's post-browse list, as a gateway answers it. */
export async function topOf(url: string, auth: string, anchor: number): Promise<number | undefined> {
  const alias = `p${++poll}`;
  const { body } = await gql(url, `{ ${alias}: postBrowsedProducts(itemId: ${anchor}, first: 1) { itemId } }`, {}, { authorization: auth });
  return (body.data?.[alias] as unknown as { itemId: number }[] | undefined)?.[0]?.itemId;
}

/** A session's recommendedForYou as [itemId, source, because] triples, as a gateway answers it. */
export async function forYouOf(url: string, auth: string, sessionId: string, first = 5): Promise<[number, string, number | null][]> {
  const alias = `f${++poll}`;
  const { body } = await gql(url, `query($s: String) { ${alias}: recommendedForYou(sessionId: $s, first: ${first}) { edges { node { itemId } source because { itemId } } } }`,
    { s: sessionId }, { authorization: auth });
  const edges = (body.data?.[alias] as unknown as { edges: { node: { itemId: number }; source: string; because: { itemId: number } | null }[] } | undefined)?.edges ?? [];
  return edges.map((e) => [e.node.itemId, e.source, e.because?.itemId ?? null]);
}

export interface ReadyBody { status: string; checks?: Record<string, string>; role?: { role: string; learnerActive: boolean; listsAgeSeconds: number | null } }
export async function readyz(url: string): Promise<{ status: number; body: ReadyBody }> {
  const response = await fetch(`${url}/readyz`);
  return { status: response.status, body: (await response.json()) as ReadyBody };
}

/** Polls `check` until true; the milliseconds it took, or Infinity past `bound`. */
export async function within(check: () => Promise<boolean>, bound = 10_000): Promise<number> {
  const started = performance.now();
  while (performance.now() - started < bound) {
    if (await check()) return performance.now() - started;
    await new Promise((r) => setTimeout(r, 50));
  }
  return Infinity;
}
