import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/env.js';
import { redisTarget } from '../../src/cache/redis.js';
import { clusterLocation } from '../../src/cache/redisCluster.js';

/** The problems loadConfig lists for `env`, or [] when it takes it. */
function problems(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
    return [];
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
}

describe('REDIS_CLUSTER_NODES', () => {
  it('takes host:port and redis:// seeds alike, and names a cluster rather than one Redis', () => {
    const config = loadConfig({ REDIS_CLUSTER_NODES: ' 10.0.0.1:7000, redis://10.0.0.2:7001 ,10.0.0.3' });
    expect(config.redisClusterNodes).toEqual(['redis://10.0.0.1:7000', 'redis://10.0.0.2:7001', 'redis://10.0.0.3']);
    expect(redisTarget(config)).toEqual({ cluster: config.redisClusterNodes });
    expect(redisTarget(loadConfig({ REDIS_URL: 'redis://10.0.0.9:6379' }))).toEqual({ url: 'redis://10.0.0.9:6379' });
    expect(redisTarget(loadConfig({}))).toBeNull();
  });

  it('keeps one user and password for every node, and never shows it where the cluster is named', () => {
    const config = loadConfig({ REDIS_CLUSTER_NODES: 'rediss://app:s3cr%40t@cache-1:6380,rediss://app:s3cr%40t@cache-2:6380' });
    expect(config.redisClusterNodes).toEqual(['rediss://app:s3cr%40t@cache-1:6380', 'rediss://app:s3cr%40t@cache-2:6380']);
    expect(clusterLocation(config.redisClusterNodes!)).toBe('redis-cluster cache-1:6380,cache-2:6380');
  });

  it('refuses nodes that disagree on scheme or password, naming the problem and never the password', () => {
    for (const nodes of ['redis://:one-pw@a:7000,redis://:two-pw@b:7000', 'redis://a:7000,rediss://b:7000', 'redis://:one-pw@a:7000,b:7000']) {
      const found = problems({ REDIS_CLUSTER_NODES: nodes });
      expect(found).toEqual(['REDIS_CLUSTER_NODES: every node must have the same scheme (redis:// or rediss://) and the same user and password']);
    }
  });

  it('refuses what is not a node, by its place in the list, without echoing it', () => {
    for (const [nodes, place] of [
      ['a:7000,http://b:7000', 2],
      ['redis://:pw-in-here@a:7000/3', 1],
      ['a:7000,b:notaport', 2],
      ['a:7000,redis://', 2],
    ] as const) {
      const found = problems({ REDIS_CLUSTER_NODES: nodes });
      expect(found).toEqual([`REDIS_CLUSTER_NODES must be host:port or redis://[user:password@]host:port entries separated by commas; entry ${place} is not`]);
      expect(found.join()).not.toContain('pw-in-here');
    }
  });

  it('refuses REDIS_URL beside it: two different Redis would split the cache and the limits', () => {
    expect(problems({ REDIS_URL: 'redis://a:6379', REDIS_CLUSTER_NODES: 'b:7000' })).toEqual([
      'REDIS_URL and REDIS_CLUSTER_NODES name two different Redis: set one of them',
    ]);
  });
});
