import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import net from 'node:net';
import { Redis } from 'ioredis';

/** The machine's Redis (REDIS_URL, default redis://127.0.0.1:6379): tests write under their own prefix only. */
export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

export const testPrefix = (): string => `recs-gateway-test:${randomBytes(4).toString('hex')}:`;

/** Deletes the keys under a prefix this test wrote, and returns what they were (for secret checks). */
export async function drainPrefix(prefix: string): Promise<Record<string, string>> {
  const redis = new Redis(REDIS_URL, { lazyConnect: true });
  await redis.connect();
  const found: Record<string, string> = {};
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      cursor = next;
      for (const key of keys) {
        const value = await redis.get(key);
        if (value !== null) found[key] = value;
      }
      if (keys.length > 0) await redis.del(...keys);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
  return found;
}

export async function freePort(): Promise<number> {
  const server = net.createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as net.AddressInfo;
  server.close();
  return port;
}

/**
 * A redis-server of the test's own on a free port, that the test can stop, freeze (SIGSTOP) and
 * restart by its process id without touching the machine's Redis.
 */
export class OwnRedis {
  private child: ChildProcess | undefined;
  private constructor(readonly port: number) {}

  static async start(): Promise<OwnRedis> {
    const redis = new OwnRedis(await freePort());
    await redis.start();
    return redis;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  async start(): Promise<void> {
    this.child = spawn('redis-server', ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
      stdio: 'ignore',
    });
    for (let i = 0; i < 100; i++) {
      const ok = await new Promise<boolean>((resolve) => {
        const socket = net.connect(this.port, '127.0.0.1', () => {
          socket.end();
          resolve(true);
        });
        socket.on('error', () => resolve(false));
      });
      if (ok) return;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error('redis-server did not start');
  }

  freeze(): void {
    this.child?.kill('SIGSTOP');
  }

  thaw(): void {
    this.child?.kill('SIGCONT');
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGCONT');
    child.kill('SIGKILL');
    await once(child, 'exit');
    this.child = undefined;
  }
}
