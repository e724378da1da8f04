/**
 * Freshness over HTTP (issue 20; not a test): npx tsx bench/freshness.ts
 *
 * Two gateways (`recs-gateway serve`, as processes) on one PostgreSQL schema (DATABASE_URL with a
 * search_path of the bench's own). Each round sends a batch through `recordEvents` to the first
 * that makes a new pair of items each other's first post-browse neighbour, and from the answer on
 * polls `postBrowsedProducts` on the first (one process) and on the second (the other replica)
 * until the pair shows; then a batch of orders that makes the pair each other's first
 * next-best product, polled with `productRecommendations` likewise. Prints p50 and p99 of each,
 * against the reference measured in the same run: the round trip of the same query answered
 * from the model (no change to wait for).
 *
 * `--rest`: the two are REST-mode gateways on one Redis (a key prefix of the bench's own) in front
 * of a third, embedded one (SQLite) that takes the events: the second follows the first's writes
 * when the first tells it (src/cache/changeFeed.ts), not by reading a store; without that it would
 * answer its cached lists for their TTL (300 s).
 *
 * Each poll's query text is new (an alias of its own), so that the response cache (maxAge 300 on these fields)
 * cannot answer with a list from before the change: until the response cache drops answers when
 * the model changes (EmbeddedRecs.onChange), a client asking the same query sees it up to 300 s late.
 *
 * `--roles` (issue 43): four processes on one PostgreSQL schema and one Redis (a key prefix of the
 * bench's own): two RECS_ROLE=serve replicas, an active RECS_ROLE=learn and a standby. Each round's
 * batch goes to either replica in turn; timed until both serve the changed list (target p99 <= 2 s).
 * Then, under steady reads and event batches on both replicas, SIGKILL of the active learner: timed
 * until both replicas serve a list changed by events sent after the kill (target <= 10 s), with the
 * replicas' failed requests over the takeover (target 0) and the events the store holds against those
 * acknowledged (none lost). Prints a last line `freshness-json {...}` for bench/run.ts.
 *
 * Needs the recordEvents mutation (the live-api work); says so and stops without it.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { coViews, itemsFrom, sendEvents, storeCatalogue, storedEvents } from '../test/helpers/liveEvents.js';
import type { EventInputModel } from '../src/ports/backend.js';
import buildOnce from '../test/helpers/build.js';
import { createKey, firstAdmin, gql, startServe, type ServeProcess } from '../test/helpers/processes.js';
import { tempDir } from '../test/helpers/stores.js';
import { drainPrefix } from '../test/helpers/redis.js';

const ROOT = new URL('../', import.meta.url).pathname;
const BASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const ROUNDS = Number(process.env.ROUNDS ?? 30);
const FOLLOW_MS = process.env.RECS_FOLLOW_INTERVAL_MS ?? '250';

if (!readdirSync(`${ROOT}schema`).some((f) => readFileSync(`${ROOT}schema/${f}`, 'utf8').includes('recordEvents('))) {
  console.log('bench/freshness.ts needs the recordEvents mutation (issue 20\'s API), which this tree\'s schema lacks');
  process.exit(0);
}

/** `times` orders of the pair, one a shopper (as coViews, for purchases). */
function orders(anchor: number, other: number, times: number, first: number, time = Date.now() - 60_000): EventInputModel[] {
  return Array.from({ length: times }, (_, s) => [anchor, other].map((itemId, j): EventInputModel => (
    { kind: 'PURCHASE', itemId, sessionId: null, userId: `shopper-${first + s}`, orderId: `order-${first + s}`, time: time + s * 10 + j }))).flat();
}

const pct = (xs: number[], p: number): number => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;

const REST = process.argv.includes('--rest');
if (process.argv.includes('--roles')) {
  await buildOnce();
  await roles();
  process.exit(0);
}
const schema = `bench_fresh_${process.pid}`;
const redisPrefix = `recs-gateway-bench-fresh-${process.pid}:`;
const admin = new pg.Client({ connectionString: BASE_URL });
if (!REST) {
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${schema}`);
}
const data = [tempDir('bench-fresh-a-'), tempDir('bench-fresh-b-'), tempDir('bench-fresh-up-')];
const url = new URL(BASE_URL);
url.searchParams.set('options', `-c search_path=${schema}`);
const started: Awaited<ReturnType<typeof startServe>>[] = [];
/** The first-start administrator's Basic credentials, from what the process printed. */
const adminOf = (serve: Awaited<ReturnType<typeof startServe>>): string =>
  `Basic ${Buffer.from(`admin:${/password\n\n\s+(\S+)/.exec(serve.stderr())?.[1]}`).toString('base64')}`;
/** A key of the administrator's, made through `base`. */
async function keyOf(base: string, authorization: string): Promise<string> {
  const created = await gql(base, 'mutation { createApiKey(input: { name: "bench" }) { key } }', {}, { authorization });
  return (created.body.data?.createApiKey as { key?: string } | undefined)?.key ?? '';
}
await buildOnce();
try {
  let env: (i: number) => Record<string, string>;
  // a key, as a client's traffic would use
  let auth = '';
  if (REST) {
    const upstream = await startServe({ DATA_DIR: data[2]!.dir, REDIS_URL: '', OTEL_EXPORTER_OTLP_ENDPOINT: '' });
    started.push(upstream);
    auth = await keyOf(upstream.url, adminOf(upstream));
    env = (i) => ({
      BACKEND: 'rest', APIKEY_SERVICE_URL: upstream.url, RECS_SERVICE_URL: upstream.url, RECS_API_KEY: auth,
      REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', REDIS_KEY_PREFIX: redisPrefix, DATA_DIR: data[i]!.dir, OTEL_EXPORTER_OTLP_ENDPOINT: '',
    });
  } else {
    env = (i) => ({
      DATABASE_URL: url.toString(), DATA_DIR: data[i]!.dir, REDIS_URL: '', OTEL_EXPORTER_OTLP_ENDPOINT: '', RECS_FOLLOW_INTERVAL_MS: FOLLOW_MS,
    });
  }
  const one = await startServe(env(0));
  started.push(one);
  const two = await startServe(env(1));
  started.push(two);
  if (!REST) auth = await keyOf(one.url, adminOf(one));
  const upserted = await gql(one.url, 'mutation($i:[ItemInput!]!){ upsertItems(items:$i){ upserted } }',
    { i: Array.from({ length: 1000 }, (_, k) => ({ itemId: k + 1, name: `thing ${k + 1}`, categoryPath: 'Home/Lamps' })) }, { authorization: auth });
  if (upserted.body.errors) throw new Error(JSON.stringify(upserted.body.errors));
  let poll = 0;
  const top = async (base: string, anchor: number, field = 'postBrowsedProducts'): Promise<number | undefined> => {
    const alias = `p${++poll}`;
    const { body } = await gql(base, `{ ${alias}: ${field}(itemId: ${anchor}, first: 1) { itemId } }`, {}, { authorization: auth });
    return (body.data?.[alias] as unknown as { itemId: number }[] | undefined)?.[0]?.itemId;
  };
  /** From the answer to a batch until both gateways show `target` first for `anchor`: ms on each. */
  const waitFor = (field: string, anchor: number, target: number, acked: number): Promise<number[]> =>
    Promise.all([one.url, two.url].map(async (base) => {
      while ((await top(base, anchor, field)) !== target) {
        if (performance.now() - acked > 10_000) throw new Error(`${base}'s ${field} did not change within 10 s`);
        await sleep(5);
      }
      return performance.now() - acked;
    }));
  const reference: number[] = [];
  const here: number[] = [];
  const there: number[] = [];
  const boughtHere: number[] = [];
  const boughtThere: number[] = [];
  const WARM_UP = 3;
  for (let r = 0; r < ROUNDS + WARM_UP; r++) {
    const anchor = 1 + (r % 500);
    const target = 501 + ((r * 37) % 500);
    const t = performance.now();
    await top(one.url, anchor);
    if (r >= WARM_UP) reference.push(performance.now() - t);
    await sleep(Math.random() * Number(FOLLOW_MS)); // out of step with the follower's timer
    await sendEvents(one.url, auth, coViews(anchor, target, 40 + r, 1_000_000 + r * 1000));
    const waits = await waitFor('postBrowsedProducts', anchor, target, performance.now());
    // Next-best-product: orders holding the pair, more of them each round than the last round's pair had.
    await sleep(Math.random() * Number(FOLLOW_MS));
    await sendEvents(one.url, auth, orders(anchor, target, 40 + r, 1_000_000 + r * 1000));
    const bought = await waitFor('productRecommendations', anchor, target, performance.now());
    if (r < WARM_UP) continue;
    here.push(waits[0]!);
    there.push(waits[1]!);
    boughtHere.push(bought[0]!);
    boughtThere.push(bought[1]!);
  }
  const ref = pct(reference, 50);
  console.log(`reference: the query's round trip p50 ${ref.toFixed(1)} ms, p99 ${pct(reference, 99).toFixed(1)} ms`);
  console.log(`freshness, the gateway that took the call: p50 ${pct(here, 50).toFixed(1)} ms, p99 ${pct(here, 99).toFixed(1)} ms after the answer (${(pct(here, 50) / ref).toFixed(1)}x the reference)`);
  const other = REST ? 'the other REST-mode gateway (told on Redis)' : `the other replica (following every ${FOLLOW_MS} ms)`;
  console.log(`freshness, ${other}: p50 ${pct(there, 50).toFixed(0)} ms, p99 ${pct(there, 99).toFixed(0)} ms after the answer (${ROUNDS} rounds)`);
  console.log(`next-best-product, the gateway that took the call: p50 ${pct(boughtHere, 50).toFixed(1)} ms, p99 ${pct(boughtHere, 99).toFixed(1)} ms after the answer (${(pct(boughtHere, 50) / ref).toFixed(1)}x the reference)`);
  console.log(`next-best-product, the other ${REST ? 'gateway' : 'replica'}: p50 ${pct(boughtThere, 50).toFixed(0)} ms, p99 ${pct(boughtThere, 99).toFixed(0)} ms after the answer`);
  console.log(`node ${process.version}; two gateways from source (tsx) ${REST ? 'in REST mode on Redis, before an embedded one on SQLite' : 'on PostgreSQL'}; a shared 2-core machine (others' tests running): figures vary between runs`);
} finally {
  for (const serve of started) await serve.stop();
  if (REST) {
    await drainPrefix(redisPrefix);
  } else {
    await admin.query(`DROP SCHEMA ${schema} CASCADE`);
    await admin.end();
  }
  for (const d of data) d.remove();
}

/** `--roles`: freshness across serve replicas, then the standby's takeover (see the head of this file). */
async function roles(): Promise<void> {
  const schema = `bench_fresh_roles_${process.pid}`;
  const prefix = `recs-gateway-bench-roles-${process.pid}:`;
  const db = new pg.Client({ connectionString: BASE_URL });
  await db.connect();
  await db.query(`CREATE SCHEMA ${schema}`);
  const source = { kind: 'postgres' as const, connectionString: BASE_URL, schema };
  await storeCatalogue(source, itemsFrom(1, 1000));
  const dbUrl = new URL(BASE_URL);
  dbUrl.searchParams.set('options', `-c search_path=${schema}`);
  const dirs: ReturnType<typeof tempDir>[] = [];
  const procs: ServeProcess[] = [];
  const start = async (role: 'serve' | 'learn'): Promise<ServeProcess> => {
    const dir = tempDir(`bench-fresh-${role}-`);
    dirs.push(dir);
    const p = await startServe({
      RECS_ROLE: role, DATABASE_URL: dbUrl.toString(), DATA_DIR: dir.dir, OTEL_EXPORTER_OTLP_ENDPOINT: '', RECS_FOLLOW_INTERVAL_MS: FOLLOW_MS,
      REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', REDIS_KEY_PREFIX: prefix,
    });
    procs.push(p);
    return p;
  };
  let acknowledged = 0;
  let auth = '';
  const send = async (base: string, events: EventInputModel[]): Promise<void> => {
    // read after the await: `acknowledged += await ...` would add to a total read before it (lost updates between senders)
    const { accepted } = await sendEvents(base, auth, events);
    acknowledged += accepted;
  };
  const learnerActive = async (p: ServeProcess): Promise<boolean> =>
    ((await (await fetch(`${p.url}/readyz`)).json()) as { role?: { learnerActive?: boolean } }).role?.learnerActive === true;
  try {
    const first = await start('learn');
    auth = await createKey(first.url, firstAdmin(first), 'bench');
    const [standby, a, b] = [await start('learn'), await start('serve'), await start('serve')];
    const replicas = [a, b];
    let poll = 0;
    const top = async (base: string, anchor: number, field: string): Promise<number | undefined> => {
      const alias = `p${++poll}`;
      const { body } = await gql(base, `{ ${alias}: ${field}(itemId: ${anchor}, first: 1) { itemId } }`, {}, { authorization: auth });
      return (body.data?.[alias] as unknown as { itemId: number }[] | undefined)?.[0]?.itemId;
    };
    /** From `since` until each replica serves `target` first for `anchor`: ms on each. */
    const seen = (field: string, anchor: number, target: number, since: number, bound = 30_000): Promise<number[]> =>
      Promise.all(replicas.map(async (r) => {
        while ((await top(r.url, anchor, field)) !== target) {
          if (performance.now() - since > bound) throw new Error(`${r.url}'s ${field} did not change within ${bound} ms`);
          await sleep(5);
        }
        return performance.now() - since;
      }));
    /** From `since` until the learner has published through the store's last event now (its share of the wait). */
    const published = async (since: number): Promise<number> => {
      const { rows } = await db.query<{ head: string }>(`SELECT max(id) AS head FROM ${schema}.recs_events`);
      const head = Number(rows[0]!.head);
      for (;;) {
        const meta = await db.query<{ value: string }>(`SELECT value FROM ${schema}.recs_meta WHERE key = 'publishedEventId'`);
        if (Number(meta.rows[0]?.value ?? 0) >= head) return performance.now() - since;
        if (performance.now() - since > 30_000) throw new Error('the learner did not publish within 30 s');
        await sleep(5);
      }
    };
    // freshness: a batch to each replica in turn, until both serve the changed lists
    const browsed: number[][] = [];
    const bought: number[][] = [];
    const publishes: number[] = [];
    const WARM_UP = 3;
    for (let r = 0; r < ROUNDS + WARM_UP; r++) {
      const anchor = 1 + (r % 400);
      const target = 501 + ((r * 37) % 400);
      const took = replicas[r % 2]!.url;
      await sleep(Math.random() * 100);
      await send(took, coViews(anchor, target, 40 + r, 1_000_000 + r * 1000));
      const acked = performance.now();
      const [views, pubViews] = await Promise.all([seen('postBrowsedProducts', anchor, target, acked), published(acked)]);
      await sleep(Math.random() * 100);
      await send(took, orders(anchor, target, 40 + r, 1_000_000 + r * 1000));
      const ackedOrders = performance.now();
      const [nbp, pubOrders] = await Promise.all([seen('productRecommendations', anchor, target, ackedOrders), published(ackedOrders)]);
      if (r < WARM_UP) continue;
      publishes.push(pubViews, pubOrders);
      // [the replica that took the batch, the other]
      browsed.push(r % 2 === 0 ? views : [views[1]!, views[0]!]);
      bought.push(r % 2 === 0 ? nbp : [nbp[1]!, nbp[0]!]);
    }
    const both = [...browsed, ...bought].map((w) => Math.max(...w));
    const fresh = { p50: pct(both, 50), p99: pct(both, 99), rounds: both.length, publishP50: pct(publishes, 50), publishP99: pct(publishes, 99) };
    console.log(`freshness across serve replicas, until both serve the changed list (${ROUNDS} rounds x 2 kinds): p50 ${fresh.p50.toFixed(0)} ms, p99 ${fresh.p99.toFixed(0)} ms`);
    console.log(`  of which the learner's part, from the answer until it has published through the batch: p50 ${fresh.publishP50.toFixed(0)} ms, p99 ${fresh.publishP99.toFixed(0)} ms`);
    console.log(`  post-browse: the replica that took the batch p50 ${pct(browsed.map((w) => w[0]!), 50).toFixed(0)} ms, the other p50 ${pct(browsed.map((w) => w[1]!), 50).toFixed(0)} ms; ` +
      `next-best-product: ${pct(bought.map((w) => w[0]!), 50).toFixed(0)} and ${pct(bought.map((w) => w[1]!), 50).toFixed(0)} ms`);

    // the takeover, under reads on both replicas and batches to both
    const active = (await learnerActive(first)) ? first : (await learnerActive(standby)) ? standby : null;
    if (active === null) throw new Error('no learner reports itself active');
    const other = active === first ? standby : first;
    let running = true;
    const reads = { ok: 0, failed: 0 };
    const writes = { ok: 0, failed: 0 };
    const reader = async (base: string, seed: number): Promise<void> => {
      for (let i = 0; running; i++) {
        try {
          const { status, body } = await gql(base, 'query($i: ItemId!) { postBrowsedProducts(itemId: $i, first: 10) { itemId name } }', { i: 1 + ((seed + i * 7) % 1000) }, { authorization: auth });
          if (status === 200 && !body.errors) reads.ok++;
          else reads.failed++;
        } catch {
          reads.failed++;
        }
      }
    };
    const writer = async (): Promise<void> => {
      for (let i = 0; running; i++) {
        try {
          await send(replicas[i % 2]!.url, coViews(1 + ((i * 13) % 400), 1 + ((i * 29 + 7) % 400), 10, 5_000_000 + i * 10));
          writes.ok++;
        } catch {
          writes.failed++;
        }
        await sleep(50);
      }
    };
    const traffic = [reader(a.url, 0), reader(a.url, 500), reader(b.url, 250), reader(b.url, 750), writer()];
    await sleep(2000);
    const [markA, markB] = [999, 1000];
    active.child.kill('SIGKILL');
    const killedAt = performance.now();
    await send(a.url, coViews(markA, markB, 100, 9_000_000, Date.now() - 10_000));
    let standbyActiveMs = NaN;
    const watch = (async () => {
      while (!(await learnerActive(other))) {
        if (performance.now() - killedAt > 60_000) return;
        await sleep(20);
      }
      standbyActiveMs = performance.now() - killedAt;
    })();
    const takeover = await seen('postBrowsedProducts', markA, markB, killedAt, 60_000);
    await watch;
    await sleep(1000);
    running = false;
    await Promise.all(traffic);
    const stored = await storedEvents(source);
    const result = {
      roundsFresh: fresh.rounds, freshP50Ms: Math.round(fresh.p50), freshP99Ms: Math.round(fresh.p99), publishP50Ms: Math.round(fresh.publishP50), publishP99Ms: Math.round(fresh.publishP99),
      takeoverMs: Math.round(Math.max(...takeover)), standbyActiveMs: Math.round(standbyActiveMs),
      reads: reads.ok + reads.failed, readsFailed: reads.failed, batches: writes.ok + writes.failed, batchesFailed: writes.failed,
      acknowledged, stored,
    };
    console.log(`SIGKILL of the active learner: the standby holds the lock after ${result.standbyActiveMs} ms; both replicas serve the lists of events sent after the kill after ${result.takeoverMs} ms`);
    console.log(`  meanwhile ${result.reads} reads (${result.readsFailed} failed) and ${result.batches} event batches (${result.batchesFailed} failed) on the serve replicas; events acknowledged ${acknowledged}, stored ${stored}`);
    console.log(`node ${process.version}; four processes from dist/ on PostgreSQL and Redis, RECS_FOLLOW_INTERVAL_MS=${FOLLOW_MS}; a shared 2-core machine: figures vary between runs`);
    console.log(`freshness-json ${JSON.stringify(result)}`);
  } finally {
    for (const p of procs) if (p.child.exitCode === null && p.child.signalCode === null) await p.stop();
    await drainPrefix(prefix);
    await db.query(`DROP SCHEMA ${schema} CASCADE`);
    await db.end();
    for (const d of dirs) d.remove();
  }
}
