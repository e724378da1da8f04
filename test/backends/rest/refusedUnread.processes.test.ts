import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuthorization } from '../../../src/auth/authorization.js';
import { createRestBackend } from '../../../src/backends/rest/index.js';
import { startCountingProxy, type CountingProxy } from '../../helpers/countingProxy.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { raw, statusOf } from '../../helpers/rawHttp.js';
import { startRestUpstream, type RestUpstream } from '../../helpers/restUpstream.js';

// Issue 41, finding 4: a REST-mode gateway read a non-administrator's 6.7 MB batch, checked it and
// forwarded it (0.5-0.8 s and 257 ms of its CPU each) only to pass on the upstream's 403. Two
// processes: an embedded gateway serving the REST interfaces upstream, and a REST-mode one in
// front of it, its calls to the recommendations interface counted by a proxy.

const alice = basicAuthorization('alice', 'alice-password');
const root = basicAuthorization('root', 'root-password');
const ITEM = 31000124;
const RECORD = 'mutation($events: [EventInput!]!) { recordEvents(events: $events) { accepted } }';
const pad = 'x'.repeat(180);
const events = (n: number, kind: string) =>
  Array.from({ length: n }, (_, i) => ({ kind, itemId: ITEM, sessionId: `s${pad}-${i}`, userId: `u${pad}-${i}`, orderId: `o${pad}-${i}` }));
/** 10,000 events of 600-odd bytes: 6.2 MB, as the probe sent. */
const twinBatch = JSON.stringify(events(10_000, 'view'));
const graphqlBatch = JSON.stringify({ query: RECORD, variables: { events: events(10_000, 'VIEW') } });

/**
 * A request whose head declares the whole body but of which only the first 64 KiB are sent: what
 * comes back within 15 s. An answer there was given before the body was read (the rest never comes).
 */
function sentInPart(url: string, path: string, authorization: string, body: string): Promise<string> {
  const head = `POST ${path} HTTP/1.1\r\nhost: gateway\r\nauthorization: ${authorization}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n`;
  return raw(url, head + body.slice(0, 65_536), 15_000);
}

const bodyOf = (answer: string): unknown => JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4));

describe('a REST-mode gateway refuses a batch the upstream would refuse before reading it', () => {
  let upstream: RestUpstream;
  let proxy: CountingProxy;
  let gw: TestGateway;

  beforeAll(async () => {
    upstream = await startRestUpstream([{ username: 'alice', password: 'alice-password' }, { username: 'root', password: 'root-password', isAdmin: true }]);
    proxy = await startCountingProxy(upstream.url);
    // patient with the upstream (a loaded machine's tsx process): the subject is what is read and sent
    const backend = createRestBackend({ apiKeyServiceUrl: upstream.url, recsServiceUrl: proxy.url, recsApiKey: upstream.recsApiKey, headersTimeoutMs: 60_000 });
    gw = await startTestGateway(backend, { RESPONSE_CACHE_MAX_ENTRIES: '0', REQUEST_DEADLINE_MS: '60000' });
  }, 120_000);
  afterAll(async () => {
    await gw?.stop().catch(() => undefined);
    await proxy?.close();
    await upstream?.stop();
  });

  it("a non-administrator's 6 MB batch: 403 on POST /v1/events, 413 on /graphql as the embedded gateway answers, with 64 KiB of it sent; nothing forwarded", async () => {
    proxy.reset();
    for (let round = 0; round < 2; round++) {
      const twin = await sentInPart(gw.url, '/v1/events', alice, twinBatch);
      expect([statusOf(twin), bodyOf(twin)]).toEqual([403, { errors: [{ code: 403, message: 'Only administrators may send events and item records' }] }]);
      const graphql = await sentInPart(gw.url, '/graphql', alice, graphqlBatch);
      expect([statusOf(graphql), bodyOf(graphql)]).toEqual([413, { errors: [{ message: 'Request body larger than 1048576 bytes', extensions: { code: 'BAD_REQUEST' } }] }]);
    }
    // the upstream was asked once whether alice may send (an empty PUT /v1/items), and sent no batch
    expect(proxy.requests).toEqual(['PUT /v1/items']);
    // a small batch of hers is refused as well, without being sent: the upstream said so already
    const small = await gw.gql(RECORD, { events: events(1, 'VIEW') }, { authorization: alice });
    expect(small.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    expect(proxy.requests).toEqual(['PUT /v1/items']);
  }, 60_000);

  it("an administrator's batches past BODY_LIMIT_BYTES still go through, over both interfaces", async () => {
    proxy.reset();
    // 2,000 events: 1.2 MB, past the 1 MiB every caller may send
    const twin = await fetch(`${gw.url}/v1/events`, { method: 'POST', headers: { authorization: root, 'content-type': 'application/json' }, body: JSON.stringify(events(2_000, 'view')) });
    expect([twin.status, await twin.json()]).toEqual([200, { accepted: 2_000, duplicates: 0, itemsWithoutRecord: 0 }]);
    const graphql = await gw.gql(RECORD, { events: events(2_000, 'VIEW').map((e, i) => ({ ...e, sessionId: `g${i}` })) }, { authorization: root });
    expect(graphql.body).toEqual({ data: { recordEvents: { accepted: 2_000 } } });
    expect(proxy.requests).toEqual(['PUT /v1/items', 'POST /v1/events', 'POST /v1/events']);
  }, 60_000);
});
