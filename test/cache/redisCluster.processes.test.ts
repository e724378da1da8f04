import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { REDIS_UNREACHABLE } from '../../src/cache/redis.js';
import { gql, startServe, type ServeProcess } from '../helpers/processes.js';
import { OwnRedisCluster, testPrefix } from '../helpers/redis.js';
import { demoItemIds, startFaultProxy, startUpstream, type FaultProxy, type Upstream } from '../helpers/harness.js';

/**
 * Two `recs-gateway serve` processes in REST mode on a real Redis Cluster of three masters, named by
 * REDIS_CLUSTER_NODES: what one caches the other answers from, a write through one drops what the
 * other answered, a burst through both is limited as one, and a master killed is served around.
 */
// An item the demo shop has few views of: a few dozen visits outweigh its history
const A = 31000124;
const B = 31001651;
const RECORD = 'mutation($events: [EventInput!]!) { recordEvents(events: $events) { accepted } }';
const BROWSE = `{ postBrowsedProducts(itemId: ${A}) { itemId } }`;
const NAMES = (ids: number[]): string => `{ ${ids.map((id, i) => `i${i}: item(itemId: ${id}) { itemId name }`).join(' ')} }`;

let cluster: OwnRedisCluster;
let upstream: Upstream;
let proxy: FaultProxy;
let items: number[];

beforeAll(async () => {
  cluster = await OwnRedisCluster.start();
  upstream = await startUpstream();
  proxy = await startFaultProxy(upstream.url);
  items = await demoItemIds(24);
}, 120_000);
afterAll(async () => {
  await proxy?.close();
  await upstream?.stop();
  await cluster?.stop();
});

const clusterEnv = (prefix: string, more: Record<string, string> = {}): Record<string, string> => ({
  BACKEND: 'rest',
  APIKEY_SERVICE_URL: proxy.url,
  RECS_SERVICE_URL: proxy.url,
  RECS_API_KEY: upstream.gatewayKey,
  REDIS_URL: '',
  REDIS_CLUSTER_NODES: cluster.seeds,
  REDIS_KEY_PREFIX: prefix,
  DATA_DIR: '/nonexistent',
  ...more,
});

/** The gateway's log lines about Redis. */
const redisLines = (gateway: ServeProcess): { level: number; msg: string; redis?: string }[] =>
  gateway
    .stdout()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { level: number; msg: string; redis?: string })
    .filter((entry) => /redis/i.test(entry.msg));

const readyz = async (url: string): Promise<{ status: string; checks: Record<string, string> }> => {
  const response = await fetch(`${url}/readyz`);
  return (await response.json()) as { status: string; checks: Record<string, string> };
};

describe('REST mode on a Redis Cluster: the shared cache and the change feed', () => {
  let one: ServeProcess;
  let two: ServeProcess;

  beforeAll(async () => {
    const prefix = testPrefix();
    [one, two] = await Promise.all([startServe(clusterEnv(prefix)), startServe(clusterEnv(prefix))]);
  }, 120_000);
  afterAll(async () => {
    await one?.stop().catch(() => undefined);
    await two?.stop().catch(() => undefined);
  });

  it('both report the cluster ready: every slot\'s master answers', async () => {
    for (const gateway of [one, two]) {
      await expect.poll(async () => readyz(gateway.url), { timeout: 20_000 }).toMatchObject({ status: 'ready', checks: { cache: 'ok', rateLimits: 'ok' } });
    }
  }, 30_000);

  it('records one gateway fetched, spread over every master, are answered by the other without the upstream', async () => {
    const ids = items.slice(0, 12);
    const first = await gql(one.url, NAMES(ids), {}, { authorization: upstream.alice.key });
    expect(first.body.errors).toBeUndefined();
    const fetched = proxy.count('GET', '/v1/items');
    expect(fetched).toBeGreaterThan(0);
    const second = await gql(two.url, NAMES(ids), {}, { authorization: upstream.alice.key });
    expect(second.body).toEqual(first.body);
    expect(proxy.count('GET', '/v1/items')).toBe(fetched);
  }, 60_000);

  it('events through one: the other answers the new list, its response cache notwithstanding', async () => {
    const browseTwo = async (): Promise<number[]> => {
      const answer = await gql(two.url, BROWSE, {}, { authorization: upstream.alice.key });
      expect(answer.body.errors).toBeUndefined();
      return (answer.body.data as unknown as { postBrowsedProducts: { itemId: number }[] }).postBrowsedProducts.map((item) => item.itemId);
    };
    const before = await browseTwo();
    expect(before).not.toContain(B);
    expect(await browseTwo()).toEqual(before);
    const events = Array.from({ length: 40 }, (_, i) => [
      { kind: 'VIEW', itemId: A, sessionId: `cluster-${i}`, time: new Date(Date.now() - 60_000).toISOString() },
      { kind: 'VIEW', itemId: B, sessionId: `cluster-${i}` },
    ]).flat();
    const recorded = await gql(one.url, RECORD, { events }, { authorization: upstream.adminBasic });
    expect(recorded.body).toEqual({ data: { recordEvents: { accepted: 80 } } });
    await expect.poll(async () => (await browseTwo())[0], { timeout: 10_000, interval: 200 }).toBe(B);
  }, 60_000);

  it('a master killed: both keep answering, /readyz says degraded in the words of one Redis, and ready once it is back', async () => {
    const victim = cluster.nodes[2]!;
    await victim.stop();
    try {
      for (const gateway of [one, two]) {
        // the bound leaves room for a loaded machine: the cluster is watched each second, on a busy event loop
        await expect.poll(async () => (await readyz(gateway.url)).status, { timeout: 25_000 }).toBe('degraded');
        const body = await readyz(gateway.url);
        expect(body.checks.cache).toBe(REDIS_UNREACHABLE);
        expect(body.checks.rateLimits).toBe(`${REDIS_UNREACHABLE}; limits are kept per process meanwhile`);
        // no ioredis internals, addresses or ports of the cluster on a public page
        expect(JSON.stringify(body)).not.toMatch(/cluster|ECONN|127\.0\.0\.1|\d{4,5}/i);
      }
      // items never asked before: from the upstream, with a third of the cache's slots gone
      const ids = items.slice(12);
      for (const gateway of [one, two]) {
        const started = Date.now();
        const answer = await gql(gateway.url, NAMES(ids), {}, { authorization: upstream.alice.key });
        expect(answer.status).toBe(200);
        expect(answer.body.errors).toBeUndefined();
        expect(Object.keys(answer.body.data ?? {})).toHaveLength(ids.length);
        expect(Date.now() - started).toBeLessThan(10_000);
      }
      // the cluster is watched each second: an outage shorter than that may go unlogged
      for (const gateway of [one, two]) {
        await expect.poll(() => redisLines(gateway).map((line) => line.msg.split(':')[0]), { timeout: 20_000 }).toEqual(['Redis is no longer reachable']);
      }
    } finally {
      await victim.start();
    }
    await cluster.settled();
    for (const gateway of [one, two]) {
      await expect.poll(async () => (await readyz(gateway.url)).status, { timeout: 30_000 }).toBe('ready');
      // once gone and once back in the log, however many retries between, naming seeds without secrets
      await expect.poll(() => redisLines(gateway).map((line) => line.msg.split(':')[0]), { timeout: 10_000 }).toEqual(['Redis is no longer reachable', 'Redis is reachable again']);
      expect(redisLines(gateway)[0]).toMatchObject({ level: 40, redis: `redis-cluster ${cluster.seeds}` });
    }
  }, 180_000);
});

describe('REST mode on a Redis Cluster: the rate limits', () => {
  let one: ServeProcess;
  let two: ServeProcess;
  const prefix = testPrefix();

  beforeAll(async () => {
    const env = clusterEnv(prefix, { RATE_LIMIT_RPS: '1', RATE_LIMIT_BURST: '6', RATE_LIMIT_USER_RPS: '0' });
    [one, two] = await Promise.all([startServe(env), startServe(env)]);
  }, 120_000);
  afterAll(async () => {
    await one?.stop().catch(() => undefined);
    await two?.stop().catch(() => undefined);
  });

  it('both report the cluster ready', async () => {
    for (const gateway of [one, two]) await expect.poll(async () => (await readyz(gateway.url)).status, { timeout: 20_000 }).toBe('ready');
  }, 30_000);

  it('a burst through both gateways is limited as one: six, and a token a second, not twice that', async () => {
    const started = Date.now();
    const statuses: number[] = [];
    for (let i = 0; i < 16; i++) {
      const answer = await gql(i % 2 === 0 ? one.url : two.url, '{ __typename }', {}, { authorization: upstream.bob.key });
      statuses.push(answer.status);
    }
    const seconds = (Date.now() - started) / 1000;
    const allowed = statuses.filter((status) => status === 200).length;
    expect(statuses.every((status) => status === 200 || status === 429)).toBe(true);
    expect(allowed).toBeGreaterThanOrEqual(4);
    expect(allowed).toBeLessThanOrEqual(6 + Math.ceil(seconds));
    expect(statuses.filter((status, i) => status === 429 && i % 2 === 0).length).toBeGreaterThan(0);
    expect(statuses.filter((status, i) => status === 429 && i % 2 === 1).length).toBeGreaterThan(0);
  }, 60_000);

  it('names no address, user or key in the cluster: the buckets are named as on one Redis', async () => {
    const names: string[] = [];
    for (const node of cluster.nodes) {
      const direct = new Redis(node.url);
      try {
        names.push(...(await direct.keys(`${prefix}*`)));
      } finally {
        direct.disconnect();
      }
    }
    const limits = names.filter((name) => name.startsWith(`${prefix}ratelimit:`)).map((name) => name.slice(`${prefix}ratelimit:`.length));
    expect(limits.length).toBeGreaterThan(1);
    // as test/auth/redisKeyNames.services.test.ts asks of one Redis: a kind, then an HMAC
    for (const name of limits) expect(name).toMatch(/^(salt|(mark:)?[a-z-]+:[A-Za-z0-9_-]{22})$/);
    for (const secret of ['127.0.0.1', upstream.bob.key, upstream.bob.id, upstream.bob.username]) {
      expect(names.filter((name) => name.includes(secret))).toEqual([]);
    }
  }, 30_000);
});
