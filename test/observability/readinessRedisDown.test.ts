import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuthorization } from '../../src/auth/authorization.js';
import { RateLimiter } from '../../src/auth/rateLimit.js';
import { RedisCache } from '../../src/cache/redis.js';
import { loadConfig } from '../../src/config/env.js';
import { createGateway, type Gateway } from '../../src/http/server.js';
import { embeddedWithUsers } from '../helpers/gateway.js';
import { gql } from '../helpers/processes.js';
import { freePort } from '../helpers/redis.js';
import { storeKinds } from '../helpers/stores.js';

// /readyz answers anyone: what it says of a Redis it cannot reach is a word, not the client's internals

describe('readiness with REDIS_URL at a closed port', () => {
  let gateway: Gateway;
  let url: string;
  let port: number;
  let dispose: () => Promise<void>;

  beforeAll(async () => {
    port = await freePort();
    const redisUrl = `redis://127.0.0.1:${port}`;
    const opened = await storeKinds[0]!.open();
    dispose = opened.dispose;
    const config = loadConfig({ DATA_DIR: '/nonexistent', REDIS_URL: redisUrl });
    gateway = await createGateway({
      config,
      backend: await embeddedWithUsers(opened.store),
      cache: new RedisCache({ url: redisUrl }),
      limiter: RateLimiter.open(config.rateLimits, { url: redisUrl }),
    });
    url = await gateway.listen(0, '127.0.0.1');
  });
  afterAll(async () => {
    await gateway.stop().catch(() => undefined);
    await dispose();
  });

  it('says the cache and rate limits are unreachable, with none of ioredis\'s state, errors or the address', async () => {
    const response = await fetch(`${url}/readyz`);
    const text = await response.text();
    expect(response.status).toBe(200);
    expect(JSON.parse(text)).toMatchObject({
      status: 'degraded',
      checks: { store: 'ok', cache: 'unreachable (the log says why)', rateLimits: 'unreachable (the log says why); limits are kept per process meanwhile' },
    });
    for (const internal of [String(port), '127.0.0.1', 'ECONNREFUSED', 'enableOfflineQueue', 'Stream', 'reconnecting', 'connecting', 'Connection is closed']) {
      expect(text).not.toContain(internal);
    }
    // a valid client is still answered
    const viewer = await gql(url, '{ viewer { username } }', {}, { authorization: basicAuthorization('alice', 'alice-password') });
    expect([viewer.status, viewer.body.data?.viewer?.username]).toEqual([200, 'alice']);
  });
});
