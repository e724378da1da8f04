import { Cluster, type ClusterOptions, type RedisOptions } from 'ioredis';

/** Every hash slot of a Redis Cluster: a slot with no master known means part of the keys is out of reach. */
const SLOTS = 16_384;

/** `redis://[user:password@]host:port` or `rediss://…`, as REDIS_CLUSTER_NODES names a seed node. */
function seed(url: string): { host: string; port: number; tls: boolean; username: string; password: string } {
  const parsed = new URL(url);
  return {
    host: parsed.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: Number(parsed.port || '6379'),
    tls: parsed.protocol === 'rediss:',
    username: decodeURIComponent(parsed.username),
    password: decodeURIComponent(parsed.password),
  };
}

/** A Cluster client that, like the single-Redis one, never makes Redis trouble a request's: a command
 * for a node that is gone fails at once (no failover retries), and the caller answers without Redis.
 * Credentials and TLS of the first seed hold for every node the cluster reports (env.ts checks they agree). */
export function connectCluster(nodes: readonly string[], options: { keyPrefix: string; redisOptions: RedisOptions }): Cluster {
  const seeds = nodes.map(seed);
  const first = seeds[0]!;
  const retry = (attempt: number): number => Math.min(100 * attempt, 1000);
  const { retryStrategy: _retry, enableOfflineQueue: _offline, keyPrefix: _prefix, ...redisOptions } = options.redisOptions;
  const clusterOptions: ClusterOptions = {
    keyPrefix: options.keyPrefix,
    enableOfflineQueue: false,
    enableReadyCheck: true,
    clusterRetryStrategy: retry,
    // a node that restarts is reconnected to, rather than forgotten until a MOVED reply names it
    clusterNodeRetryStrategy: retry,
    retryDelayOnFailover: 0,
    retryDelayOnClusterDown: 0,
    slotsRefreshTimeout: 1000,
    // single keys, batched per node: GET/SET/DEL of keys in many slots cost one round trip a node
    enableAutoPipelining: true,
    redisOptions: {
      ...redisOptions,
      ...(first.username !== '' ? { username: first.username } : {}),
      ...(first.password !== '' ? { password: first.password } : {}),
      ...(first.tls ? { tls: {} } : {}),
    },
  };
  return new Cluster(
    seeds.map(({ host, port }) => ({ host, port })),
    clusterOptions,
  );
}

/** Whether every slot's master answers: PING on any one node would pass while a third of the keys
 * is out of reach. A node reconnecting counts as unreachable without a round trip; one never used
 * yet (`wait`: ioredis connects lazily) is connected by the PING. */
export async function clusterReachable(cluster: Cluster): Promise<boolean> {
  const owners = new Set<string>();
  for (let slot = 0; slot < SLOTS; slot++) {
    const owner = cluster.slots[slot]?.[0];
    if (owner === undefined) return false;
    owners.add(owner);
  }
  const masters = new Map(cluster.nodes('master').map((node) => [`${node.options.host}:${node.options.port}`, node]));
  const asked = [...owners].map((owner) => masters.get(owner));
  if (asked.some((node) => node === undefined || (node.status !== 'ready' && node.status !== 'wait'))) return false;
  let timer: NodeJS.Timeout | undefined;
  // a PING in flight when its node went is resent on reconnection, not failed: bounded here
  const late = new Promise<false>((resolve) => (timer = setTimeout(resolve, 1000, false)));
  try {
    return await Promise.race([Promise.all(asked.map((node) => node!.ping())).then(() => true), late]);
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}

/** Where a cluster is, for the log: its seed nodes without user or password. */
export function clusterLocation(nodes: readonly string[]): string {
  try {
    return `redis-cluster ${nodes.map((url) => `${seed(url).host}:${seed(url).port}`).join(',')}`;
  } catch {
    return 'REDIS_CLUSTER_NODES';
  }
}

/** A cluster stays `ready` while one of its nodes is gone, and ioredis tells of a node's loss only
 * if that node was in use: every slot's master is asked each second instead (a PING a master). */
export function watchNodes(cluster: Cluster, down: (error: Error) => void, up: () => void): void {
  let reachable = true;
  let asking = false;
  const timer = setInterval(() => {
    // the cluster's own events tell of it while it is not ready
    if (asking || cluster.status !== 'ready') return;
    asking = true;
    void clusterReachable(cluster).then((now) => {
      asking = false;
      if (now === reachable) return;
      reachable = now;
      if (now) up();
      else down(new Error('a master of the cluster does not answer'));
    });
  }, 1000).unref();
  cluster.on('end', () => clearInterval(timer));
}
