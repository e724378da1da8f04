import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuthorization } from '../../src/auth/authorization.js';
import { RateLimiter } from '../../src/auth/rateLimit.js';
import { loadConfig } from '../../src/config/env.js';
import { createGateway, type Gateway } from '../../src/http/server.js';
import { codeOf, embeddedWithUsers, graphqlClient, type TestGateway } from '../helpers/gateway.js';
import { NO_RATE_LIMITS } from '../helpers/processes.js';
import { drainPrefix, REDIS_URL, testPrefix } from '../helpers/redis.js';
import { storeKinds } from '../helpers/stores.js';

/**
 * A key's own rate and quota on Redis-backed limits (a prefix of the test's own): a request is
 * spent once, whether the answer could be given at once or had to ask Redis.
 */
const alice = basicAuthorization('alice', 'alice-password');
const CREATE = `mutation($input: CreateApiKeyInput!) { createApiKey(input: $input) { key } }`;
const ITEM = '{ item(itemId: 31000005) { itemId } }';

describe('per-key limits on Redis', () => {
  const prefix = testPrefix();
  let gateway: Gateway;
  let gql: TestGateway['gql'];
  let dispose: () => Promise<void>;

  beforeAll(async () => {
    const opened = await storeKinds.find((k) => k.name === 'sqlite')!.open();
    dispose = opened.dispose;
    const config = loadConfig({ DATA_DIR: '/nonexistent', ...NO_RATE_LIMITS });
    // Redis slower than its 100 ms on a loaded machine hands over to the in-process insurance buckets, whose
    // own burst would double what passes: these cases are about counting in Redis, so Redis gets time
    const limiter = RateLimiter.open(config.rateLimits, { url: REDIS_URL, keyPrefix: prefix, commandTimeoutMs: 2000 });
    gateway = await createGateway({ config, backend: await embeddedWithUsers(opened.store), limiter });
    gql = graphqlClient(await gateway.listen(0, '127.0.0.1'));
  });
  afterAll(async () => {
    await gateway?.stop();
    await dispose?.();
    await drainPrefix(prefix);
  });

  const keyWith = async (input: Record<string, unknown>): Promise<string> => {
    const created = await gql<{ createApiKey: { key: string } }>(CREATE, { input }, { authorization: alice });
    expect(created.body.errors).toBeUndefined();
    return created.body.data!.createApiKey.key;
  };

  it('spends a key\'s own rate once a request when it also has a quota', async () => {
    // a burst of 40: tokens are leased from Redis 4 at a time, and a leased one spent here at once
    const key = await keyWith({ name: 'rate-and-quota', rateLimitPerSecond: 40, dailyQuota: 1000 });
    const started = performance.now();
    const answers = await Promise.all(Array.from({ length: 100 }, () => gql(ITEM, {}, { authorization: key })));
    const seconds = (performance.now() - started) / 1000;
    const answered = answers.filter((a) => a.status === 200).length;
    // the burst and what refills meanwhile (slower on a loaded machine); a token spent twice where leased falls short of the burst
    expect(answered).toBeGreaterThanOrEqual(39);
    expect(answered).toBeLessThanOrEqual(Math.floor(40 + 40 * seconds) + 4);
  });

  it('refuses the request past a quota counted in Redis', async () => {
    const key = await keyWith({ name: 'quota-3', dailyQuota: 3 });
    for (let i = 0; i < 3; i++) expect((await gql(ITEM, {}, { authorization: key })).status).toBe(200);
    const fourth = await gql(ITEM, {}, { authorization: key });
    expect(fourth.status).toBe(429);
    expect(codeOf(fourth)).toBe('QUOTA_EXCEEDED');
  });
});
