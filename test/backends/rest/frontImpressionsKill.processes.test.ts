import { afterAll, describe, expect, it } from 'vitest';
import { PHONE } from '../../helpers/harness.js';
import { createKey, firstAdmin, gql, startServe, type ServeProcess } from '../../helpers/processes.js';
import { tempDir } from '../../helpers/stores.js';

const LIST = `{ recommendations(itemId: ${PHONE}, kind: NEXT_BEST_PRODUCT, first: 2) { trackingId } }`;
const STATS = '{ recommendationStats(since: "2020-01-01T00:00:00Z") { kind variant impressions } }';
const SECRET = 'a-secret-front-and-upstream-share';

/** A REST-mode front's impressions reach its upstream's counts in batches: a SIGKILL loses at most one
 * flush interval's worth, a SIGTERM none. */
describe('a killed front\'s impressions', () => {
  const dir = tempDir('recs-front-kill-');
  let upstream: ServeProcess | undefined;
  let front: ServeProcess | undefined;
  afterAll(async () => {
    await front?.stop('SIGKILL');
    await upstream?.stop('SIGTERM');
    dir.remove();
  });

  it('loses at most the impressions since its last send (2 s) to SIGKILL, and none to SIGTERM', { timeout: 120_000 }, async () => {
    upstream = await startServe({ DATA_DIR: dir.dir, RECS_TRACKING_SECRET: SECRET });
    const admin = firstAdmin(upstream);
    const key = await createKey(upstream.url, admin, 'front');
    const frontEnv = { DATA_DIR: '/nonexistent', BACKEND: 'rest', APIKEY_SERVICE_URL: upstream.url, RECS_SERVICE_URL: upstream.url, RECS_API_KEY: key, RECS_TRACKING_SECRET: SECRET };
    const atUpstream = async (): Promise<number> => {
      const stats = await gql(upstream!.url, STATS, {}, { authorization: admin });
      return (stats.body.data!.recommendationStats as unknown as { kind: string; impressions: number }[]).find((s) => s.kind === 'NEXT_BEST_PRODUCT')!.impressions;
    };

    front = await startServe(frontEnv);
    for (let i = 0; i < 5; i++) expect((await gql(front.url, LIST, {}, { authorization: admin })).body.errors).toBeUndefined();
    const end = Date.now() + 10_000;
    while ((await atUpstream()) < 5 && Date.now() < end) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await atUpstream()).toBe(5);
    for (let i = 0; i < 3; i++) await gql(front.url, LIST, {}, { authorization: admin });
    await front.stop('SIGKILL');
    const afterKill = await atUpstream();
    expect(afterKill).toBeGreaterThanOrEqual(5);
    expect(afterKill).toBeLessThanOrEqual(8);

    front = await startServe(frontEnv);
    await gql(front.url, LIST, {}, { authorization: admin });
    await front.stop('SIGTERM');
    front = undefined;
    expect(await atUpstream()).toBe(afterKill + 1);
  });

  it('a front started without RECS_TRACKING_SECRET says so once, in its log', { timeout: 60_000 }, async () => {
    const admin = firstAdmin(upstream!);
    const key = await createKey(upstream!.url, admin, 'unsigned-front');
    front = await startServe({ DATA_DIR: '/nonexistent', BACKEND: 'rest', APIKEY_SERVICE_URL: upstream!.url, RECS_SERVICE_URL: upstream!.url, RECS_API_KEY: key });
    await front.stop('SIGTERM');
    expect(front.stdout().match(/RECS_TRACKING_SECRET is not set/g)).toHaveLength(1);
    front = undefined;
  });
});
