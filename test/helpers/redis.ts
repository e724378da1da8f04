import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import net from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';

/** The machine's Redis (REDIS_URL, default redis://127.0.0.1:6379): tests write under their own prefix only. */
export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

export const testPrefix = (): string => `recs-gateway-test:${randomBytes(4).toString('hex')}:`;

/** Deletes the keys under a prefix this test wrote, and returns what they were (for secret checks; a hash's fields as JSON). */
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
        const value = (await redis.type(key)) === 'hash' ? JSON.stringify(await redis.hgetall(key)) : await redis.get(key);
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

/** Whether nothing listens on `port` of loopback now. */
async function canListen(port: number): Promise<boolean> {
  const server = net.createServer();
  const listening = await new Promise<boolean>((resolve) => {
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => resolve(true));
  });
  if (listening) await new Promise((resolve) => server.close(resolve));
  return listening;
}

/** A free port whose cluster bus port (10000 above) is free too, both below the ephemeral range. */
async function clusterPort(): Promise<number> {
  for (let i = 0; i < 100; i++) {
    const port = 20_000 + Math.floor(Math.random() * 2_700);
    if ((await canListen(port)) && (await canListen(port + 10_000))) return port;
  }
  throw new Error('no free port pair for a cluster node');
}

/**
 * A free port below the kernel's ephemeral range (32768 and up on Linux): the port-0 listeners of
 * tests running beside cannot be given it while an OwnRedis is down for a restart. One was, in a
 * CI run: the restarted redis-server could not bind, and the gateway's cache met another test's
 * server for the rest of the file ("the cache did not become ready").
 */
async function ownPort(): Promise<number> {
  for (let i = 0; i < 100; i++) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    if (await canListen(port)) return port;
  }
  return freePort();
}

/** Whether a Redis answers PING on `port` of loopback (not merely something listening there). */
function answersPing(port: number): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write('PING\r\n'));
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.once('data', (chunk: Buffer) => done(chunk.toString('latin1').startsWith('+PONG')));
    socket.once('error', () => done(false));
    socket.setTimeout(1000, () => done(false));
  });
}

/**
 * A redis-server of the test's own on a free port, that the test can stop, freeze (SIGSTOP) and
 * restart by its process id without touching the machine's Redis.
 */
export class OwnRedis {
  private child: ChildProcess | undefined;
  private constructor(
    readonly port: number,
    private readonly extraArgs: readonly string[] = [],
  ) {}

  /** A plain Redis; or a cluster node, given the path of its nodes.conf (by port). */
  static async start(clusterConfig?: (port: number) => string): Promise<OwnRedis> {
    const port = clusterConfig === undefined ? await ownPort() : await clusterPort();
    const extraArgs = clusterConfig === undefined ? [] : ['--cluster-enabled', 'yes', '--cluster-config-file', clusterConfig(port), '--cluster-node-timeout', '5000'];
    const redis = new OwnRedis(port, extraArgs);
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
    this.child = spawn('redis-server', ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', ...this.extraArgs], {
      stdio: 'ignore',
    });
    const child = this.child;
    for (let i = 0; i < 100; i++) {
      if (child.exitCode !== null) throw new Error(`redis-server exited at its start (port ${this.port} taken?)`);
      if (await answersPing(this.port)) return;
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

const run = promisify(execFile);

/**
 * A Redis Cluster of the test's own: three masters (no replicas) on free ports, their nodes.conf in
 * a temp directory so a node killed and started again rejoins with its slots (and no data).
 */
export class OwnRedisCluster {
  private constructor(
    readonly nodes: readonly OwnRedis[],
    private readonly dir: string,
  ) {}

  static async start(masters = 3): Promise<OwnRedisCluster> {
    const dir = mkdtempSync(path.join(tmpdir(), 'recs-redis-cluster-'));
    const nodes: OwnRedis[] = [];
    const cluster = new OwnRedisCluster(nodes, dir);
    try {
      for (let i = 0; i < masters; i++) {
        nodes.push(await OwnRedis.start((port) => path.join(dir, `nodes-${port}.conf`)));
      }
      await run('redis-cli', ['--cluster', 'create', ...nodes.map((node) => `127.0.0.1:${node.port}`), '--cluster-replicas', '0', '--cluster-yes'], { timeout: 30_000 });
      await cluster.settled();
      return cluster;
    } catch (error) {
      await cluster.stop();
      throw error;
    }
  }

  /** REDIS_CLUSTER_NODES naming every node. */
  get seeds(): string {
    return this.nodes.map((node) => `127.0.0.1:${node.port}`).join(',');
  }

  /** Waits until every node says cluster_state:ok (slots assigned and known to all); throws past 30 s. */
  async settled(): Promise<void> {
    for (let i = 0; i < 300; i++) {
      const states = await Promise.all(
        this.nodes.map((node) => run('redis-cli', ['-p', String(node.port), 'cluster', 'info'], { timeout: 2000 }).then((out) => out.stdout, () => '')),
      );
      if (states.every((state) => state.includes('cluster_state:ok'))) return;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error('the Redis Cluster did not reach cluster_state:ok');
  }

  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((node) => node.stop()));
    rmSync(this.dir, { recursive: true, force: true });
  }
}
