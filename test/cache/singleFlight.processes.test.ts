import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { drainPrefix, REDIS_URL, testPrefix } from '../helpers/redis.js';
import {
  cacheReady, PHONE, report, startFaultProxy, startRestGateway, startUpstream, type FaultProxy, type RestGateway, type TimedResponse,
  type Upstream, type UpstreamUser,
} from '../helpers/harness.js';

// Concurrent identical requests share upstream calls, but never a user's data.

let upstream: Upstream;
const prefixes: string[] = [];
beforeAll(async () => {
  upstream = await startUpstream();
});
afterAll(async () => {
  await upstream?.stop();
  for (const prefix of prefixes) await drainPrefix(prefix);
});

const running: { close?(): Promise<void>; stop?(): Promise<void> }[] = [];
afterEach(async () => {
  while (running.length > 0) {
    const next = running.pop()!;
    await (next.stop ?? next.close)!.call(next);
  }
});

const QUERY = 'query($id: ItemId!) { viewer { id } item(itemId: $id) { itemId name salePrice } }';

async function setup(cache: 'memory' | 'redis'): Promise<{ keys: FaultProxy; recs: FaultProxy; gw: RestGateway }> {
  const keys = await startFaultProxy(upstream.url);
  running.push(keys);
  const recs = await startFaultProxy(upstream.url);
  running.push(recs);
  const prefix = testPrefix();
  prefixes.push(prefix);
  // 200 requests at once below, each on a connection of its own from one address: more than
  // MAX_CONNECTIONS_PER_ADDRESS lets one address hold by default
  const env: Record<string, string> = { MAX_CONNECTIONS_PER_ADDRESS: '0', ...(cache === 'redis' ? { REDIS_URL, REDIS_KEY_PREFIX: prefix } : {}) };
  const gw = await startRestGateway({
    keysUrl: keys.url, recsUrl: recs.url, recsApiKey: upstream.gatewayKey, env, redisCommandTimeoutMs: 10_000,
  });
  running.push(gw);
  await cacheReady(gw.cache);
  // a warm process: the first requests compile Apollo's paths, a lag that can time out Redis commands
  const warm = await gw.gql(QUERY, { id: 31000007 }, upstream.gatewayKey);
  expect(warm.body.errors).toBeUndefined();
  keys.requests.length = 0;
  recs.requests.length = 0;
  gw.cache.stats.errors = 0;
  return { keys, recs, gw };
}

/**
 * One upstream call for the item, whatever the timing: a request either joins the shared fetch or
 * arrives after its answer was stored. A Redis command that timed out (100 ms served: on a busy
 * 2-core machine the event loop itself can lag that much) would make the cache skip Redis for a
 * second and a late request fetch again; the gateway here gives Redis 10 s, so none does.
 */
function expectOneItemCall(recs: FaultProxy, gw: RestGateway): void {
  expect(gw.cache.stats.errors).toBe(0);
  expect(recs.count('GET')).toBe(1);
}

const viewerId = (r: TimedResponse): unknown => (r.body.data?.viewer as { id?: unknown } | null)?.id;

describe.each(['memory', 'redis'] as const)('100 identical concurrent queries (%s cache)', (cache) => {
  it('one credential: one authentication call and one item call upstream', async () => {
    const { keys, recs, gw } = await setup(cache);
    const answers = await Promise.all(Array.from({ length: 100 }, () => gw.gql(QUERY, { id: PHONE }, upstream.alice.key)));
    const names = new Set(answers.map((a) => (a.body.data?.item as { name?: string } | null)?.name));
    for (const answer of answers) {
      expect(answer.body.errors).toBeUndefined();
      expect(viewerId(answer)).toBe(upstream.alice.id);
    }
    expect(names.size).toBe(1);
    report(`single flight, one credential, ${cache} cache`, {
      requests: 100, keyServiceCalls: keys.count(), recsCalls: recs.count(), cacheErrors: gw.cache.stats.errors,
    });
    expect(keys.count('GET')).toBe(1);
    expectOneItemCall(recs, gw);
  });

  it('two credentials: one authentication call each, still one item call, each answer its own user', async () => {
    const { keys, recs, gw } = await setup(cache);
    const users = [upstream.alice, upstream.bob];
    const answers = await Promise.all(
      Array.from({ length: 100 }, async (_, i) => ({ user: users[i % 2]!, answer: await gw.gql(QUERY, { id: PHONE }, users[i % 2]!.key) })),
    );
    for (const { user, answer } of answers) {
      expect(answer.body.errors).toBeUndefined();
      expect(viewerId(answer)).toBe(user.id);
    }
    report(`single flight, two credentials, ${cache} cache`, {
      requests: 100, keyServiceCalls: keys.count(), recsCalls: recs.count(), cacheErrors: gw.cache.stats.errors,
    });
    expect(keys.count('GET')).toBe(2);
    expectOneItemCall(recs, gw);
  });
});

describe('no answer carries another user\'s data', () => {
  it('200 concurrent mixed requests of two users by key and by password', async () => {
    const { gw } = await setup('redis');
    // each user's keys as the upstream lists them: the truth to compare against
    const own = async (user: UpstreamUser): Promise<Set<string>> => {
      const listed = (await (await fetch(`${upstream.url}/api/v1/apikey`, { headers: { authorization: user.basic } })).json()) as { id: string }[];
      return new Set(listed.map((k) => k.id));
    };
    const truth = new Map([[upstream.alice.id, await own(upstream.alice)], [upstream.bob.id, await own(upstream.bob)]]);
    expect(truth.get(upstream.alice.id)!.size).toBeGreaterThan(0);
    const callers = [
      { user: upstream.alice, authorization: upstream.alice.key },
      { user: upstream.bob, authorization: upstream.bob.key },
      { user: upstream.alice, authorization: upstream.alice.basic },
      { user: upstream.bob, authorization: upstream.bob.basic },
    ];
    const query = 'query($id: ItemId!) { viewer { id username } apiKeys { id userId name } item(itemId: $id) { itemId } }';
    const answers = await Promise.all(
      Array.from({ length: 200 }, async (_, i) => {
        const caller = callers[i % callers.length]!;
        return { caller, answer: await gw.gql(query, { id: PHONE }, caller.authorization) };
      }),
    );
    let checked = 0;
    for (const { caller, answer } of answers) {
      expect(answer.body.errors).toBeUndefined();
      const viewer = answer.body.data?.viewer as { id: string; username: string | null };
      expect(viewer.id).toBe(caller.user.id);
      if (caller.authorization.startsWith('Basic')) expect(viewer.username).toBe(caller.user.username);
      const keys = answer.body.data?.apiKeys as { id: string; userId: string }[];
      expect(new Set(keys.map((k) => k.id))).toEqual(truth.get(caller.user.id));
      for (const key of keys) expect(key.userId).toBe(caller.user.id);
      checked++;
    }
    expect(checked).toBe(200);
  });
});
