/**
 * RECS_ROLE sizing (issue 43; not a test): npx tsx bench/roles.ts [--events 100000,1000000] [--backlog 0]
 *
 * For each store size of `--events` (10k items, bench/syntheticLog.ts' shop) in a PostgreSQL schema of the
 * bench's own, as processes (`recs-gateway serve` from dist/): a learner (RECS_ROLE=learn), then a serve replica
 * (RECS_ROLE=serve). Prints, per store: the learner's start, first full publish and RSS; a serve replica's
 * spawn-to-ready and RSS after answering 2,000 distinct anchors of each kind (target: ready within 3 s, under
 * 250 MB, whatever the store holds); whether a replica's lists (6 filters, both kinds, 200 anchors) are the
 * learner's model's. With `--backlog N` (N > 0), on the largest store, the events a second the learner applies
 * and publishes: a backlog of N events stored while it is stopped (SIGSTOP), timed from SIGCONT until it has
 * published through them. Freshness across replicas and the standby's takeover: bench/freshness.ts --roles.
 * Prints a last line `roles-json [...]` for bench/run.ts.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { openRecsData } from '../src/backends/embedded/loadFromStore.js';
import { parseItemRecord } from '../src/model/itemRecord.js';
import type { RecEvent } from '../src/recommender/index.js';
import { KIND_PURCHASE } from '../src/recommender/index.js';
import buildOnce from '../test/helpers/build.js';
import { createKey, firstAdmin, gql, startServe, type ServeProcess } from '../test/helpers/processes.js';
import { tempDir } from '../test/helpers/stores.js';
import { cpuMsOf } from './procCpu.js';
import { syntheticEvents } from './syntheticLog.js';

const { values: flags } = parseArgs({ options: { events: { type: 'string', default: '100000,1000000' }, backlog: { type: 'string', default: '0' } } });
const SIZES = flags.events.split(',').map(Number);
if (SIZES.some((n) => !Number.isInteger(n) || n <= 0)) throw new Error(`--events: positive whole numbers, comma-separated; got "${flags.events}"`);
const BACKLOG = Number(flags.backlog);
const BASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const ITEMS = 10_000;
const ANCHORS = 2_000;

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
/** Serve replicas started one after the other against each store, for the median start. */
const STARTS = 3;
const rssMb = (p: ServeProcess): number => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${p.child.pid}/status`, 'utf8'))![1]) / 1024;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function until<T>(check: () => Promise<T | null | undefined | false>, ms = 300_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value !== null && value !== undefined && value !== false) return value;
    if (Date.now() > end) throw new Error('bench: a condition did not hold in time');
    await sleep(20);
  }
}

function synthetic(n: number, seed: number, t0?: number): RecEvent[] {
  const out: RecEvent[] = [];
  syntheticEvents(n, ITEMS, seed, (kind, itemId, session, user, order, time) => out.push({
    kind: kind === KIND_PURCHASE ? 'purchase' : 'view', itemId, session: `s${seed}-${session}`, user: `u${user}`,
    orderId: order < 0 ? null : `o${seed}-${order}`, time: t0 === undefined ? time : t0 + (time - 1_700_000_000_000) / 1000,
  }));
  return out;
}

/** Stores the catalogue and `events` events, in slices of a seed each (a 10M store never held in memory at once); the last event's id. */
async function fill(schema: string, events: number): Promise<number> {
  const store = (await openRecsData({ kind: 'postgres', connectionString: BASE_URL, schema }))!;
  await store.upsertItems(Array.from({ length: ITEMS }, (_, i) => parseItemRecord({
    itemId: i + 1, name: `item ${i + 1}`, categoryPath: `Dept${i % 10}/Cat${i % 100}`, brandName: `brand${i % 50}`, salePrice: i % 300,
  })));
  const SLICE = 200_000;
  for (let done = 0, seed = 1; done < events; done += SLICE, seed++) {
    const slice = synthetic(Math.min(SLICE, events - done), seed);
    for (let at = 0; at < slice.length; at += 5000) await store.appendEvents(slice.slice(at, at + 5000));
  }
  const head = (await store.head()).lastEventId;
  await store.close();
  return head;
}

const db = new pg.Client({ connectionString: BASE_URL });
await db.connect();
await buildOnce();
const results: Record<string, unknown>[] = [];
const cleanups: (() => Promise<unknown>)[] = [];

async function meta(schema: string): Promise<Record<string, number>> {
  const { rows } = await db.query<{ key: string; value: string }>(`SELECT key, value FROM ${schema}.recs_meta`);
  return Object.fromEntries(rows.map((r) => [r.key, Number(r.value)]));
}

async function run(events: number): Promise<void> {
  const schema = `bench_roles_${events}_${process.pid}`;
  await db.query(`CREATE SCHEMA ${schema}`);
  cleanups.push(() => db.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`));
  const tFill = performance.now();
  const head = await fill(schema, events);
  const fillMs = performance.now() - tFill;
  console.log(`${events} events stored in ${Math.round(fillMs)} ms`);
  const url = new URL(BASE_URL);
  url.searchParams.set('options', `-c search_path=${schema}`);
  const env = (role: string): Record<string, string> => {
    const dir = tempDir('bench-roles-');
    cleanups.push(() => Promise.resolve(dir.remove()));
    // no window: the synthetic store spans years (a 90-day window would hold a slice of it, and drop it for the backlog)
    return { RECS_ROLE: role, DATABASE_URL: url.toString(), DATA_DIR: dir.dir, REDIS_URL: '', OTEL_EXPORTER_OTLP_ENDPOINT: '', RECS_FOLLOW_INTERVAL_MS: '100', RECS_EVENTS_MAX_AGE_DAYS: '0' };
  };
  const start = async (role: string): Promise<{ p: ServeProcess; ms: number }> => {
    const t0 = performance.now();
    // a learner reads the whole window before it is ready, longer than startServe waits at 10M events
    const p = await startServe(env(role), { until: role === 'learn' ? 'listening' : 'ready' });
    cleanups.push(() => p.stop());
    if (role === 'learn') await until(async () => (await fetch(`${p.url}/readyz`).catch(() => null))?.status === 200, 900_000);
    return { p, ms: performance.now() - t0 };
  };
  const learner = await start('learn');
  const tPub = performance.now();
  // the first sweep publishes a list per anchor and kind; done when it reflects the store's last event and the count holds a second
  let last = -1;
  await until(async () => {
    const { rows } = await db.query<{ n: string }>(`SELECT count(*) AS n FROM ${schema}.recs_published_lists`);
    const n = Number(rows[0]!.n);
    const held = n > 0 && n === last && ((await meta(schema)).publishedEventId ?? 0) >= head;
    last = n;
    if (!held) await sleep(1000);
    return held;
  });
  const firstPublishMs = performance.now() - tPub - 1000;
  const learnerRss = rssMb(learner.p);
  const admin = firstAdmin(learner.p);
  // spawn to ready, STARTS times (the median: the machine is shared), each start's CPU time beside it; the last one stays
  const starts: { ms: number; cpuMs: number }[] = [];
  let serve!: { p: ServeProcess; ms: number };
  for (let k = 0; k < STARTS; k++) {
    if (k > 0) await serve.p.stop();
    serve = await start('serve');
    starts.push({ ms: serve.ms, cpuMs: cpuMsOf(serve.p.child.pid!) });
  }
  const key = await createKey(serve.p.url, admin, 'bench');
  const serveStartRss = rssMb(serve.p);
  const tAsk = performance.now();
  // ANCHORS distinct anchors (every fifth item), each of both kinds, 20 fields a request
  for (const field of ['postBrowsedProducts', 'productRecommendations']) {
    for (let a = 0; a < ANCHORS; a += 20) {
      const fields = Array.from({ length: 20 }, (_, i) => `a${i}: ${field}(itemId: ${1 + (a + i) * 5}, first: 10) { itemId name }`).join(' ');
      const { body } = await gql(serve.p.url, `{ ${fields} }`, {}, { authorization: key });
      if (body.errors) throw new Error(JSON.stringify(body.errors));
    }
  }
  const askMs = performance.now() - tAsk;
  const row: Record<string, unknown> = {
    events, fillMs: Math.round(fillMs), learnerStartMs: Math.round(learner.ms), learnerFirstPublishMs: Math.round(firstPublishMs), lists: last, learnerRssMb: Math.round(learnerRss),
    serveStartMs: Math.round(median(starts.map((x) => x.ms))), serveStartCpuMs: Math.round(median(starts.map((x) => x.cpuMs))), serveStarts: starts.map((x) => Math.round(x.ms)), serveRssStartMb: Math.round(serveStartRss), serveRssAfterAnchorsMb: Math.round(rssMb(serve.p)), askAnchorsMs: Math.round(askMs),
  };
  // the same lists from the replica as from the learner's model, filtered or not (nothing is sent meanwhile)
  const filters = ['', 'filter: { inStockOnly: true }', 'filter: { maxPrice: 150 }', 'filter: { categoryPath: "Dept3" }', 'filter: { categoryPath: "Dept3/Cat13" }', 'filter: { brandNames: ["brand7"] }'];
  let same = 0;
  let asked = 0;
  for (const filter of filters) {
    for (const field of ['postBrowsedProducts', 'productRecommendations']) {
      for (let a = 0; a < 200; a += 20) {
        const q = `{ ${Array.from({ length: 20 }, (_, i) => `a${i}: ${field}(itemId: ${1 + ((a + i) * 50) % ITEMS}${filter ? `, ${filter}` : ''}) { itemId }`).join(' ')} }`;
        const [x, y] = await Promise.all([gql(learner.p.url, q, {}, { authorization: key }), gql(serve.p.url, q, {}, { authorization: key })]);
        for (let i = 0; i < 20; i++) {
          asked++;
          if (JSON.stringify(x.body.data?.[`a${i}`]) === JSON.stringify(y.body.data?.[`a${i}`])) same++;
        }
      }
    }
  }
  row.sameListsAsModel = `${same}/${asked}`;
  if (BACKLOG > 0 && events === Math.max(...SIZES)) {
    // a backlog stored while the learner is stopped (SIGSTOP: its lock's connection stays), then let go
    const store = (await openRecsData({ kind: 'postgres', connectionString: BASE_URL, schema }))!;
    const more = synthetic(BACKLOG, 2, Date.now() - 3_600_000);
    learner.p.child.kill('SIGSTOP');
    for (let at = 0; at < more.length; at += 5000) await store.appendEvents(more.slice(at, at + 5000));
    const head = (await store.head()).lastEventId;
    await store.close();
    const cpu0 = cpuMsOf(learner.p.child.pid!);
    const t0 = performance.now();
    learner.p.child.kill('SIGCONT');
    await until(async () => ((await meta(schema)).publishedEventId ?? 0) >= head);
    const appliedMs = performance.now() - t0;
    // the learner's own CPU: on a shared machine its pace is what it spent, not the wall time
    row.learnerCpuSeconds = Math.round((cpuMsOf(learner.p.child.pid!) - cpu0) / 10) / 100;
    row.eventsPerLearnerCpuSecond = Math.round(BACKLOG / (row.learnerCpuSeconds as number));
    row.backlogEvents = BACKLOG;
    row.backlogPublishedMs = Math.round(appliedMs);
    row.applyAndPublishEventsPerSecond = Math.round(BACKLOG / (appliedMs / 1000));
    row.learnerRssAfterBacklogMb = Math.round(rssMb(learner.p));
  }
  results.push(row);
  console.log(JSON.stringify(row));
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
}

try {
  for (const events of SIZES) await run(events);
} finally {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
  await db.end();
}
const [small, large] = [results[0], results.at(-1)] as Record<string, number>[];
if (small && large && large !== small) {
  console.log(`learner RSS per million events: ${Math.round(((large.learnerRssMb! - small.learnerRssMb!) / (large.events! - small.events!)) * 1e6)} MB`);
  console.log(`serve replica: ready in ${small.serveStartMs} ms (${small.events} events) vs ${large.serveStartMs} ms (${large.events} events); RSS after ${ANCHORS} anchors of each kind ${small.serveRssAfterAnchorsMb} MB vs ${large.serveRssAfterAnchorsMb} MB`);
}
console.log(`roles-json ${JSON.stringify(results)}`);
