import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { roleNames } from '../../../src/backends/embedded/publishedLists.js';
import { coViews, sendEvents } from '../../helpers/liveEvents.js';
import { createKey, firstAdmin, startServe, type ServeProcess } from '../../helpers/processes.js';
import { OwnRedisCluster, testPrefix } from '../../helpers/redis.js';
import { forYouOf, readyz, rolesShop, topOf, within } from '../../helpers/roles.js';
import { DATABASE_URL } from '../../helpers/stores.js';

/**
 * Issue 43's roles over real PostgreSQL and a real Redis Cluster of three masters (REDIS_CLUSTER_NODES: the shared
 * cache and rate limits of both processes): an event sent to the serve replica changes its lists and its shopper's
 * for-you list within seconds, its response cache notwithstanding; a replica whose LISTEN connection is cut (the
 * notices of that time missed) catches up by its poll of the publish version.
 */
const FRESH_MS = 5_000;

let cluster: OwnRedisCluster;
const cleanups: (() => Promise<unknown>)[] = [];
beforeAll(async () => {
  cluster = await OwnRedisCluster.start();
}, 120_000);
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
  await cluster?.stop();
});

describe('RECS_ROLE on a Redis Cluster: a learner and a serve replica', () => {
  it('an event on the serve replica changes its lists within seconds; notices missed, it catches up', async () => {
    const { schema, env } = await rolesShop(cleanups);
    const prefix = testPrefix();
    const start = async (role: string): Promise<ServeProcess> => {
      const p = await startServe(env(role, { REDIS_CLUSTER_NODES: cluster.seeds, REDIS_KEY_PREFIX: prefix }));
      cleanups.push(() => p.stop());
      return p;
    };
    const learner = await start('learn');
    const serve = await start('serve');
    const auth = await createKey(serve.url, firstAdmin(learner), 'roles-cluster');
    for (const gateway of [learner, serve]) {
      expect(await within(async () => {
        const { body } = await readyz(gateway.url);
        return body.status === 'ready' && body.checks?.cache === 'ok' && body.role?.learnerActive === true;
      }, 20_000)).toBeLessThan(20_000);
    }

    // answered once (and kept in the replica's response cache), then changed by events sent to the replica itself
    const before = await topOf(serve.url, auth, 910);
    expect(before).not.toBe(915);
    expect(await sendEvents(serve.url, auth, coViews(910, 915, 3, 1))).toEqual({ accepted: 6 });
    expect(await within(async () => (await topOf(serve.url, auth, 910)) === 915, FRESH_MS)).toBeLessThan(FRESH_MS);
    expect(await topOf(learner.url, auth, 910)).toBe(915);
    expect(await sendEvents(serve.url, auth, [{ kind: 'VIEW', itemId: 910, sessionId: 'cluster-fy', userId: null, orderId: null, time: Date.now() - 1000 }])).toEqual({ accepted: 1 });
    expect(await within(async () => JSON.stringify((await forYouOf(serve.url, auth, 'cluster-fy'))[0]) === JSON.stringify([915, 'CO_VIEW', 910]), FRESH_MS)).toBeLessThan(FRESH_MS);

    // the replica's LISTEN connection cut: the publishes meanwhile send notices nobody hears
    const client = new pg.Client({ connectionString: DATABASE_URL });
    await client.connect();
    cleanups.push(() => client.end());
    const { rowCount } = await client.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = $1', [`LISTEN ${roleNames(schema).channel}`]);
    expect(rowCount).toBe(1);
    expect(await sendEvents(serve.url, auth, coViews(910, 916, 6, 100))).toEqual({ accepted: 12 });
    expect(await within(async () => (await topOf(serve.url, auth, 910)) === 916, FRESH_MS)).toBeLessThan(FRESH_MS);
    expect(await within(async () => JSON.stringify((await forYouOf(serve.url, auth, 'cluster-fy'))[0]) === JSON.stringify([916, 'CO_VIEW', 910]), FRESH_MS)).toBeLessThan(FRESH_MS);
    expect(await forYouOf(serve.url, auth, 'cluster-fy')).toEqual(await forYouOf(learner.url, auth, 'cluster-fy'));
    expect((await readyz(serve.url)).body.checks?.cache).toBe('ok');
  }, 240_000);
});
