/**
 * The live store (issue 20), at the backend level (not a test): npx tsx bench/liveStore.ts
 *
 * 1. Ingestion into the store itself, batches of 5,000 events (two visits' worth of keys a batch
 *    new), committed durably one after the other: events/s on SQLite (WAL, synchronous=FULL) and
 *    on PostgreSQL, against the reference measured in the same run: JSON-encoding and decoding the
 *    same batch, the least a request carrying it costs.
 * 2. Freshness, from the acknowledgement of recordEvents by one process to the changed answer:
 *    on the process that took the call (applied before the answer: 0 by construction, so the call's
 *    own latency is shown), and on a second process following the store every FOLLOW_MS, on SQLite
 *    and on PostgreSQL; p50 and p99 over ROUNDS calls.
 *
 * The model update is whatever EmbeddedRecs.applyEvents does on this branch (the stand-in rebuilds
 * the whole model; the live-model work makes it incremental), on a small shop (1,000 items, 20,000
 * events) so the rebuild does not dominate. Set DATABASE_URL for another PostgreSQL.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { EmbeddedIngest } from '../src/backends/embedded/index.js';
import type { RecEvent } from '../src/recommender/index.js';
import type { RecsDataStore, RecsSource } from '../src/backends/embedded/liveStore.js';
import { openRecsData } from '../src/backends/embedded/loadFromStore.js';
import { openEmbeddedRecs } from '../src/backends/embedded/openRecs.js';
import type { EmbeddedRecs } from '../src/backends/embedded/recs.js';
import { coViews, itemsFrom, principal } from '../test/helpers/liveEvents.js';

const DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const BATCH = 5_000;
const BATCHES = 20;
const ROUNDS = Number(process.env.ROUNDS ?? 40);
const FOLLOW_MS = Number(process.env.FOLLOW_MS ?? 250);
const ADMIN = principal(true);

function batchOf(b: number): RecEvent[] {
  const events: RecEvent[] = [];
  for (let i = 0; i < BATCH; i++) {
    events.push({ kind: i % 20 === 19 ? 'purchase' : 'view', itemId: 1 + ((b * 7919 + i * 104_729) % 20_000), session: `bench-${b}-${i >> 1}`, user: i % 3 === 0 ? `user-${i % 997}` : null, orderId: i % 20 === 19 ? `order-${b}-${i}` : null, time: 1_700_000_000_000 + b * BATCH + i });
  }
  return events;
}

async function ingestion(name: string, store: RecsDataStore): Promise<void> {
  const batches = Array.from({ length: BATCHES }, (_, b) => batchOf(b));
  await store.appendEvents(batchOf(999)); // warm-up
  const r0 = performance.now();
  for (const batch of batches) JSON.parse(JSON.stringify(batch));
  const reference = performance.now() - r0;
  const t0 = performance.now();
  for (const batch of batches) await store.appendEvents(batch);
  const ms = performance.now() - t0;
  const perSecond = (BATCHES * BATCH) / (ms / 1000);
  console.log(`ingestion, ${name}: ${Math.round(perSecond).toLocaleString('en-US')} events/s (${BATCHES} batches of ${BATCH}, ${(ms / BATCHES).toFixed(1)} ms a batch); JSON round trip of the same ${(reference / BATCHES).toFixed(1)} ms a batch (${(ms / reference).toFixed(1)}x)`);
}

const pct = (xs: number[], p: number): number => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;

async function freshness(name: string, open: (followMs: number) => Promise<EmbeddedRecs>): Promise<void> {
  const a = await open(0);
  const ingest = new EmbeddedIngest(a);
  await ingest.upsertItems(ADMIN, itemsFrom(1, 1000));
  for (let s = 0; s < 20; s++) {
    const events = Array.from({ length: 500 }, (_, v) => coViews(1 + ((s * 500 + v) % 1000), 1 + ((s * 500 + v * 7) % 1000), 1, s * 1000 + v * 2)).flat();
    await ingest.recordEvents(ADMIN, events);
  }
  const b = await open(FOLLOW_MS);
  const own: number[] = [];
  const other: number[] = [];
  try {
    for (let r = 0; r < ROUNDS; r++) {
      // a pair nobody viewed together yet becomes the anchor's first neighbour
      const anchor = 1 + (r % 1000);
      const target = 1 + ((r * 389 + 500) % 1000);
      // not in step with the follower's timer (each round would start right after its poll)
      await sleep(Math.random() * FOLLOW_MS);
      const t0 = performance.now();
      await ingest.recordEvents(ADMIN, coViews(anchor, target, 40, 10_000_000 + r * 100));
      const acked = performance.now();
      own.push(acked - t0);
      if (a.recommendNow('POST_BROWSE', anchor).entries[0]?.itemId !== target) throw new Error('the process that took the call does not show it');
      while (b.recommendNow('POST_BROWSE', anchor).entries[0]?.itemId !== target) {
        if (performance.now() - acked > 10_000) throw new Error('the second process did not follow within 10 s');
        await sleep(2);
      }
      other.push(performance.now() - acked);
    }
  } finally {
    await b.close();
    await a.close();
  }
  console.log(`freshness, ${name}: the process that took the call: changed at the answer (the call itself p50 ${pct(own, 50).toFixed(1)} ms, p99 ${pct(own, 99).toFixed(1)} ms); a second process following every ${FOLLOW_MS} ms: p50 ${pct(other, 50).toFixed(0)} ms, p99 ${pct(other, 99).toFixed(0)} ms after the answer (${ROUNDS} calls; ${(pct(other, 50) / FOLLOW_MS).toFixed(2)}x the interval at p50)`);
}

const dir = mkdtempSync(join(tmpdir(), 'bench-live-'));
const schemas: string[] = [];
const schema = (): string => {
  const s = `bench_live_${process.pid}_${schemas.length}`;
  schemas.push(s);
  return s;
};
try {
  const sqlite: RecsSource = { kind: 'sqlite', dataDir: join(dir, 'ingest') };
  const postgres: RecsSource = { kind: 'postgres', connectionString: DATABASE_URL, schema: schema() };
  for (const [name, source] of [['SQLite', sqlite], ['PostgreSQL', postgres]] as const) {
    const store = (await openRecsData(source))!;
    try {
      await ingestion(name, store);
    } finally {
      await store.close();
    }
  }
  await freshness('SQLite, two recommenders (one process) on one file', (followIntervalMs) => openEmbeddedRecs({ dataDir: join(dir, 'fresh'), followIntervalMs }));
  const fresh = schema();
  await freshness('PostgreSQL, two recommenders (one process) on one schema', (followIntervalMs) => openEmbeddedRecs({ dataDir: null, databaseUrl: DATABASE_URL, schema: fresh, followIntervalMs }));
  console.log(`node ${process.version}; a shared 2-core machine (others' tests running): figures vary between runs`);
} finally {
  rmSync(dir, { recursive: true, force: true });
  const client = new pg.Client({ connectionString: DATABASE_URL });
  await client.connect();
  for (const s of schemas) await client.query(`DROP SCHEMA IF EXISTS ${s} CASCADE`);
  await client.end();
}
