import { basicAuthorization } from '../../src/auth/authorization.js';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/env.js';
import { createLogger } from '../../src/logger.js';
import { DEFAULT_METRICS_OPERATION_NAMES as MAX_OPERATION_NAMES, DEFAULT_METRICS_OPERATION_NAMES_PER_USER as PER_USER } from '../../src/config/defaults.js';
import { createGateway, type Gateway } from '../../src/http/server.js';
import { embeddedWithUsers, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { NO_RATE_LIMITS } from '../helpers/processes.js';
import { storeKinds } from '../helpers/stores.js';

/** The operation label values of recs_gateway_graphql_requests_total in a /metrics text. */
function operationLabels(text: string): Set<string> {
  const labels = new Set<string>();
  for (const match of text.matchAll(/^recs_gateway_graphql_requests_total\{operation="([^"]*)"/gm)) labels.add(match[1]!);
  return labels;
}

/** Runs `make(i)` for i < count, `width` at a time: bounded, and quicker than one by one. */
async function inBatches(count: number, width: number, make: (i: number) => Promise<unknown>): Promise<void> {
  for (let start = 0; start < count; start += width) {
    await Promise.all(Array.from({ length: Math.min(width, count - start) }, (_, j) => make(start + j)));
  }
}

describe('/metrics: operation names clients choose', () => {
  let gw: TestGateway;
  let dispose: () => Promise<void>;
  beforeAll(async () => {
    const opened = await storeKinds[0]!.open();
    dispose = opened.dispose;
    gw = await startTestGateway(await embeddedWithUsers(opened.store));
  });
  afterAll(async () => {
    await gw?.stop().catch(() => undefined);
    await dispose?.();
  });

  it(`1,000 invented names from one user take ${PER_USER} of the ${MAX_OPERATION_NAMES} name labels, leaving the rest to others; a name that only failed gets none`, async () => {
    const alice = { authorization: basicAuthorization('alice', 'alice-password') };
    const known = await gw.gql('query Known { viewer { username } }', {}, alice);
    expect(known.body.errors).toBeUndefined();
    // names sent without credentials take no label, though `viewer` succeeds without them
    await inBatches(200, 25, async (i) => {
      expect((await gw.gql(`query Stranger${i} { viewer { username } }`)).body.errors).toBeUndefined();
    });
    expect([...operationLabels(await (await fetch(`${gw.url}/metrics`)).text())].filter((l) => l.startsWith('Stranger'))).toEqual([]);
    await inBatches(1000, 25, async (i) => {
      // half of them succeed (a signed-in viewer), half fail (an item needs a credential)
      const response =
        i % 2 === 0
          ? await gw.gql(`query Op${i} { viewer { username } }`, {}, alice)
          : await gw.gql(`query Fail${i} { item(itemId: 31000005) { name } }`);
      expect(response.body.errors === undefined).toBe(i % 2 === 0);
    });
    const text = await (await fetch(`${gw.url}/metrics`)).text();
    const labels = operationLabels(text);
    // Known and 19 of alice's invented names; `other` for her 481 others and the 200 strangers
    expect(labels.size).toBe(PER_USER + 1);
    expect(labels.has('Known')).toBe(true);
    expect(text).toMatch(new RegExp(`^recs_gateway_graphql_requests_total\\{operation="other",outcome="ok"\\} ${200 + 500 - (PER_USER - 1)}$`, 'm'));
    expect([...labels].filter((l) => l.startsWith('Fail'))).toEqual([]);
    // another user's names, and an administrator's past any share, still get theirs
    const bob = { authorization: basicAuthorization('bob@corp.example', 'bob-password') };
    const root = { authorization: basicAuthorization('root', 'root-password') };
    expect((await gw.gql('query BobsPage { viewer { username } }', {}, bob)).body.errors).toBeUndefined();
    for (let i = 0; i < PER_USER + 5; i++) expect((await gw.gql(`query Admin${i} { viewer { username } }`, {}, root)).body.errors).toBeUndefined();
    const others = operationLabels(await (await fetch(`${gw.url}/metrics`)).text());
    expect(others.has('BobsPage')).toBe(true);
    expect([...others].filter((l) => l.startsWith('Admin'))).toHaveLength(PER_USER + 5);
    // a name kept before the flood keeps its label, and so do its failures now
    const again = await gw.gql('query Known { item(itemId: 31000005) { name } }');
    expect(again.body.errors?.length).toBeGreaterThan(0);
    const after = await (await fetch(`${gw.url}/metrics`)).text();
    expect(after).toMatch(/^recs_gateway_graphql_requests_total\{operation="Known",outcome="(?!ok)[A-Z_]+"\} 1$/m);
    expect(operationLabels(after).size).toBeLessThanOrEqual(MAX_OPERATION_NAMES + 1);
  }, 60_000);
});

describe('METRICS_TOKEN', () => {
  const TOKEN = 'metrics-token-0123456789abcdef';
  const logLines: string[] = [];
  let gateway: Gateway;
  let url: string;
  let dispose: () => Promise<void>;
  beforeAll(async () => {
    const opened = await storeKinds[0]!.open();
    dispose = opened.dispose;
    const stream = new PassThrough();
    stream.on('data', (chunk: Buffer) => logLines.push(chunk.toString('utf8')));
    gateway = await createGateway({
      config: loadConfig({ DATA_DIR: '/nonexistent', ...NO_RATE_LIMITS, METRICS_TOKEN: TOKEN }),
      backend: await embeddedWithUsers(opened.store),
      log: createLogger({ level: 'debug', destination: stream }),
    });
    url = await gateway.listen(0, '127.0.0.1');
  });
  afterAll(async () => {
    await gateway?.stop().catch(() => undefined);
    await dispose?.();
  });

  it('answers 401 without the token, a wrong one, or the token not as Bearer, and says nothing of the metrics', async () => {
    for (const headers of [
      {},
      { authorization: 'Bearer wrong-token-0123456789abcdef' },
      { authorization: `Bearer ${TOKEN}x` },
      { authorization: `Bearer ${TOKEN.slice(0, -1)}` },
      { authorization: TOKEN },
      { authorization: `Basic ${Buffer.from(`metrics:${TOKEN}`).toString('base64')}` },
    ] as Record<string, string>[]) {
      const response = await fetch(`${url}/metrics`, { headers });
      expect(response.status, JSON.stringify(headers)).toBe(401);
      expect(response.headers.get('www-authenticate')).toBe('Bearer realm="metrics"');
      const body = await response.text();
      expect(body).not.toContain('recs_gateway');
      expect(body).not.toContain(TOKEN.slice(0, 8));
      expect((JSON.parse(body) as { errors: { extensions?: { code?: string } }[] }).errors[0]?.extensions?.code).toBe('UNAUTHENTICATED');
    }
  });

  it('serves the metrics with Authorization: Bearer <token>, and never logs the token', async () => {
    for (const authorization of [`Bearer ${TOKEN}`, `bearer  ${TOKEN} `]) {
      const response = await fetch(`${url}/metrics`, { headers: { authorization } });
      expect(response.status).toBe(200);
      expect(await response.text()).toContain('recs_gateway_http_requests_total');
    }
    expect(logLines.length).toBeGreaterThan(0);
    expect(logLines.join('')).not.toContain(TOKEN.slice(0, 8));
  });

  it('refuses a token too short or with spaces, without echoing it', () => {
    for (const value of ['short', 'has spaces in the middle of it']) {
      let error: unknown;
      try {
        loadConfig({ METRICS_TOKEN: value });
      } catch (caught) {
        error = caught;
      }
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).message).toContain('METRICS_TOKEN');
      expect((error as ConfigError).message).not.toContain(value);
    }
    expect(loadConfig({}).metricsToken).toBeNull();
  });
});
