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
 * Needs the recordEvents mutation (the live-api work); says so and stops without it.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { coViews, sendEvents } from '../test/helpers/liveEvents.js';
import type { EventInputModel } from '../src/ports/backend.js';
import buildOnce from '../test/helpers/build.js';
import { gql, startServe } from '../test/helpers/processes.js';
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
