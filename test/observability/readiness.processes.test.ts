import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuthorization } from '../../src/auth/authorization.js';
import { RedisCache } from '../../src/cache/redis.js';
import { loadConfig } from '../../src/config/env.js';
import { RateLimiter } from '../../src/auth/rateLimit.js';
import { createGateway, type Gateway } from '../../src/http/server.js';
import { gql } from '../helpers/processes.js';
import { embeddedWithUsers } from '../helpers/gateway.js';
import { OwnRedis } from '../helpers/redis.js';
import { storeKinds } from '../helpers/stores.js';

describe('health and readiness with Redis going away', () => {
  let redis: OwnRedis;
  let gateway: Gateway;
  let url: string;
  let dispose: () => Promise<void>;

  beforeAll(async () => {
    redis = await OwnRedis.start();
    const opened = await storeKinds[0]!.open();
    dispose = opened.dispose;
    const config = loadConfig({ DATA_DIR: '/nonexistent', REDIS_URL: redis.url });
    gateway = await createGateway({
      config,
      backend: await embeddedWithUsers(opened.store),
      cache: new RedisCache({ url: redis.url }),
      limiter: RateLimiter.open(config.rateLimits, { url: redis.url }),
    });
    url = await gateway.listen(0, '127.0.0.1');
  });
  afterAll(async () => {
    await gateway.stop().catch(() => undefined);
    await redis.stop();
    await dispose();
  });

  const readyz = async () => {
    const response = await fetch(`${url}/readyz`);
    return { status: response.status, body: (await response.json()) as { status: string; checks: Record<string, string> } };
  };

  it('is ready with every dependency named ok', async () => {
    let ready = await readyz();
    for (let i = 0; i < 50 && ready.body.status !== 'ready'; i++) {
      await new Promise((r) => setTimeout(r, 50));
      ready = await readyz();
    }
    expect(ready).toEqual({ status: 200, body: { status: 'ready', checks: { store: 'ok', cache: 'ok', rateLimits: 'ok' }, recommender: { mode: 'demo', store: null, followError: null } } });
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
  });

  it('stays in service but says degraded, naming Redis trouble, when Redis is gone; then recovers', async () => {
    await redis.stop();
    const degraded = await readyz();
    expect(degraded.status).toBe(200);
    expect(degraded.body.status).toBe('degraded');
    expect(degraded.body.checks.store).toBe('ok');
    expect(degraded.body.checks.cache).toMatch(/^unreachable/);
    expect(degraded.body.checks.rateLimits).toMatch(/^unreachable.*limits are kept per process/);
    // requests are still served, and still rate limited (in-process)
    const viewer = await gql(url, '{ viewer { username } }', {}, { authorization: basicAuthorization('alice', 'alice-password') });
    expect(viewer.status).toBe(200);
    expect(viewer.body.data?.viewer?.username).toBe('alice');
    expect((await fetch(`${url}/healthz`)).status).toBe(200);

    await redis.start();
    let after = await readyz();
    for (let i = 0; i < 60 && after.body.status !== 'ready'; i++) {
      await new Promise((r) => setTimeout(r, 100));
      after = await readyz();
    }
    expect(after.body.status).toBe('ready');
  });
});
