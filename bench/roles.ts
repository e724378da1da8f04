/**
 * RECS_ROLE sizing (issue 43; not a test): npx tsx bench/roles.ts
 *
 * For a store of 10k and one of 200k events (10k items, bench/syntheticLog.ts' shop) in PostgreSQL schemas of
 * the bench's own, as processes (`recs-gateway serve` from dist/): a learner (RECS_ROLE=learn) and serve replicas
 * (RECS_ROLE=serve). Prints, per store: the learner's start and first full publish, its RSS; a serve replica's
 * start-up and RSS after answering 2,000 distinct anchors; then on the 10k store the freshness across replicas
 * (an event batch sent to one, polled on the other), whether a replica's lists (6 filters, both kinds, 200 anchors) are
 * the learner's model's, a standby's takeover after SIGKILL of the active learner,
 * and on the 200k store the events a second the learner applies and publishes (a backlog of 150k events stored
 * while it is stopped with SIGSTOP, timed from SIGCONT until it has published through them).
 *
 * `npx tsx bench/roles.ts --learner` runs only that last part (the 200k store, no serve replica);
 * LEARNER_NODE_OPTIONS is the learner's NODE_OPTIONS (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`).
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { openRecsData } from '../src/backends/embedded/loadFromStore.js';
import { parseItemRecord } from '../src/model/itemRecord.js';
import type { RecEvent } from '../src/recommender/index.js';
import { KIND_PURCHASE } from '../src/recommender/index.js';
import buildOnce from '../test/helpers/build.js';
import { coViews, sendEvents } from '../test/helpers/liveEvents.js';
import { createKey, firstAdmin, gql, startServe, type ServeProcess } from '../test/helpers/processes.js';
import { tempDir } from '../test/helpers/stores.js';
import { syntheticEvents } from './syntheticLog.js';

const BASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const ITEMS = 10_000;
const ANCHORS = 2_000;
const ROUNDS = Number(process.env.ROUNDS ?? 20);
/** Below FULL_RELOAD_EVENTS: the learner applies them as it would a burst, rather than reloading. */
const BACKLOG = 150_000;
const LEARNER_ONLY = process.argv.includes('--learner');

const pct = (xs: number[], p: number): number => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;
const rssMb = (p: ServeProcess): number => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${p.child.pid}/status`, 'utf8'))![1]) / 1024;
/** The process's CPU (user and system, all its threads) so far: what it spent, whatever else the machine ran. */
const cpuSeconds = (p: ServeProcess): number => procCpu(p.child.pid!);
/** The PostgreSQL sessions of process `pid` (by its connections' ports), for their CPU (/proc, same machine). */
async function sessionsOf(pid: number): Promise<number[]> {
  const ss = spawnSync('ss', ['-tnpH'], { encoding: 'utf8' }).stdout ?? '';
  const ports = [...ss.matchAll(/127\.0\.0\.1:(\d+)\s+127\.0\.0\.1:5432\s+users:\(\("node",pid=(\d+),/g)].filter((m) => Number(m[2]) === pid).map((m) => Number(m[1]));
  const { rows } = await db.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE client_port = ANY($1::int[])', [ports]);
  return rows.map((r) => r.pid);
}
const procCpu = (pid: number): number => {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0; // a session ended
  }
};
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

async function fill(schema: string, events: number): Promise<void> {
  const store = (await openRecsData({ kind: 'postgres', connectionString: BASE_URL, schema }))!;
  await store.upsertItems(Array.from({ length: ITEMS }, (_, i) => parseItemRecord({
    itemId: i + 1, name: `item ${i + 1}`, categoryPath: `Dept${i % 10}/Cat${i % 100}`, brandName: `brand${i % 50}`, salePrice: i % 300,
  })));
  const all = synthetic(events, 1);
  for (let at = 0; at < all.length; at += 5000) await store.appendEvents(all.slice(at, at + 5000));
  await store.close();
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
  await fill(schema, events);
  console.log(`${events} events stored in ${Math.round(performance.now() - tFill)} ms`);
  const url = new URL(BASE_URL);
  url.searchParams.set('options', `-c search_path=${schema}`);
  const env = (role: string): Record<string, string> => {
    const dir = tempDir('bench-roles-');
    cleanups.push(() => Promise.resolve(dir.remove()));
    const nodeOptions: Record<string, string> = role === 'learn' && process.env.LEARNER_NODE_OPTIONS ? { NODE_OPTIONS: process.env.LEARNER_NODE_OPTIONS } : {};
    return { RECS_ROLE: role, DATABASE_URL: url.toString(), DATA_DIR: dir.dir, REDIS_URL: '', OTEL_EXPORTER_OTLP_ENDPOINT: '', RECS_FOLLOW_INTERVAL_MS: '100', ...nodeOptions };
  };
  const start = async (role: string): Promise<{ p: ServeProcess; ms: number }> => {
    const t0 = performance.now();
    const p = await startServe(env(role));
    cleanups.push(() => p.stop());
    return { p, ms: performance.now() - t0 };
  };
  const learner = await start('learn');
  const tPub = performance.now();
  // the first sweep publishes a list per anchor and kind; done when the count holds a second
  let last = -1;
  await until(async () => {
    const { rows } = await db.query<{ n: string }>(`SELECT count(*) AS n FROM ${schema}.recs_published_lists`);
    const n = Number(rows[0]!.n);
    const held = n > 0 && n === last;
    last = n;
    if (!held) await sleep(1000);
    return held;
  });
  const firstPublishMs = performance.now() - tPub - 1000;
  const learnerRss = rssMb(learner.p);
  const row: Record<string, unknown> = { events, learnerStartMs: Math.round(learner.ms), learnerFirstPublishMs: Math.round(firstPublishMs), lists: last, learnerRssMb: Math.round(learnerRss) };
  if (!LEARNER_ONLY) await serveReplicas(schema, learner, start, row);
  else await backlog(schema, learner, row);
  results.push(row);
  console.log(JSON.stringify(row));
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
}

type Started = { p: ServeProcess; ms: number };

async function serveReplicas(schema: string, learner: Started, start: (role: string) => Promise<Started>, row: Record<string, unknown>): Promise<void> {
  const events = row.events as number;
  const admin = firstAdmin(learner.p);
  const serve = await start('serve');
  const key = await createKey(serve.p.url, admin, 'bench');
  const serveStartRss = rssMb(serve.p);
  const tAsk = performance.now();
  for (let a = 0; a < ANCHORS; a += 20) {
    const fields = Array.from({ length: 20 }, (_, i) => `a${i}: postBrowsedProducts(itemId: ${1 + ((a + i) * 4) % ITEMS}, first: 10) { itemId name }`).join(' ');
    const { body } = await gql(serve.p.url, `{ ${fields} }`, {}, { authorization: key });
    if (body.errors) throw new Error(JSON.stringify(body.errors));
  }
  const askMs = performance.now() - tAsk;
  Object.assign(row, {
    serveStartMs: Math.round(serve.ms), serveRssStartMb: Math.round(serveStartRss), serveRssAfter2000AnchorsMb: Math.round(rssMb(serve.p)), ask2000AnchorsMs: Math.round(askMs),
  });
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
  if (events <= 10_000) {
    const other = await start('serve');
    const fresh: number[] = [];
    let alias = 0;
    for (let r = 0; r < ROUNDS; r++) {
      // a pair of rarely viewed items made each other's first neighbour
      const [a, b] = [ITEMS - 2 * r, ITEMS - 2 * r - 1];
      await sendEvents(serve.p.url, key, coViews(a, b, 40, 10_000 + r * 100, Date.now() - 30_000));
      const t0 = performance.now();
      await until(async () => {
        const name = `q${++alias}`;
        const { body } = await gql(other.p.url, `{ ${name}: postBrowsedProducts(itemId: ${a}, first: 1) { itemId } }`, {}, { authorization: key });
        return (body.data?.[name] as unknown as { itemId: number }[] | undefined)?.[0]?.itemId === b;
      }, 30_000);
      fresh.push(performance.now() - t0);
    }
    row.freshnessP50Ms = Math.round(pct(fresh, 50));
    row.freshnessP99Ms = Math.round(pct(fresh, 99));
    const standby = await start('learn');
    await sleep(1500);
    learner.p.child.kill('SIGKILL');
    const tKill = performance.now();
    const before = (await meta(schema)).publishSeq ?? 0;
    await until(async () => ((await meta(schema)).publishedAt ?? 0) > Date.now() - 500 && ((await (await fetch(`${standby.p.url}/readyz`)).json()) as { role?: { learnerActive?: boolean } }).role?.learnerActive === true);
    row.takeoverMs = Math.round(performance.now() - tKill);
    // and the standby publishes what comes next
    const [a, b] = [1, ITEMS];
    await sendEvents(serve.p.url, key, coViews(a, b, 200, 900_000, Date.now() - 20_000));
    const t0 = performance.now();
    const topOf = async (url: string, anchor: number): Promise<number | undefined> => {
      const name = `x${++alias}`;
      const { body } = await gql(url, `{ ${name}: postBrowsedProducts(itemId: ${anchor}, first: 1) { itemId } }`, {}, { authorization: key });
      return (body.data?.[name] as unknown as { itemId: number }[] | undefined)?.[0]?.itemId;
    };
    await until(async () => ((await meta(schema)).publishSeq ?? 0) > before && (await topOf(other.p.url, a)) === b, 30_000);
    row.afterTakeoverFreshMs = Math.round(performance.now() - t0);
    row.standbyRssMb = Math.round(rssMb(standby.p));
  } else {
    await backlog(schema, learner, row);
  }
}

/** A backlog stored while the learner is stopped (SIGSTOP: its lock's connection stays), then let go. */
async function backlog(schema: string, learner: Started, row: Record<string, unknown>): Promise<void> {
  {
    const store = (await openRecsData({ kind: 'postgres', connectionString: BASE_URL, schema }))!;
    const more = synthetic(BACKLOG, 2, Date.now() - 3_600_000);
    learner.p.child.kill('SIGSTOP');
    for (let at = 0; at < more.length; at += 5000) await store.appendEvents(more.slice(at, at + 5000));
    const head = (await store.head()).lastEventId;
    await store.close();
    const sessions = await sessionsOf(learner.p.child.pid!);
    const dbCpu = (): number => sessions.reduce((sum, pid) => sum + procCpu(pid), 0);
    const cpu0 = cpuSeconds(learner.p);
    const dbCpu0 = dbCpu();
    const t0 = performance.now();
    learner.p.child.kill('SIGCONT');
    await until(async () => ((await meta(schema)).publishedEventId ?? 0) >= head);
    const appliedMs = performance.now() - t0;
    row.learnerCpuSeconds = Math.round((cpuSeconds(learner.p) - cpu0) * 100) / 100;
    row.eventsPerLearnerCpuSecond = Math.round(BACKLOG / (row.learnerCpuSeconds as number));
    row.learnerDbSessionsCpuSeconds = Math.round((dbCpu() - dbCpu0) * 100) / 100;
    row.backlogEvents = BACKLOG;
    row.backlogPublishedMs = Math.round(appliedMs);
    row.applyAndPublishEventsPerSecond = Math.round(BACKLOG / (appliedMs / 1000));
    row.learnerRssAfterBacklogMb = Math.round(rssMb(learner.p));
  }
}

try {
  if (!LEARNER_ONLY) await run(10_000);
  await run(200_000);
} finally {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
  await db.end();
}
const [small, large] = results as Record<string, number>[];
if (small && large) {
  console.log(`learner RSS per million events: ${Math.round(((large.learnerRssMb! - small.learnerRssMb!) / (large.events! - small.events!)) * 1e6)} MB`);
  console.log(`serve replica RSS after ${ANCHORS} anchors: ${small.serveRssAfter2000AnchorsMb} MB (10k events) vs ${large.serveRssAfter2000AnchorsMb} MB (200k events)`);
}
