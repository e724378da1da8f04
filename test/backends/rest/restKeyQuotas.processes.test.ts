import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gql, startServe, type ServeProcess } from '../../helpers/processes.js';
import { restServeEnv, startUpstream, type Upstream } from '../../helpers/harness.js';

/**
 * REST mode in front of a recs-gateway key service: a key's limits and usage are forwarded, and the
 * key service's QUOTA_EXCEEDED refusals passed on unchanged (429, the code, Retry-After).
 */
const CREATE = `mutation($input: CreateApiKeyInput!) { createApiKey(input: $input) { id key apiKey { rateLimitPerSecond dailyQuota } } }`;
const secondsToMidnight = (): number => Math.ceil((86_400_000 - (Date.now() % 86_400_000)) / 1000);

describe('REST mode: limits, quotas and usage through a front', () => {
  let upstream: Upstream;
  let front: ServeProcess;

  beforeAll(async () => {
    upstream = await startUpstream();
    front = await startServe({ ...restServeEnv(upstream, 'unused'), REDIS_URL: '' });
  }, 120_000);
  afterAll(async () => {
    await front?.stop();
    await upstream?.stop();
  });

  it('forwards the limits, passes the key service\'s QUOTA_EXCEEDED on, and answers its usage', async () => {
    const created = await gql(front.url, CREATE, { input: { name: 'front-quota', dailyQuota: 3, rateLimitPerSecond: 100 } }, { authorization: upstream.alice.basic });
    expect(created.body.errors).toBeUndefined();
    const { id, key, apiKey } = created.body.data!.createApiKey as unknown as { id: string; key: string; apiKey: Record<string, unknown> };
    expect(apiKey).toEqual({ rateLimitPerSecond: 100, dailyQuota: 3 });

    // every listing forwards the key to the key service, which counts it against the quota
    const statuses: number[] = [];
    let refusal: Response | undefined;
    for (let i = 0; i < 6 && refusal === undefined; i++) {
      const response = await fetch(`${front.url}/api/v1/apikey`, { headers: { authorization: key } });
      statuses.push(response.status);
      if (response.status === 429) refusal = response;
      else await response.body?.cancel();
    }
    expect(refusal, statuses.join(',')).toBeDefined();
    expect(Math.abs(Number(refusal!.headers.get('retry-after')) - secondsToMidnight())).toBeLessThanOrEqual(2);
    expect(await refusal!.json()).toEqual([expect.objectContaining({ id: '*', reason: 'QUOTA_EXCEEDED' })]);
    const graphql = await gql(front.url, '{ apiKeys { id } }', {}, { authorization: key });
    expect(graphql.body.errors?.[0]?.extensions).toMatchObject({ code: 'QUOTA_EXCEEDED' });

    // a change and the usage, forwarded
    const changed = await gql(front.url, 'mutation($id: ID!) { updateApiKey(id: $id, input: { dailyQuota: null }) { dailyQuota rateLimitPerSecond } }', { id }, { authorization: upstream.alice.basic });
    expect(changed.body).toEqual({ data: { updateApiKey: { dailyQuota: null, rateLimitPerSecond: 100 } } });
    const usage = await fetch(`${front.url}/api/v1/apikey/${id}/usage`, { headers: { authorization: upstream.alice.basic } });
    expect(usage.status).toBe(200);
    const body = (await usage.json()) as { id: string; usage: { day: string; requests: number; refused: number }[] };
    expect(body.id).toBe(id);
    expect(body.usage).toHaveLength(1);
    expect(body.usage[0]!.refused).toBeGreaterThanOrEqual(1);
    expect(body.usage[0]!.requests).toBeGreaterThan(body.usage[0]!.refused);
    const viaGraphql = await gql(front.url, '{ apiKeys { id usage(days: 1) { day requests refused } } }', {}, { authorization: upstream.alice.basic });
    expect(viaGraphql.body.errors).toBeUndefined();
    const listed = (viaGraphql.body.data!.apiKeys as unknown as { id: string; usage: unknown[] }[]).find((k) => k.id === id);
    expect(listed?.usage).toHaveLength(1);

    // another user's key answers as an unknown one
    const bobs = await fetch(`${front.url}/api/v1/apikey/${id}/usage`, { headers: { authorization: upstream.bob.basic } });
    expect(bobs.status).toBe(400);
    expect(await bobs.json()).toEqual([{ id: '*', message: `API key not found: ${id}` }]);
  }, 60_000);
});
