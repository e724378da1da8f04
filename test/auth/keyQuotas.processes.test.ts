import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { firstAdmin, gql, startServe, type ServeProcess } from '../helpers/processes.js';
import { Redis } from 'ioredis';
import { drainPrefix, REDIS_URL, testPrefix } from '../helpers/redis.js';
import { sharedRecsStoreKinds, type SharedRecsStore } from '../helpers/stores.js';

/**
 * A key's rate and daily quota across two gateway processes on one PostgreSQL store and Redis (a
 * prefix of the test's own): both hold over the two, and the key's usage, counted by both,
 * survives a restart of each.
 */
const CREATE = `mutation($input: CreateApiKeyInput!) { createApiKey(input: $input) { id key } }`;
const ITEM = '{ item(itemId: 31000005) { itemId } }';
const QUOTA = 40;
const prefix = testPrefix();
const postgres = sharedRecsStoreKinds('quotas', { REDIS_URL, REDIS_KEY_PREFIX: prefix, OTEL_EXPORTER_OTLP_ENDPOINT: '' }).find((kind) => kind.name === 'postgres')!;

async function redisNames(under: string): Promise<string[]> {
  const redis = new Redis(REDIS_URL);
  try {
    return await redis.keys(`${under}*`);
  } finally {
    redis.disconnect();
  }
}

interface Usage { id: string; usage: { day: string; requests: number; refused: number }[] }

describe('a key\'s rate and daily quota, two gateway processes on one PostgreSQL store and Redis', () => {
  let store: SharedRecsStore;
  const gateways: ServeProcess[] = [];
  let admin: string;

  beforeAll(async () => {
    store = await postgres.open();
    // one after the other: the first makes the administrator and prints its password
    gateways[0] = await startServe(store.env(0));
    gateways[1] = await startServe(store.env(1));
    admin = firstAdmin(gateways[0]);
  }, 120_000);
  afterAll(async () => {
    await Promise.all(gateways.map((gw) => gw.stop()));
    await store?.dispose();
    await drainPrefix(prefix);
  });

  const usageOf = async (url: string, id: string): Promise<Usage> => {
    const response = await fetch(`${url}/api/v1/apikey/${id}/usage?days=2`, { headers: { authorization: admin } });
    expect(response.status).toBe(200);
    return (await response.json()) as Usage;
  };

  it('holds the quota over both processes, and both count the key\'s usage, kept over restarts', async () => {
    const created = await gql(gateways[0]!.url, CREATE, { input: { name: 'shared-quota', dailyQuota: QUOTA } }, { authorization: admin });
    expect(created.body.errors).toBeUndefined();
    const { id, key } = created.body.data!.createApiKey as unknown as { id: string; key: string };

    // twice the quota, both processes at once, in rounds of 10
    const statuses: number[] = [];
    const codes: unknown[] = [];
    for (let round = 0; round < 8; round++) {
      const answers = await Promise.all(
        Array.from({ length: 10 }, (_, i) => gql(gateways[i % 2]!.url, ITEM, {}, { authorization: key })),
      );
      for (const answer of answers) {
        statuses.push(answer.status);
        if (answer.status !== 200) codes.push(answer.body.errors?.[0]?.extensions?.code);
      }
    }
    const answered = statuses.filter((s) => s === 200).length;
    // one counter in Redis: the quota, within a few percent (a counter Redis lost would show more)
    expect(answered).toBeGreaterThanOrEqual(QUOTA - 1);
    expect(answered).toBeLessThanOrEqual(Math.ceil(QUOTA * 1.05));
    expect(new Set(codes)).toEqual(new Set(['QUOTA_EXCEEDED']));

    const today = new Date().toISOString().slice(0, 10);
    const counted = [{ day: today, requests: 80, refused: 80 - answered }];
    // each process answers its own counts not yet written, and the other's once written (every 2 s)
    for (const gw of gateways) await expect.poll(async () => (await usageOf(gw.url, id)).usage, { timeout: 10_000, interval: 250 }).toEqual(counted);

    // the counter is there, named by neither the key's value nor its id
    const names = await redisNames(prefix);
    expect(names.some((name) => name.includes(':count:quota:'))).toBe(true);
    expect(names.filter((name) => name.includes(id) || name.includes(key))).toEqual([]);

    // restarted, one after the other: what each counted was written at its shutdown
    for (const i of [0, 1]) {
      expect(await gateways[i]!.stop()).toBe(0);
      gateways[i] = await startServe(store.env(i));
    }
    for (const gw of gateways) expect((await usageOf(gw.url, id)).usage).toEqual(counted);

    // still past its quota on both, whichever process is asked
    for (const gw of gateways) {
      const refused = await gql(gw.url, ITEM, {}, { authorization: key });
      expect(refused.status).toBe(429);
      expect(refused.body.errors?.[0]?.extensions?.code).toBe('QUOTA_EXCEEDED');
    }
  }, 120_000);

  it('holds a key\'s own rate over both processes: one bucket in Redis, not one each', async () => {
    const created = await gql(gateways[0]!.url, CREATE, { input: { name: 'shared-rate', rateLimitPerSecond: 5 } }, { authorization: admin });
    expect(created.body.errors).toBeUndefined();
    const { key } = created.body.data!.createApiKey as unknown as { key: string };
    const started = performance.now();
    const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => gql(gateways[i % 2]!.url, ITEM, {}, { authorization: key })));
    const seconds = (performance.now() - started) / 1000;
    const answered = answers.filter((a) => a.status === 200).length;
    // a burst of 5 and what refills while the 30 are answered (slower on a loaded machine); a bucket per process doubles both
    expect(answered).toBeGreaterThanOrEqual(1);
    expect(answered).toBeLessThanOrEqual(Math.floor(5 + 5 * seconds) + 1);
    expect(new Set(answers.filter((a) => a.status !== 200).map((a) => a.body.errors?.[0]?.extensions?.code))).toEqual(new Set(['RATE_LIMITED']));
  }, 60_000);
});
