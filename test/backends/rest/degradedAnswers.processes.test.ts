import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { itemKey } from '../../../src/cache/listSpaces.js';
import {
  PHONE, startFaultProxy, startRestGateway, startUpstream, type Fault, type FaultProxy, type RestGateway, type Upstream,
} from '../../helpers/harness.js';
import type { RecordedRequest } from '../../rest/helpers.js';

/**
 * An item or list the upstream failed to give (429, 5xx) is an error in the answer, never a
 * silently shorter list served as PUBLIC and cached: REST mode over a real upstream process, with
 * faults injected at a proxy in front of it for the lookups of some ids only.
 */

/** The ids a product lookup asks for: `/v1/items/<id>` or `/v1/items?ids=a,b`. */
function lookedUp(req: RecordedRequest): number[] {
  const url = new URL(req.url, 'http://upstream');
  const one = /^\/v1\/items\/(\d+)$/.exec(url.pathname);
  if (one) return [Number(one[1])];
  if (url.pathname === '/v1/items') return (url.searchParams.get('ids') ?? '').split(',').map(Number);
  return [];
}

/** `fault` for every lookup that asks for one of `ids`; everything else passes. */
const lookupsOf = (ids: number[], fault: Fault): Fault => ({
  kind: 'some',
  match: (req) => req.method === 'GET' && lookedUp(req).some((id) => ids.includes(id)),
  fault,
});

/** An answer's data, as the shape its query asked for. */
const dataOf = <T>(answer: { body: { data?: unknown } }): T => answer.body.data as T;
type ItemIds = { itemId: number }[];

describe('REST mode: an upstream failure is never a shortened, public answer', () => {
  let upstream: Upstream;
  let proxy: FaultProxy;
  let gateway: RestGateway;
  let key: string;

  beforeAll(async () => {
    upstream = await startUpstream();
    key = upstream.alice.key;
    proxy = await startFaultProxy(upstream.url);
    // no retries: each failure is one upstream call, and the breaker stays out of the way
    gateway = await startRestGateway({
      keysUrl: proxy.url,
      recsUrl: proxy.url,
      recsApiKey: upstream.gatewayKey,
      env: { UPSTREAM_RETRIES: '0', BREAKER_FAILURES: '1000' },
    });
  }, 120_000);

  afterAll(async () => {
    await gateway?.stop();
    await proxy?.close();
    await upstream?.stop();
  });

  it('variantItems whose lookup was refused (429): RATE_LIMITED, not public, and the whole list once the upstream recovers', async () => {
    // the variants, as the upstream itself has them
    const direct = await fetch(`${upstream.url}/v1/items/${PHONE}?apiKey=${encodeURIComponent(upstream.gatewayKey)}`);
    const variants = ((await direct.json()) as { variants: number[] }).variants.filter((id) => id !== PHONE);
    expect(variants.length).toBeGreaterThan(1);

    const query = `query($id: ItemId!) { item(itemId: $id) { itemId variantItems { itemId } } }`;
    proxy.fault = lookupsOf([variants[0]!], { kind: 'status', status: 429, headers: { 'retry-after': '60' } });
    const degraded = await gateway.gql(query, { id: PHONE }, key);
    // RATE_LIMITED answers 429 with Retry-After, as everywhere in the gateway
    expect([degraded.status, degraded.headers.get('retry-after')]).toEqual([429, '60']);
    expect(degraded.body.errors?.[0]).toMatchObject({ path: ['item', 'variantItems'], extensions: { code: 'RATE_LIMITED' } });
    expect(degraded.body.data).toEqual({ item: null });
    expect(degraded.headers.get('cache-control') ?? '').not.toContain('public');

    // asked again while the fault lasts: still the error, not a degraded answer from a cache
    const again = await gateway.gql(query, { id: PHONE }, key);
    expect(again.body.errors?.[0]?.extensions?.code).toBe('RATE_LIMITED');

    proxy.fault = { kind: 'pass' };
    const recovered = await gateway.gql(query, { id: PHONE }, key);
    expect(recovered.body.errors).toBeUndefined();
    expect(dataOf<{ item: { variantItems: ItemIds } }>(recovered).item.variantItems.map((v) => v.itemId)).toEqual(variants);
    expect(recovered.headers.get('cache-control')).toContain('public');
  });

  it('a recommendation list whose items failed to load (503): UPSTREAM_UNAVAILABLE, nothing degraded cached', async () => {
    const cold = await gateway.gql(`{ productRecommendations(itemId: ${PHONE}) { itemId name } }`, {}, key);
    expect(cold.body.errors).toBeUndefined();
    const ids = dataOf<{ productRecommendations: ItemIds }>(cold).productRecommendations.map((r) => r.itemId);
    expect(ids).toHaveLength(10);
    // the list outlives its items in the cache (their TTLs differ): the items are looked up again
    await gateway.cache.delete(ids.map(itemKey));

    const query = `query($id: ItemId!) {
      productRecommendations(itemId: $id, first: 10) { itemId }
      recommendations(itemId: $id, kind: NEXT_BEST_PRODUCT, first: 10) { edges { rank node { itemId } } }
    }`;
    proxy.fault = lookupsOf([ids[3]!, ids[7]!], { kind: 'status', status: 503 });
    const degraded = await gateway.gql(query, { id: PHONE }, key);
    expect(degraded.status).toBe(200);
    const codes = (degraded.body.errors ?? []).map((e) => e.extensions?.code);
    expect(codes.length).toBeGreaterThan(0);
    expect(new Set(codes)).toEqual(new Set(['UPSTREAM_UNAVAILABLE']));
    expect(degraded.body.data).toBeNull();
    expect(degraded.headers.get('cache-control') ?? '').not.toContain('public');

    proxy.fault = { kind: 'pass' };
    const recovered = await gateway.gql(query, { id: PHONE }, key);
    expect(recovered.body.errors).toBeUndefined();
    const lists = dataOf<{ productRecommendations: ItemIds; recommendations: { edges: { rank: number; node: { itemId: number } }[] } }>(recovered);
    expect(lists.productRecommendations.map((r) => r.itemId)).toEqual(ids);
    expect(lists.recommendations.edges.map((e) => [e.rank, e.node.itemId]))
      .toEqual(ids.map((id, i) => [i + 1, id]));
  });
});
