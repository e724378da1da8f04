import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEmbeddedBackend } from '../../src/backends/embedded/index.js';
import { PostgresKeyStore } from '../../src/backends/embedded/keys/postgresStore.js';
import { addUser } from '../../src/backends/embedded/keys/users.js';
import { openEmbeddedRecs } from '../../src/backends/embedded/openRecs.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { PHONE } from '../helpers/harness.js';
import { withIngestInMemory } from '../helpers/memoryIngest.js';
import { DATABASE_URL, dropSchema, TEST_COST, testSchema } from '../helpers/stores.js';

const ROOT = `Basic ${Buffer.from('root:root-password').toString('base64')}`;
const LIST = `query($kind: RecommendationKind!) { recommendations(itemId: ${PHONE}, kind: $kind, first: 3) { trackingId } }`;
const STATS = `query($since: DateTime!) { recommendationStats(since: $since) { kind variant impressions clicks purchases } }`;

interface Stats {
  kind: string;
  variant: string;
  impressions: number;
  clicks: number;
  purchases: number;
}

/** Replicas over one PostgreSQL schema: keys, users and the counts of lists shared. */
describe('attribution over PostgreSQL, two replicas', () => {
  const schema = testSchema();
  const since = new Date(Date.now() - 1000).toISOString();
  let replicas: TestGateway[] = [];

  async function replica(): Promise<TestGateway> {
    const store = new PostgresKeyStore({ connectionString: DATABASE_URL, schema, max: 4 });
    await store.migrate();
    if ((await store.countUsers()) === 0) await addUser(store, { username: 'root', password: 'root-password', isAdmin: true }, TEST_COST);
    const recs = await openEmbeddedRecs({ dataDir: null });
    return startTestGateway(withIngestInMemory(createEmbeddedBackend(store, recs), recs));
  }

  const stats = async (gw: TestGateway): Promise<Stats[]> => {
    const answer = await gw.gql<{ recommendationStats: Stats[] }>(STATS, { since }, { authorization: ROOT });
    expect(answer.body.errors).toBeUndefined();
    return answer.body.data!.recommendationStats;
  };
  const of = (all: Stats[], kind: string): Stats => all.find((s) => s.kind === kind && s.variant === 'A')!;

  /** Polls `gw`'s stats until `holds`, within 8 s: another replica writes its counts every 2 s. */
  async function statsUntil(gw: TestGateway, holds: (all: Stats[]) => boolean): Promise<Stats[]> {
    const end = Date.now() + 8000;
    for (;;) {
      const all = await stats(gw);
      if (holds(all) || Date.now() > end) return all;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }

  beforeAll(async () => {
    replicas = [await replica(), await replica()];
  });
  afterAll(async () => {
    for (const gw of replicas) await gw.stop().catch(() => undefined);
    await dropSchema(schema);
  });

  it('sums both replicas\' impressions, and takes a trackingId one replica gave at the other', async () => {
    const [one, two] = replicas as [TestGateway, TestGateway];
    for (let i = 0; i < 3; i++) await one.gql(LIST, { kind: 'POST_BROWSE' }, { authorization: ROOT });
    const served = await two.gql<{ recommendations: { trackingId: string } }>(LIST, { kind: 'POST_BROWSE' }, { authorization: ROOT });
    const trackingId = served.body.data!.recommendations.trackingId;
    const recorded = await one.gql('mutation($e: [EventInput!]!) { recordEvents(events: $e) { accepted } }', {
      e: [{ kind: 'VIEW', itemId: PHONE, sessionId: 's1', trackingId }, { kind: 'PURCHASE', itemId: PHONE, orderId: 'o1', trackingId }],
    }, { authorization: ROOT });
    expect(recorded.body).toEqual({ data: { recordEvents: { accepted: 2 } } });
    const all = await statsUntil(two, (s) => of(s, 'POST_BROWSE').impressions === 4 && of(s, 'POST_BROWSE').clicks === 1);
    expect(of(all, 'POST_BROWSE')).toEqual({ kind: 'POST_BROWSE', variant: 'A', impressions: 4, clicks: 1, purchases: 1 });
  });

  it('keeps the counts when every replica restarts', async () => {
    const before = await statsUntil(replicas[0]!, (s) => of(s, 'POST_BROWSE').impressions === 4);
    for (const gw of replicas) await gw.stop();
    replicas = [await replica()];
    expect(await stats(replicas[0]!)).toEqual(before);
  });
});
