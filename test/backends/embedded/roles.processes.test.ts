import { afterAll, describe, expect, it } from 'vitest';
import { coViews, sendEvents, storedEvents } from '../../helpers/liveEvents.js';
import { createKey, firstAdmin, gql, runCli, startServe, type ServeProcess } from '../../helpers/processes.js';
import { forYouOf, readyz, rolesShop, topOf as top, within } from '../../helpers/roles.js';
import { DATABASE_URL, tempDir } from '../../helpers/stores.js';

/**
 * Issue 43's roles as a shop runs them: one learner and a standby (RECS_ROLE=learn), two serve replicas
 * (RECS_ROLE=serve), four processes on one PostgreSQL schema. An event sent to one replica changes the
 * other's answer; the active learner SIGKILLed, the standby takes over; no learner left, the replicas
 * answer their last lists and say `degraded`.
 */
const BOUND_MS = 10_000;
let poll = 0;

describe('RECS_ROLE: a learner, a standby and two serve replicas on one PostgreSQL', () => {
  const cleanups: (() => Promise<unknown>)[] = [];
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
  });

  it('lists follow events across replicas, the standby takes over a SIGKILLed learner, and no learner is degraded', async () => {
    const { schema, env } = await rolesShop(cleanups);
    const started: ServeProcess[] = [];
    const start = async (role: string): Promise<ServeProcess> => {
      const p = await startServe(env(role));
      started.push(p);
      cleanups.push(() => p.stop());
      return p;
    };
    const learner = await start('learn');
    const admin = firstAdmin(learner);
    const [one, two, standby] = [await start('serve'), await start('serve'), await start('learn')];
    const auth = await createKey(one.url, admin, 'roles');
    expect(await within(async () => (await readyz(learner.url)).body.role?.learnerActive === true)).toBeLessThan(BOUND_MS);
    expect((await readyz(standby.url)).body.role).toMatchObject({ role: 'learn', learnerActive: false });
    const served = await readyz(one.url);
    expect(served.status).toBe(200);
    expect(served.body.role).toMatchObject({ role: 'serve', learnerActive: true });

    // to one replica, answered by the other
    expect(await sendEvents(one.url, auth, coViews(900, 907, 3, 1))).toEqual({ accepted: 6 });
    const fresh = await within(async () => (await top(two.url, auth, 900)) === 907);
    expect(fresh).toBeLessThan(5_000);
    expect(await top(one.url, auth, 900)).toBe(907);

    // a shopper's view through one replica: on the other at once (read from the store), 900's list summed, 900 left out
    expect((await forYouOf(two.url, auth, 'fy-1')).every(([, source]) => source === 'POPULAR')).toBe(true);
    expect(await sendEvents(one.url, auth, [{ kind: 'VIEW', itemId: 900, sessionId: 'fy-1', userId: null, orderId: null, time: Date.now() - 1000 }])).toEqual({ accepted: 1 });
    expect(await within(async () => JSON.stringify((await forYouOf(two.url, auth, 'fy-1'))[0]) === JSON.stringify([907, 'CO_VIEW', 900]))).toBeLessThan(5_000);
    expect((await forYouOf(two.url, auth, 'fy-1')).map(([id]) => id)).not.toContain(900);
    // the learner gives the same list for the same events
    expect(await within(async () => JSON.stringify(await forYouOf(learner.url, auth, 'fy-1')) === JSON.stringify(await forYouOf(two.url, auth, 'fy-1')))).toBeLessThan(5_000);

    // a record replaced through one replica is the other's within the bound; an event naming an item without one says so
    const name = async (u: string): Promise<unknown> => (await gql(u, `{ i${++poll}: item(itemId: 903) { name } }`, {}, { authorization: auth })).body.data?.[`i${poll}`];
    expect(await name(two.url)).toEqual({ name: 'thing 903' });
    const upserted = await gql(one.url, 'mutation($i:[ItemInput!]!){ upsertItems(items:$i){ upserted } }', { i: [{ itemId: 903, name: 'lamp 903', categoryPath: 'Home/Lamps' }] }, { authorization: auth });
    expect(upserted.body.data?.upsertItems).toEqual({ upserted: 1 });
    expect(await name(one.url)).toEqual({ name: 'lamp 903' });
    expect(await within(async () => JSON.stringify(await name(two.url)) === JSON.stringify({ name: 'lamp 903' }))).toBeLessThan(BOUND_MS);
    const unknown = await gql(two.url, 'mutation($e:[EventInput!]!){ recordEvents(events:$e){ accepted itemsWithoutRecord } }',
      { e: [{ kind: 'VIEW', itemId: 5555, sessionId: 'v-unknown', time: new Date().toISOString() }] }, { authorization: auth });
    expect(unknown.body.data?.recordEvents).toEqual({ accepted: 1, itemsWithoutRecord: 1 });

    // the active learner killed: the standby takes the lock and lists keep following
    learner.child.kill('SIGKILL');
    expect(await within(async () => (await readyz(standby.url)).body.role?.learnerActive === true)).toBeLessThan(BOUND_MS);
    expect(await sendEvents(two.url, auth, coViews(900, 908, 5, 100))).toEqual({ accepted: 10 });
    expect(await within(async () => (await top(one.url, auth, 900)) === 908)).toBeLessThan(BOUND_MS);
    expect(await storedEvents({ kind: 'postgres', connectionString: DATABASE_URL, schema })).toBe(18);

    // no learner: old lists are better than none
    await standby.stop();
    expect(await within(async () => (await readyz(one.url)).body.status === 'degraded')).toBeLessThan(BOUND_MS);
    const degraded = await readyz(one.url);
    expect(degraded.status).toBe(200);
    expect(degraded.body.role).toMatchObject({ role: 'serve', learnerActive: false });
    expect(await top(one.url, auth, 900)).toBe(908);
    expect(await top(two.url, auth, 900)).toBe(908);
    // events are still taken and kept for the next learner
    expect(await sendEvents(one.url, auth, coViews(901, 902, 1, 200))).toEqual({ accepted: 2 });
    const metrics = await (await fetch(`${one.url}/metrics`)).text();
    expect(metrics).toMatch(/recs_gateway_role_info\{role="serve",learner_active="false"\} 1/);
    expect(metrics).toMatch(/recs_gateway_published_lists_age_seconds \d/);
  }, 240_000);

  it('a bad RECS_ROLE, and serve or learn without DATABASE_URL, stop the start with one line', async () => {
    const dir = tempDir('recs-roles-cli-');
    cleanups.push(() => Promise.resolve(dir.remove()));
    const bad = await runCli(['serve'], { RECS_ROLE: 'master', DATA_DIR: dir.dir, DATABASE_URL: '' });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/RECS_ROLE must be one of all, serve, learn, got "master"/);
    expect(bad.stderr.trim().split('\n')).toHaveLength(1);
    for (const role of ['serve', 'learn']) {
      const alone = await runCli(['serve'], { RECS_ROLE: role, DATA_DIR: dir.dir, DATABASE_URL: '' });
      expect(alone.code).toBe(2);
      expect(alone.stderr).toContain(`RECS_ROLE=${role} needs DATABASE_URL (PostgreSQL)`);
      expect(alone.stderr.trim().split('\n')).toHaveLength(1);
    }
  }, 60_000);
});
