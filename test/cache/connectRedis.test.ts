import { afterEach, describe, expect, it, vi } from 'vitest';
import { connectRedis } from '../../src/cache/redis.js';
import { freePort } from '../helpers/redis.js';

describe('connectRedis, closed while its Redis is gone', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("leaves no timer of its own past 100 ms: ioredis's wait for the socket's close (2 s by default) held a stopping gateway", async () => {
    // nothing listens there: the client's socket is refused, closed, and a reconnection is waited for
    const redis = connectRedis({ url: `redis://127.0.0.1:${await freePort()}` });
    await new Promise((resolve) => redis.once('reconnecting', resolve));
    // the clock of the close only: the reconnection's timer, set before, is cleared by it
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    redis.disconnect();
    vi.advanceTimersByTime(100);
    expect(vi.getTimerCount()).toBe(0);
  });
});
