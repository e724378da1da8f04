import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { afterAll, describe, expect, it } from 'vitest';
import { startServe, type ServeProcess } from '../helpers/processes.js';
import { itemsFrom, storeCatalogue } from '../helpers/liveEvents.js';
import { freePort } from '../helpers/redis.js';
import { tempDir } from '../helpers/stores.js';

const PASSWORD = 'redis-s3cret-pw';

interface LogLine {
  level: number;
  msg: string;
  redis?: string;
  reason?: string;
}

const redisLines = (server: ServeProcess): LogLine[] =>
  server
    .stdout()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as LogLine)
    .filter((entry) => /redis/i.test(entry.msg));

async function waitFor(what: string, test: () => boolean, ms = 45_000): Promise<void> {
  for (const started = Date.now(); !test(); ) {
    if (Date.now() - started > ms) throw new Error(`waited ${ms} ms for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('Redis availability in the log', () => {
  const dir = tempDir();
  let server: ServeProcess | undefined;
  let redis: ChildProcess | undefined;
  afterAll(async () => {
    await server?.stop();
    if (redis && redis.exitCode === null) {
      redis.kill('SIGKILL');
      await once(redis, 'exit');
    }
    dir.remove();
  });

  it('warns once when Redis cannot be reached at start, says once when it is back, never per request or retry, never the password', async () => {
    const port = await freePort();
    // a catalogue of its own: on an empty DATA_DIR the start builds the demo shop, which is not the subject here
    await storeCatalogue({ kind: 'sqlite', dataDir: dir.dir }, itemsFrom(1, 12));
    server = await startServe({ DATA_DIR: dir.dir, REDIS_URL: `redis://:${PASSWORD}@127.0.0.1:${port}`, REDIS_KEY_PREFIX: `recs-gateway-test:avail:` });
    await waitFor('the warning', () => redisLines(server!).length > 0);

    // requests, and a few of ioredis's reconnection attempts (one a second at most)
    for (let i = 0; i < 10; i++) {
      const response = await fetch(`${server.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query: '{ __typename }' }),
      });
      expect(response.status).toBe(200);
      await response.text();
    }
    const readyz = await fetch(`${server.url}/readyz`);
    expect(((await readyz.json()) as { status: string }).status).toBe('degraded');
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    const down = redisLines(server);
    expect(down).toHaveLength(1);
    expect(down[0]).toMatchObject({ level: 40, redis: `redis://127.0.0.1:${port}` });
    expect(down[0]!.msg).toMatch(/^Redis cannot be reached: serving with the in-process cache/);
    expect(down[0]!.reason).toContain('ECONNREFUSED');

    redis = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--requirepass', PASSWORD], {
      stdio: 'ignore',
    });
    await waitFor('the all-clear', () => redisLines(server!).length > 1);
    // and nothing more while it stays up
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const lines = redisLines(server);
    expect(lines).toHaveLength(2);
    expect(lines[1]).toMatchObject({ level: 30, redis: `redis://127.0.0.1:${port}` });
    expect(lines[1]!.msg).toMatch(/^Redis is reachable again/);
    expect(server.stdout() + server.stderr()).not.toContain(PASSWORD);
  }, 120_000);
});
