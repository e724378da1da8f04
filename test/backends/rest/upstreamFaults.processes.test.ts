import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  FIRST_ITEM, PHONE, quantile, report, sleep, startFaultProxy, startRestGateway, startUpstream,
  type FaultProxy, type RestGateway, type TimedResponse, type Upstream,
} from '../../helpers/harness.js';
import { ManualClock } from '../../helpers/clock.js';
import { pool } from '../../helpers/pool.js';

// Faults between the gateway under test (REST mode, in-process) and a real upstream process,
// injected by proxies of the test's own; the proxies count what the upstream would see.

let upstream: Upstream;
beforeAll(async () => {
  upstream = await startUpstream();
});
afterAll(async () => {
  await upstream?.stop();
});

const running: { close?(): Promise<void>; stop?(): Promise<void> }[] = [];
afterEach(async () => {
  // the gateway first: it holds connections to the proxies
  while (running.length > 0) {
    const next = running.pop()!;
    await (next.stop ?? next.close)!.call(next);
  }
});

interface Setup {
  keys: FaultProxy;
  recs: FaultProxy;
  gw: RestGateway;
}

async function setup(env: Record<string, string> = {}, now?: () => number): Promise<Setup> {
  const keys = await startFaultProxy(upstream.url);
  running.push(keys);
  const recs = await startFaultProxy(upstream.url);
  running.push(recs);
  const gw = await startRestGateway({ keysUrl: keys.url, recsUrl: recs.url, recsApiKey: upstream.gatewayKey, env, ...(now ? { now } : {}) });
  running.push(gw);
  return { keys, recs, gw };
}

const ITEM = 'query($id: ItemId!) { item(itemId: $id) { itemId name } }';
const codeOf = (r: TimedResponse): string | undefined => r.body.errors?.[0]?.extensions?.code;

async function healthzTimes(url: string, n: number): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const started = performance.now();
    const response = await fetch(`${url}/healthz`);
    expect(response.status).toBe(200);
    await response.text();
    times.push(performance.now() - started);
  }
  return times;
}

describe('an upstream that does not answer', () => {
  const DEADLINE = 1500;
  /**
   * An answer's bound: past the deadline by the machine's delays (a loaded CI host added 1.2 s),
   * and before the slow upstream's 5 s, so that an answer that waited for the upstream fails it.
   */
  const BOUND = 3 * DEADLINE;

  it.each([
    ['blackholed', { kind: 'blackhole' } as const],
    ['slow (answers after 5 s)', { kind: 'delay', ms: 5000 } as const],
    ['trickling its body', { kind: 'trickle', everyMs: 200 } as const],
  ])('recommendations %s: UPSTREAM_UNAVAILABLE within the deadline; /healthz stays fast', async (name, fault) => {
    const { recs, gw } = await setup({ REQUEST_DEADLINE_MS: String(DEADLINE) });
    // a warm credential: only the recommendation service is in trouble
    const warm = await gw.gql(ITEM, { id: PHONE }, upstream.alice.key);
    expect(warm.body.data?.item).toMatchObject({ itemId: PHONE });
    recs.fault = fault;

    const pending = Array.from({ length: 10 }, (_, i) => gw.gql(ITEM, { id: FIRST_ITEM + 100 + i }, upstream.alice.key));
    await sleep(100);
    const health = await healthzTimes(gw.url, 20);
    const answers = await Promise.all(pending);
    for (const answer of answers) {
      expect(codeOf(answer)).toBe('UPSTREAM_UNAVAILABLE');
      expect(answer.body.data?.item).toBeNull();
      expect(answer.ms).toBeLessThan(BOUND);
    }
    const times = answers.map((a) => a.ms);
    report(`deadline, recommendations ${name}`, {
      deadlineMs: DEADLINE, maxMs: Math.max(...times), minMs: Math.min(...times), healthzP50Ms: quantile(health, 0.5), healthzMaxMs: Math.max(...health),
    });
    expect(quantile(health, 0.5)).toBeLessThan(50);
    expect(Math.max(...health)).toBeLessThan(500);
  });

  it('key service blackholed: a new credential gets 502 UPSTREAM_UNAVAILABLE (not 401) within the deadline', async () => {
    const { keys, gw } = await setup({ REQUEST_DEADLINE_MS: String(DEADLINE) });
    keys.fault = { kind: 'blackhole' };
    const pending = gw.gql('{ viewer { id } }', {}, upstream.bob.basic);
    const health = await healthzTimes(gw.url, 20);
    const answer = await pending;
    expect(answer.status).toBe(502);
    expect(codeOf(answer)).toBe('UPSTREAM_UNAVAILABLE');
    expect(answer.ms).toBeLessThan(BOUND);
    expect(keys.count('GET', '/api/v1/apikey')).toBe(1);
    report('deadline, key service blackholed', { deadlineMs: DEADLINE, ms: answer.ms, healthzMaxMs: Math.max(...health) });
    expect(Math.max(...health)).toBeLessThan(500);
  });
});

describe('a 503 storm', () => {
  it('GETs: the upstream sees at most 1.2 x the client requests + 3', async () => {
    // a breaker that never opens, so the retry budget alone is measured
    const { recs, keys, gw } = await setup({ BREAKER_FAILURES: '1000' });
    await gw.gql('{ viewer { id } }', {}, upstream.alice.key);
    recs.fault = { kind: 'status', status: 503 };
    keys.fault = { kind: 'status', status: 503 };
    const clients = 200;
    const answers = await pool(clients, 10, (i) => gw.gql(ITEM, { id: FIRST_ITEM + i }, upstream.alice.key));
    for (const answer of answers) expect(codeOf(answer)).toBe('UPSTREAM_UNAVAILABLE');
    const recsCalls = recs.count('GET');
    expect(recsCalls).toBeGreaterThanOrEqual(clients);
    expect(recsCalls).toBeLessThanOrEqual(1.2 * clients + 3);

    // key listings are GETs of the other upstream, with a budget of their own
    const before = keys.count('GET');
    const lists = await pool(100, 10, () => gw.gql('{ apiKeys { id } }', {}, upstream.alice.key));
    for (const list of lists) expect(codeOf(list)).toBe('UPSTREAM_UNAVAILABLE');
    const keyCalls = keys.count('GET') - before;
    expect(keyCalls).toBeLessThanOrEqual(1.2 * 100 + 3);
    report('503 storm (GET)', {
      clientRequests: clients, recsUpstreamCalls: recsCalls, ratio: recsCalls / clients,
      keyListRequests: 100, keyUpstreamCalls: keyCalls, keyRatio: keyCalls / 100,
    });
  });

  it.each([
    ['503', { kind: 'status', status: 503 } as const],
    ['connection reset', { kind: 'reset' } as const],
  ])('POST and DELETE are never retried (%s)', async (name, fault) => {
    const { keys, gw } = await setup({ BREAKER_FAILURES: '1000' });
    await gw.gql('{ viewer { id } }', {}, upstream.alice.key); // the credential is now cached
    keys.fault = fault;
    const n = 30;
    const creates = await pool(n, 5, () =>
      gw.gql('mutation { createApiKey(input: {}) { id } }', {}, upstream.alice.key),
    );
    const deletes = await pool(n, 5, () =>
      gw.gql('mutation($id: ID!) { deleteApiKey(id: $id) { ok } }', { id: randomUUID() }, upstream.alice.key),
    );
    for (const answer of [...creates, ...deletes]) expect(codeOf(answer)).toBe('UPSTREAM_UNAVAILABLE');
    expect(keys.count('POST')).toBe(n);
    expect(keys.count('DELETE')).toBe(n);
    report(`upstream ${name} on POST/DELETE`, { creates: n, upstreamPosts: keys.count('POST'), deletes: n, upstreamDeletes: keys.count('DELETE') });
  });

  it('with the default breaker the storm costs the upstream far fewer calls', async () => {
    const { recs, gw } = await setup({ BREAKER_OPEN_MS: '60000' });
    await gw.gql('{ viewer { id } }', {}, upstream.alice.key);
    recs.fault = { kind: 'status', status: 503 };
    const clients = 200;
    await pool(clients, 10, (i) => gw.gql(ITEM, { id: FIRST_ITEM + i }, upstream.alice.key));
    expect(recs.count('GET')).toBeLessThan(30);
    report('503 storm with breaker', { clientRequests: clients, upstreamCalls: recs.count('GET') });
  });
});

describe('the circuit breaker', () => {
  it('opens, rejects in under 5 ms without calling the upstream, probes, and closes', async () => {
    const OPEN_MS = 1000;
    // the breaker's time moves by hand: 250 timed rejections on a busy machine may take longer
    // than OPEN_MS, and a probe would then slip through while the test counts calls
    const clock = new ManualClock();
    const { recs, gw } = await setup({ BREAKER_FAILURES: '5', BREAKER_OPEN_MS: String(OPEN_MS) }, clock.now);
    const state = (): string | undefined => gw.backend.breakerState?.().recommendations;
    await gw.gql('{ viewer { id } }', {}, upstream.alice.key);
    recs.fault = { kind: 'status', status: 503 };
    let id = FIRST_ITEM;
    for (let i = 0; i < 10 && state() !== 'open'; i++) await gw.gql(ITEM, { id: id++ }, upstream.alice.key);
    expect(state()).toBe('open');

    // open: answered without the upstream; timed in the backend and over HTTP
    const calls = recs.count();
    const backendTimes: number[] = [];
    for (let i = 0; i < 200; i++) {
      const started = performance.now();
      const error = await gw.backend.recs.getItems([id++]).then(() => null, (e: unknown) => e);
      backendTimes.push(performance.now() - started);
      expect(error).toMatchObject({ code: 'UPSTREAM_UNAVAILABLE' });
    }
    const httpTimes: number[] = [];
    for (let i = 0; i < 50; i++) {
      const answer = await gw.gql(ITEM, { id: id++ }, upstream.alice.key);
      expect(codeOf(answer)).toBe('UPSTREAM_UNAVAILABLE');
      httpTimes.push(answer.ms);
    }
    expect(recs.count()).toBe(calls);
    expect(quantile(backendTimes, 0.5)).toBeLessThan(5);
    // p99 is reported, bounded loosely: on a shared 2-core machine one GC pause can cost 10 ms
    expect(quantile(backendTimes, 0.99)).toBeLessThan(50);

    // a failing probe opens it again, after exactly one call
    clock.advance(OPEN_MS - 1);
    expect(state()).toBe('open');
    clock.advance(51);
    expect(state()).toBe('half-open');
    expect(codeOf(await gw.gql(ITEM, { id: id++ }, upstream.alice.key))).toBe('UPSTREAM_UNAVAILABLE');
    expect(recs.count()).toBe(calls + 1);
    expect(state()).toBe('open');

    // a succeeding probe closes it
    recs.fault = { kind: 'pass' };
    clock.advance(OPEN_MS + 50);
    const probe = await gw.gql(ITEM, { id: PHONE }, upstream.alice.key);
    expect(probe.body.data?.item).toMatchObject({ itemId: PHONE });
    expect(recs.count()).toBe(calls + 2);
    expect(state()).toBe('closed');
    const after = await gw.gql(ITEM, { id: 31000007 }, upstream.alice.key);
    expect(after.body.errors, JSON.stringify(after.body)).toBeUndefined();
    report('breaker', {
      rejectBackendP50Ms: quantile(backendTimes, 0.5), rejectBackendP99Ms: quantile(backendTimes, 0.99),
      rejectHttpP50Ms: quantile(httpTimes, 0.5), rejectHttpP99Ms: quantile(httpTimes, 0.99), upstreamCallsWhileOpen: 0,
    });
  });
});
