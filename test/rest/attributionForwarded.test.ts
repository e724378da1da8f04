import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuthorization } from '../../src/auth/authorization.js';
import { createEmbeddedBackend } from '../../src/backends/embedded/index.js';
import { SqliteKeyStore } from '../../src/backends/embedded/keys/sqliteStore.js';
import { addUser } from '../../src/backends/embedded/keys/users.js';
import { openEmbeddedRecs } from '../../src/backends/embedded/openRecs.js';
import { createRestBackend } from '../../src/backends/rest/index.js';
import { createLogger } from '../../src/logger.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { PHONE } from '../helpers/harness.js';
import { withIngestInMemory } from '../helpers/memoryIngest.js';
import { tempDir, TEST_COST } from '../helpers/stores.js';

const root = basicAuthorization('root', 'root-password');
const SECRET = 'the-secret-front-and-upstream-share';
const STATS = `{ recommendationStats(since: "2020-01-01T00:00:00Z") { kind variant impressions clicks purchases } }`;
const RECORD = 'mutation($e: [EventInput!]!) { recordEvents(events: $e) { accepted } }';

/** A REST-mode front over a recs-gateway: trackingIds it gives are taken by the upstream, which counts them. */
describe('attribution in REST mode', () => {
  const dir = tempDir('recs-attribution-rest-');
  let upstream: TestGateway;
  let front: TestGateway;
  let frontKey: string;
  const frontOver = (env: Record<string, string>, lines?: string[]) => startTestGateway(
    createRestBackend({ apiKeyServiceUrl: upstream.url, recsServiceUrl: upstream.url, recsApiKey: frontKey, authCacheTtlMs: 0 }), env,
    lines ? createLogger({ level: 'warn', destination: { write: (line: string) => lines.push(line) } as unknown as NodeJS.WritableStream }) : undefined,
  );
  const upstreamStats = async () => {
    const stats = await upstream.gql<{ recommendationStats: { kind: string; variant: string; impressions: number }[] }>(STATS, {}, { authorization: root });
    return Object.fromEntries(stats.body.data!.recommendationStats.map((s) => [`${s.kind}/${s.variant}`, s.impressions]));
  };
  const postImpressions = (body: unknown, authorization?: string, method = 'POST') => fetch(`${upstream.url}/v1/stats/impressions`, {
    method, headers: { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) }, body: JSON.stringify(body),
  }).then(async (r) => ({ status: r.status, body: (await r.json()) as { taken?: number; errors?: { code: number; message: string }[] } }));
  const hourNow = () => Math.floor(Date.now() / 3_600_000);

  beforeAll(async () => {
    const store = new SqliteKeyStore(path.join(dir.dir, 'keys.db'));
    await addUser(store, { username: 'root', password: 'root-password', isAdmin: true }, TEST_COST);
    await addUser(store, { username: 'alice', password: 'alice-password' }, TEST_COST);
    const recs = await openEmbeddedRecs({ dataDir: null });
    upstream = await startTestGateway(withIngestInMemory(createEmbeddedBackend(store, recs), recs), { RECS_TRACKING_SECRET: SECRET });
    const created = await upstream.gql<{ createApiKey: { key: string } }>('mutation { createApiKey(input: { name: "front" }) { key } }', {}, { authorization: root });
    frontKey = created.body.data!.createApiKey.key;
    front = await frontOver({ RECS_TRACKING_SECRET: SECRET });
  });
  afterAll(async () => {
    await front?.stop().catch(() => undefined);
    await upstream?.stop().catch(() => undefined);
    dir.remove();
  });

  it('forwards a trackingId in events to the upstream, which counts the click', async () => {
    const served = await front.gql<{ recommendations: { trackingId: string; variant: string } }>(
      `{ recommendations(itemId: ${PHONE}, kind: POST_BROWSE, first: 3) { trackingId variant } }`, {}, { authorization: root },
    );
    expect(served.body.data!.recommendations.variant).toBe('A');
    const { trackingId } = served.body.data!.recommendations;
    const recorded = await front.gql(RECORD, { e: [{ kind: 'VIEW', itemId: PHONE, sessionId: 's', trackingId }] }, { authorization: root });
    expect(recorded.body).toEqual({ data: { recordEvents: { accepted: 1 } } });
    const stats = await upstream.gql<{ recommendationStats: { kind: string; variant: string; clicks: number }[] }>(STATS, {}, { authorization: root });
    expect(stats.body.data!.recommendationStats.find((s) => s.kind === 'POST_BROWSE' && s.variant === 'A')!.clicks).toBe(1);
  });

  it('refuses a malformed or forged trackingId before forwarding', async () => {
    for (const bad of ['no such id', 'AAAAAAAAAAAAAAAAAAAAAAA']) {
      const refused = await front.gql(RECORD, { e: [{ kind: 'VIEW', itemId: PHONE, sessionId: 's', trackingId: bad }] }, { authorization: root });
      expect(refused.body.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    }
  });

  it('answers recommendationStats from the upstream\'s GET /v1/stats, as the caller', async () => {
    const atFront = await front.gql(STATS, {}, { authorization: root });
    const atUpstream = await upstream.gql(STATS, {}, { authorization: root });
    expect(atFront.body.errors).toBeUndefined();
    expect(atFront.body.data).toEqual(atUpstream.body.data);
    const rest = await fetch(`${upstream.url}/v1/stats?since=2020-01-01T00:00:00Z`, { headers: { authorization: root } });
    expect(rest.status).toBe(200);
    const rows = (await rest.json()) as Record<string, unknown>[];
    const kinds = (atUpstream.body.data as { recommendationStats: Record<string, unknown>[] }).recommendationStats;
    expect(rows.map((row) => [row.kind, row.variant, row.clicks])).toEqual(kinds.map((row) => [row.kind, row.variant, row.clicks]));
    const backwards = await front.gql('{ recommendationStats(since: "2026-01-02T00:00:00Z", until: "2026-01-01T00:00:00Z") { kind } }', {}, { authorization: root });
    expect(backwards.body.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
  });

  it('GET /v1/stats: administrators only, since required, as the ingestion twins refuse', async () => {
    const alice = basicAuthorization('alice', 'alice-password');
    const get = async (query: string, authorization?: string) => {
      const response = await fetch(`${upstream.url}/v1/stats${query}`, { headers: authorization ? { authorization } : {} });
      return { status: response.status, body: (await response.json()) as { errors?: { code: number; message: string }[] } };
    };
    expect((await get('?since=2020-01-01T00:00:00Z')).status).toBe(401);
    expect((await get('?since=2020-01-01T00:00:00Z', alice)).status).toBe(403);
    const missing = await get('', root);
    expect(missing.status).toBe(400);
    expect(missing.body.errors?.[0]?.message).toMatch(/^since is required/);
    expect((await get('?since=yesterday', root)).status).toBe(400);
    expect((await get('?since=1700000000000&until=1600000000000', root)).status).toBe(400);
    expect((await fetch(`${upstream.url}/v1/stats?since=0`, { method: 'POST', headers: { authorization: root } })).status).toBe(405);
  });

  // every list a shop's clients get through a front is served by the front: the stats the front
  // answers must count them, or each click lands on zero impressions and no rate can be read
  it('counts the lists the front served as impressions in recommendationStats at the front', async () => {
    const served = await front.gql<{ r: { trackingId: string }; f: { trackingId: string } }>(
      `{ r: recommendations(itemId: ${PHONE}, kind: NEXT_BEST_PRODUCT, first: 3) { trackingId } f: recommendedForYou(sessionId: "s-front", first: 3) { trackingId } }`,
      {}, { authorization: root },
    );
    expect(served.body.errors).toBeUndefined();
    const { r, f } = served.body.data!;
    const events = [r, f].map(({ trackingId }) => ({ kind: 'VIEW', itemId: PHONE, sessionId: 's-front', trackingId }));
    expect((await front.gql(RECORD, { e: events }, { authorization: root })).body.errors).toBeUndefined();
    const stats = await front.gql<{ recommendationStats: { kind: string; variant: string; impressions: number; clicks: number }[] }>(STATS, {}, { authorization: root });
    for (const kind of ['NEXT_BEST_PRODUCT', 'FOR_YOU']) {
      const row = stats.body.data!.recommendationStats.find((s) => s.kind === kind && s.variant === 'A')!;
      expect(row.clicks, kind).toBe(1);
      expect(row.impressions, kind).toBeGreaterThanOrEqual(1);
    }
  });

  it('sends the impressions a running front counted within seconds, unasked', async () => {
    const before = (await upstreamStats())['NEXT_BEST_PRODUCT/A']!;
    const served = await front.gql(`{ recommendations(itemId: ${PHONE}, kind: NEXT_BEST_PRODUCT, first: 2) { trackingId } }`, {}, { authorization: root });
    expect(served.body.errors).toBeUndefined();
    const deadline = Date.now() + 8_000;
    while ((await upstreamStats())['NEXT_BEST_PRODUCT/A']! === before && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
    expect((await upstreamStats())['NEXT_BEST_PRODUCT/A']).toBe(before + 1);
  });

  it('sends the impressions a front holds when it stops, as a replica writes its store', async () => {
    const before = await upstreamStats();
    const second = await frontOver({ RECS_TRACKING_SECRET: SECRET });
    try {
      for (let i = 0; i < 3; i++) {
        const served = await second.gql(`{ recommendations(itemId: ${PHONE}, kind: POST_BROWSE, first: 2) { trackingId } }`, {}, { authorization: root });
        expect(served.body.errors).toBeUndefined();
      }
    } finally {
      await second.stop();
    }
    expect((await upstreamStats())['POST_BROWSE/A']).toBe(before['POST_BROWSE/A']! + 3);
  });

  it('POST /v1/stats/impressions: administrators only, each row checked, all or nothing', async () => {
    const alice = basicAuthorization('alice', 'alice-password');
    const row = { kind: 'FOR_YOU', variant: 'A', hour: hourNow(), impressions: 5 };
    expect((await postImpressions([row])).status).toBe(401);
    expect((await postImpressions([row], alice)).status).toBe(403);
    expect((await postImpressions([row], root, 'PUT')).status).toBe(405);
    const before = await upstreamStats();
    const refused: [unknown, RegExp][] = [
      [{ rows: [row] }, /JSON array/],
      [[row, 'FOR_YOU'], /^impressions\[1\]: must be a JSON object/],
      [[{ ...row, kind: 'TRENDING' }], /^impressions\[0\]\.kind: must be one of/],
      [[{ ...row, variant: 'C' }], /^impressions\[0\]\.variant/],
      [[{ ...row, hour: hourNow() + 5 }], /^impressions\[0\]\.hour/],
      [[{ ...row, hour: String(hourNow()) }], /^impressions\[0\]\.hour/],
      [[{ ...row, impressions: 0 }], /^impressions\[0\]\.impressions/],
      [[{ ...row, impressions: 1.5 }], /^impressions\[0\]\.impressions/],
      [[{ ...row, impressions: 2 ** 40 }], /^impressions\[0\]\.impressions/],
      [[{ ...row, clicks: 9 }], /^impressions\[0\]\.clicks: unknown field/],
      [Array.from({ length: 1001 }, () => row), /At most 1000 rows/],
    ];
    for (const [body, message] of refused) {
      const answer = await postImpressions(body, root);
      expect(answer.status, JSON.stringify(body).slice(0, 80)).toBe(400);
      expect(answer.body.errors?.[0]?.code).toBe(4000);
      expect(answer.body.errors?.[0]?.message).toMatch(message);
    }
    expect(await upstreamStats()).toEqual(before);
    expect(await postImpressions([row, { ...row, hour: hourNow() - 1, impressions: 2 }], root)).toEqual({ status: 200, body: { taken: 2 } });
    expect(await postImpressions([], root)).toEqual({ status: 200, body: { taken: 0 } });
    expect((await upstreamStats())['FOR_YOU/A']).toBe(before['FOR_YOU/A']! + 7);
  });

  it('a front without RECS_TRACKING_SECRET warns at start, and a refused click names the setting', async () => {
    const lines: string[] = [];
    const unsigned = await frontOver({}, lines);
    try {
      expect(lines.filter((line) => line.includes('RECS_TRACKING_SECRET is not set'))).toHaveLength(1);
      const served = await unsigned.gql<{ recommendations: { trackingId: string } }>(
        `{ recommendations(itemId: ${PHONE}, kind: POST_BROWSE, first: 2) { trackingId } }`, {}, { authorization: root },
      );
      const { trackingId } = served.body.data!.recommendations;
      const refused = await unsigned.gql(RECORD, { e: [{ kind: 'VIEW', itemId: PHONE, sessionId: 's', trackingId }] }, { authorization: root });
      expect(refused.body.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
      expect(refused.body.errors?.[0]?.extensions?.field).toBe('events[0].trackingId');
      expect(refused.body.errors?.[0]?.message).toMatch(/front has no RECS_TRACKING_SECRET/);
    } finally {
      await unsigned.stop();
    }
    expect(lines.join('')).not.toContain(SECRET);
  });
});
