import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuthorization } from '../../src/auth/authorization.js';
import { runCli, startServe, type ServeProcess } from '../helpers/processes.js';

// /readyz answers anyone (load balancers ask it without credentials): what the recommender
// follows is said by kind, never by where it is (a path under DATA_DIR, or PostgreSQL's host,
// port and database), as a probe of the running gateway found it did; and how many events and
// items it holds (a shop's trade) only to METRICS_TOKEN's bearer or an administrator (issue 41).

const METRICS_TOKEN = 'readyz-test-metrics-token';
const COUNTS = ['items', 'events', 'itemsWithoutRecord', 'lastEventId', 'lastItemSeq'];

let dataDir: string;
let serve: ServeProcess;
beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'recs-readyz-exposure-'));
  for (const args of [['root', '--password', 'root-password', '--admin'], ['alice', '--password', 'alice-password']]) {
    const added = await runCli(['user', 'add', ...args], { DATA_DIR: dataDir });
    if (added.code !== 0) throw new Error(`user add failed: ${added.stderr}`);
  }
  serve = await startServe({ DATA_DIR: dataDir, METRICS_TOKEN });
}, 90_000);
afterAll(async () => {
  await serve?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

const readyz = async (authorization?: string) => {
  const response = await fetch(`${serve.url}/readyz`, authorization === undefined ? {} : { headers: { authorization } });
  const text = await response.text();
  return { status: response.status, text, body: JSON.parse(text) as { status: string; checks: Record<string, string>; recommender: Record<string, unknown> } };
};

describe('/readyz to a stranger', () => {
  it('names the store by kind, not by path', async () => {
    const { status, text, body } = await readyz();
    expect(status).toBe(200);
    expect(text).not.toContain(dataDir);
    expect(body.recommender.store).toBe('sqlite');
    expect(body.recommender.followError).toBeNull();
  }, 30_000);

  it('says whether it is ready and what each check found, without the counts of events and items', async () => {
    const { status, body } = await readyz();
    expect(status).toBe(200);
    expect(body).toEqual({ status: 'ready', checks: { store: 'ok', cache: 'ok', rateLimits: 'ok' }, recommender: { mode: 'demo', store: 'sqlite', followError: null } });
    // a signed-in user who is no administrator, and a wrong token, are told as much: still 200
    for (const authorization of [basicAuthorization('alice', 'alice-password'), 'Bearer not-the-metrics-token', basicAuthorization('root', 'wrong')]) {
      const answer = await readyz(authorization);
      expect([answer.status, Object.keys(answer.body.recommender).filter((key) => COUNTS.includes(key))]).toEqual([200, []]);
    }
  }, 30_000);

  it('gives the counts to the metrics token and to an administrator', async () => {
    for (const authorization of [`Bearer ${METRICS_TOKEN}`, basicAuthorization('root', 'root-password')]) {
      const { status, body } = await readyz(authorization);
      expect(status).toBe(200);
      expect(body.recommender).toMatchObject({ mode: 'demo', store: 'sqlite', itemsWithoutRecord: 0 });
      expect(body.recommender.items).toBeGreaterThan(0);
      expect(body.recommender.events).toBeGreaterThan(0);
    }
  }, 30_000);
});
