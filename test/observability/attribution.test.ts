import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEmbeddedBackend } from '../../src/backends/embedded/index.js';
import { SqliteKeyStore } from '../../src/backends/embedded/keys/sqliteStore.js';
import { addUser } from '../../src/backends/embedded/keys/users.js';
import { openEmbeddedRecs } from '../../src/backends/embedded/openRecs.js';
import { loadConfig } from '../../src/config/env.js';
import { createLogger } from '../../src/logger.js';
import { parseExperiment, rerankByEvidence, variantOf, type Experiment } from '../../src/model/experiment.js';
import { listCode, TrackingIds } from '../../src/model/trackingId.js';
import { Attribution, wilson } from '../../src/observability/attribution.js';
import type { RecommendationEntryModel } from '../../src/ports/backend.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { PHONE } from '../helpers/harness.js';
import { withIngestInMemory } from '../helpers/memoryIngest.js';
import { tempDir, TEST_COST } from '../helpers/stores.js';

const ROOT = `Basic ${Buffer.from('root:root-password').toString('base64')}`;
const ALICE = `Basic ${Buffer.from('alice:alice-password').toString('base64')}`;
const EXPERIMENT = 'evidence-prior:5,share=0.5';
const LIST = `query($id: ItemId!, $kind: RecommendationKind!) { recommendations(itemId: $id, kind: $kind, first: 5) { trackingId variant edges { rank node { itemId } } } }`;
const STATS = `query($since: DateTime!) { recommendationStats(since: $since) { kind variant impressions clicks purchases clickThroughRate { value low high } conversionRate { value low high } } }`;
const RECORD = `mutation($events: [EventInput!]!) { recordEvents(events: $events) { accepted duplicates } }`;

describe('trackingIds', () => {
  const ids = new TrackingIds('a secret of the test, long enough');

  it('name the kind and variant, are short, and stay the same for the same list', () => {
    const id = ids.make('NEXT_BEST_PRODUCT', 'B', Number.MAX_SAFE_INTEGER);
    expect(id.length).toBeLessThanOrEqual(23);
    expect(id).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(ids.make('NEXT_BEST_PRODUCT', 'B', Number.MAX_SAFE_INTEGER)).toBe(id);
    expect(ids.read(id)).toEqual({ code: 3, kind: 'NEXT_BEST_PRODUCT', variant: 'B' });
    expect(ids.read(ids.make('FOR_YOU', 'A', { shopper: 'session-1' }))).toMatchObject({ kind: 'FOR_YOU', variant: 'A' });
  });

  it('never show the shopper they are for', () => {
    const id = ids.make('FOR_YOU', 'A', { shopper: 'session-secret-42' });
    expect(Buffer.from(id, 'base64url').toString('latin1')).not.toContain('session');
    expect(id).not.toContain('session');
  });

  it('refuse a forged, altered, foreign or malformed one', () => {
    const id = ids.make('POST_BROWSE', 'A', PHONE);
    const bytes = Buffer.from(id, 'base64url');
    bytes[0] = bytes[0]! ^ 0x01; // the same list, claimed for another variant
    expect(ids.read(bytes.toString('base64url'))).toMatch(/not a trackingId this gateway gave/);
    expect(new TrackingIds('another gateway\'s secret!!').read(id)).toMatch(/not a trackingId/);
    for (const bad of ['', 'x', 'a b', 'é', '!'.repeat(10), 'A'.repeat(33), 'AAAAAAAAAAAAAAAA']) expect(typeof ids.read(bad)).toBe('string');
  });
});

describe('the experiment', () => {
  const experiment = parseExperiment(EXPERIMENT) as Experiment;

  it('parses its syntax and refuses anything else in one line', () => {
    expect(experiment).toEqual({ name: EXPERIMENT, evidencePrior: 5, share: 0.5 });
    for (const bad of ['recency-half-life:7d', 'evidence-prior:5', 'evidence-prior:0,share=0.5', 'evidence-prior:5,share=1', 'evidence-prior:x,share=0.2']) {
      expect(parseExperiment(bad)).toMatch(/^RECS_EXPERIMENT/);
    }
    expect(() => loadConfig({ RECS_EXPERIMENT: 'evidence-prior:5,share=2' })).toThrow(/RECS_EXPERIMENT's share must be a number strictly between 0 and 1, got "2"/);
    expect(loadConfig({}).recsExperiment).toBeNull();
  });

  it('assigns a shopper stably, and close to the share over 10,000 shoppers', () => {
    const oneFifth = parseExperiment('evidence-prior:5,share=0.2') as Experiment;
    let inB = 0;
    for (let i = 0; i < 10_000; i++) {
      const variant = variantOf(oneFifth, `session-${i}`);
      expect(variantOf(oneFifth, `session-${i}`)).toBe(variant);
      if (variant === 'B') inB++;
    }
    // 0.2 ± 4 standard errors (sqrt(0.2 × 0.8 / 10,000) = 0.004)
    expect(inB / 10_000).toBeGreaterThan(0.184);
    expect(inB / 10_000).toBeLessThan(0.216);
    expect(variantOf(null, 'session-1')).toBe('A');
    expect(variantOf(oneFifth, null)).toBe('A');
  });

  it('ranks B by score × evidence / (evidence + k), fills after', () => {
    const entries: RecommendationEntryModel[] = [
      { rank: 1, itemId: 1, score: 0.5, evidence: 1, source: 'CO_VIEW' }, // 0.5 × 1/6 = 0.083
      { rank: 2, itemId: 2, score: 0.3, evidence: 20, source: 'CO_VIEW' }, // 0.3 × 20/25 = 0.24
      { rank: 3, itemId: 3, score: null, evidence: 0, source: 'POPULAR' },
      { rank: 4, itemId: 4, score: 0.2, evidence: 5, source: 'CO_VIEW' }, // 0.2 × 5/10 = 0.1
    ];
    expect(rerankByEvidence(entries, 5).map((e) => [e.rank, e.itemId])).toEqual([[1, 2], [2, 4], [3, 1], [4, 3]]);
    expect(entries[0]!.rank).toBe(1);
  });
});

describe('a shopper\'s list (FOR_YOU): one call names it, gives its variant and counts it', () => {
  it('takes the header\'s variant, or without the header the variant of the shopper it is for', async () => {
    const attribution = await Attribution.open({ store: null, secret: 'a secret of the test, long enough', experiment: parseExperiment(EXPERIMENT) as Experiment });
    const experiment = attribution.experiment!;
    const inB = Array.from({ length: 50 }, (_, i) => `user-${i}`).find((s) => variantOf(experiment, s) === 'B')!;
    const unnamed = attribution.forRequest({});
    const served = unnamed.serve('FOR_YOU', { shopper: inB });
    expect(served.variant).toBe('B');
    expect(attribution.ids.read(served.trackingId)).toMatchObject({ kind: 'FOR_YOU', variant: 'B' });
    expect(unnamed.impressions).toEqual([listCode('FOR_YOU', 'B')]);
    const named = attribution.forRequest({ 'x-recs-shopper': 'someone-in-a' });
    expect(named.serve('FOR_YOU', { shopper: inB }).variant).toBe(named.variant);
    await attribution.close();
  });
});

describe('Wilson intervals', () => {
  it('match a hand computation: 2 of 10', () => {
    // p = 0.2, z = 1.96: (p + z²/20 ± z·sqrt(p(1-p)/10 + z²/400)) / (1 + z²/10) = [0.0567, 0.5098]
    const rate = wilson(2, 10)!;
    expect(rate.value).toBe(0.2);
    expect(rate.low).toBeCloseTo(0.05668, 4);
    expect(rate.high).toBeCloseTo(0.50983, 4);
    expect(wilson(0, 0)).toBeNull();
    expect(wilson(0, 4)!.low).toBe(0);
    expect(wilson(7, 5)!.value).toBe(1);
  });
});

interface Stats {
  kind: string;
  variant: string;
  impressions: number;
  clicks: number;
  purchases: number;
  clickThroughRate: { value: number; low: number; high: number } | null;
}

describe('attribution over HTTP, SQLite', () => {
  const dir = tempDir('recs-attribution-');
  const file = path.join(dir.dir, 'keys.db');
  let gw: TestGateway;
  const logs: string[] = [];
  const since = Date.now() - 1000;

  async function start(env: Record<string, string> = { RECS_EXPERIMENT: EXPERIMENT }): Promise<TestGateway> {
    const store = new SqliteKeyStore(file);
    if ((await store.countUsers()) === 0) {
      await addUser(store, { username: 'alice', password: 'alice-password' }, TEST_COST);
      await addUser(store, { username: 'root', password: 'root-password', isAdmin: true }, TEST_COST);
    }
    const recs = await openEmbeddedRecs({ dataDir: null });
    const log = createLogger({ level: 'debug', destination: { write: (line: string) => logs.push(line) } as never });
    return startTestGateway(withIngestInMemory(createEmbeddedBackend(store, recs), recs), env, log);
  }

  const stats = async (): Promise<Stats[]> => {
    const answer = await gw.gql<{ recommendationStats: Stats[] }>(STATS, { since: new Date(since).toISOString() }, { authorization: ROOT });
    expect(answer.body.errors).toBeUndefined();
    return answer.body.data!.recommendationStats;
  };
  const row = (all: Stats[], kind: string, variant: string): Stats => all.find((s) => s.kind === kind && s.variant === variant)!;

  beforeAll(async () => {
    gw = await start();
  });
  afterAll(async () => {
    await gw.stop().catch(() => undefined);
    dir.remove();
  });

  /** Two shoppers, one in each variant. */
  const shoppers = (() => {
    const experiment = parseExperiment(EXPERIMENT) as Experiment;
    const a = Array.from({ length: 50 }, (_, i) => `shopper-${i}`).find((s) => variantOf(experiment, s) === 'A')!;
    const b = Array.from({ length: 50 }, (_, i) => `shopper-${i}`).find((s) => variantOf(experiment, s) === 'B')!;
    return { A: a, B: b };
  })();

  it('counts an impression for each list served, from the response cache too, by variant', async () => {
    const ask = (shopper: string) => gw.gql<{ recommendations: { trackingId: string; variant: string } }>(LIST, { id: PHONE, kind: 'POST_BROWSE' }, { authorization: ROOT, 'x-recs-shopper': shopper });
    const first = await ask(shoppers.A);
    expect(first.body.data!.recommendations.variant).toBe('A');
    const hitsBefore = gw.gateway.responseCacheStats!.hits;
    for (let i = 0; i < 3; i++) expect((await ask(shoppers.A)).body.data).toEqual(first.body.data);
    expect(gw.gateway.responseCacheStats!.hits).toBe(hitsBefore + 3);
    expect((await ask(shoppers.B)).body.data!.recommendations.variant).toBe('B');
    const all = await stats();
    expect(row(all, 'POST_BROWSE', 'A').impressions).toBe(4);
    expect(row(all, 'POST_BROWSE', 'B').impressions).toBe(1);
    expect(row(all, 'FOR_YOU', 'B')).toMatchObject({ impressions: 0, clicks: 0, purchases: 0, clickThroughRate: null });
  });

  it('never serves one variant\'s cached answer to the other\'s shopper', async () => {
    const query = `{ recommendations(itemId: ${PHONE}, kind: NEXT_BEST_PRODUCT, first: 10) { variant edges { score evidence node { itemId } } } }`;
    const answers: Record<string, unknown> = {};
    for (const variant of ['A', 'B', 'A', 'B'] as const) {
      const answer = await gw.gql<{ recommendations: { variant: string } }>(query, {}, { authorization: ROOT, 'x-recs-shopper': shoppers[variant] });
      expect(answer.body.data!.recommendations.variant).toBe(variant);
      answers[variant] ??= answer.body.data;
      expect(answer.body.data).toEqual(answers[variant]);
    }
  });

  it('counts clicks and purchases naming a list, and refuses a bad trackingId keeping nothing', async () => {
    const served = await gw.gql<{ recommendations: { trackingId: string } }>(LIST, { id: PHONE, kind: 'NEXT_BEST_PRODUCT' }, { authorization: ROOT, 'x-recs-shopper': shoppers.B });
    const trackingId = served.body.data!.recommendations.trackingId;
    const before = row(await stats(), 'NEXT_BEST_PRODUCT', 'B');
    const view = { kind: 'VIEW', itemId: PHONE, sessionId: 'private-session-77', trackingId, eventId: 'click-1' };
    const buy = { kind: 'PURCHASE', itemId: PHONE, userId: 'private-user-78', trackingId, eventId: 'buy-1' };
    const kept = await gw.gql(RECORD, { events: [view, buy] }, { authorization: ROOT });
    expect(kept.body).toEqual({ data: { recordEvents: { accepted: 2, duplicates: 0 } } });
    // a call sent again is not counted again
    expect((await gw.gql(RECORD, { events: [view, buy] }, { authorization: ROOT })).body.data).toEqual({ recordEvents: { accepted: 2, duplicates: 2 } });

    // a call holding one event stored before and one new: only the new one counts
    const partly = await gw.gql(RECORD, { events: [view, { ...view, eventId: 'click-2' }] }, { authorization: ROOT });
    expect(partly.body.data).toEqual({ recordEvents: { accepted: 2, duplicates: 1 } });

    const forged = trackingId.slice(0, -2) + (trackingId.endsWith('AA') ? 'BB' : 'AA');
    for (const bad of [forged, 'not a tracking id', 'x'.repeat(200)]) {
      const refused = await gw.gql(RECORD, { events: [{ ...view, eventId: null }, { ...buy, eventId: null, trackingId: bad }] }, { authorization: ROOT });
      expect(refused.body.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
      expect(refused.body.errors?.[0]?.message).toMatch(/^events\[1\]\.trackingId: /);
    }
    const rest = await fetch(`${gw.url}/v1/events`, { method: 'POST', headers: { authorization: ROOT, 'content-type': 'application/json' }, body: JSON.stringify([{ kind: 'view', itemId: PHONE, sessionId: 's', trackingId: forged }]) });
    expect(rest.status).toBe(400);
    const refusal = (await rest.json()) as { errors: { code: number; message: string }[] };
    expect(refusal.errors).toHaveLength(1);
    expect(refusal.errors[0]!.code).toBe(4000);
    expect(refusal.errors[0]!.message).toMatch(/^events\[0\]\.trackingId: is not a trackingId/);
    const restKept = await fetch(`${gw.url}/v1/events`, { method: 'POST', headers: { authorization: ROOT, 'content-type': 'application/json' }, body: JSON.stringify([{ kind: 'view', itemId: PHONE, sessionId: 's', trackingId }]) });
    expect(restKept.status).toBe(200);

    const after = row(await stats(), 'NEXT_BEST_PRODUCT', 'B');
    expect(after.impressions - before.impressions).toBe(0);
    expect(after.clicks - before.clicks).toBe(3);
    expect(after.purchases - before.purchases).toBe(1);
  });

  it('names a shopper\'s list, counts it as FOR_YOU in the shopper\'s variant, and counts its click', async () => {
    const shopper = shoppers.B;
    const query = `query($s: String!) { recommendedForYou(sessionId: $s, first: 3) { trackingId variant nodes { itemId } } }`;
    const before = row(await stats(), 'FOR_YOU', 'B');
    const answer = await gw.gql<{ recommendedForYou: { trackingId: string; variant: string; nodes: { itemId: number }[] } }>(query, { s: shopper }, { authorization: ROOT });
    expect(answer.body.errors).toBeUndefined();
    const list = answer.body.data!.recommendedForYou;
    expect(list.variant).toBe('B');
    expect(list.trackingId).not.toContain(shopper);
    const click = { kind: 'VIEW', itemId: list.nodes[0]!.itemId, sessionId: shopper, trackingId: list.trackingId };
    expect((await gw.gql(RECORD, { events: [click] }, { authorization: ROOT })).body.errors).toBeUndefined();
    const after = row(await stats(), 'FOR_YOU', 'B');
    expect(after.impressions - before.impressions).toBe(1);
    expect(after.clicks - before.clicks).toBe(1);
  });

  it('answers recommendationStats to administrators only', async () => {
    const refused = await gw.gql(STATS, { since: new Date(since).toISOString() }, { authorization: ALICE });
    expect(refused.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    const backwards = await gw.gql(`{ recommendationStats(since: "2026-01-02T00:00:00Z", until: "2026-01-01T00:00:00Z") { kind } }`, {}, { authorization: ROOT });
    expect(backwards.body.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    // a since ahead of now, no until given: the error names the field the caller sent
    const ahead = await gw.gql(STATS, { since: new Date(Date.now() + 3_600_000).toISOString() }, { authorization: ROOT });
    expect(ahead.body.errors?.[0]?.message).toBe('since must be before now');
    expect(ahead.body.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'since' });
  });

  it('shows the counts as Prometheus counters, and no shopper id anywhere', async () => {
    const metrics = await (await fetch(`${gw.url}/metrics`)).text();
    expect(metrics).toMatch(/recs_gateway_recommendation_impressions_total\{kind="POST_BROWSE",variant="A"\} 4\b/);
    expect(metrics).toMatch(/recs_gateway_recommendation_clicks_total\{kind="NEXT_BEST_PRODUCT",variant="B"\} 3\b/);
    expect(metrics).toMatch(/recs_gateway_recommendation_purchases_total\{kind="NEXT_BEST_PRODUCT",variant="B"\} 1\b/);
    for (const secret of [shoppers.A, shoppers.B, 'private-session-77', 'private-user-78']) {
      expect(metrics).not.toContain(secret);
      expect(logs.join('\n')).not.toContain(secret);
    }
  });

  it('keeps the counts over a restart', async () => {
    const before = await stats();
    await gw.stop();
    gw = await start();
    expect(await stats()).toEqual(before);
    expect(row(before, 'POST_BROWSE', 'A').impressions).toBeGreaterThan(0);
  });

  it('without RECS_EXPERIMENT, answers A to every shopper, and still reports B\'s earlier counts', async () => {
    await gw.stop();
    gw = await start({});
    const answer = await gw.gql<{ recommendations: { variant: string } }>(LIST, { id: PHONE, kind: 'POST_BROWSE' }, { authorization: ROOT, 'x-recs-shopper': shoppers.B });
    expect(answer.body.data!.recommendations.variant).toBe('A');
    expect((await stats()).map((s) => `${s.kind} ${s.variant}`)).toContain('POST_BROWSE B'); // counted earlier, still reported
  });
});

describe('attribution without the response cache', () => {
  const dir = tempDir('recs-attribution-nocache-');
  let gw: TestGateway;

  beforeAll(async () => {
    const store = new SqliteKeyStore(path.join(dir.dir, 'keys.db'));
    await addUser(store, { username: 'root', password: 'root-password', isAdmin: true }, TEST_COST);
    const recs = await openEmbeddedRecs({ dataDir: null });
    gw = await startTestGateway(withIngestInMemory(createEmbeddedBackend(store, recs), recs), { RESPONSE_CACHE_MAX_ENTRIES: '0' });
  });
  afterAll(async () => {
    await gw?.stop().catch(() => undefined);
    dir.remove();
  });

  it('counts every answer, Apollo\'s and the takeover\'s, each list of it once, with the same trackingId', async () => {
    const query = `{ a: recommendations(itemId: ${PHONE}, kind: POST_BROWSE, first: 2) { trackingId } b: item(itemId: ${PHONE}) { recommendations(kind: POST_BROWSE, first: 3) { trackingId } } }`;
    const ids = new Set<string>();
    for (let i = 0; i < 4; i++) {
      const answer = await gw.gql<{ a: { trackingId: string }; b: { recommendations: { trackingId: string } } }>(query, {}, { authorization: ROOT });
      ids.add(answer.body.data!.a.trackingId).add(answer.body.data!.b.recommendations.trackingId);
    }
    expect(ids.size).toBe(1); // the same list: kind, anchor and variant
    const stats = await gw.gql<{ recommendationStats: Stats[] }>(STATS, { since: new Date(Date.now() - 60_000).toISOString() }, { authorization: ROOT });
    expect(stats.body.data!.recommendationStats.find((s) => s.kind === 'POST_BROWSE')!.impressions).toBe(8);
    expect(stats.body.data!.recommendationStats.map((s) => s.variant)).toEqual(['A', 'A', 'A']);
  });
});
