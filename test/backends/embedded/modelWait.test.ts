import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuthorization } from '../../../src/auth/authorization.js';
import { createEmbeddedBackend } from '../../../src/backends/embedded/index.js';
import { SqliteKeyStore } from '../../../src/backends/embedded/keys/sqliteStore.js';
import { addUser } from '../../../src/backends/embedded/keys/users.js';
import { openEmbeddedRecs } from '../../../src/backends/embedded/openRecs.js';
import { type EmbeddedRecs } from '../../../src/backends/embedded/recs.js';
import { DB_FILE } from '../../../src/backends/embedded/store.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { TEST_COST, tempDir } from '../../helpers/stores.js';

const root = basicAuthorization('root', 'root-password');
const RECORD = 'mutation($events: [EventInput!]!) { recordEvents(events: $events) { accepted } }';
const events = [1, 2].map((itemId) => ({ kind: 'VIEW', itemId: 31000000 + itemId, sessionId: 'held', time: new Date(Date.now() - 60_000).toISOString() }));

/** A gateway on a SQLite store in `dir` whose model takes its own calls only once `held` settles. */
async function heldModelGateway(dir: string, held: Promise<void>, modelWaitMs: number): Promise<{ recs: EmbeddedRecs; gateway: TestGateway }> {
  const keys = new SqliteKeyStore(path.join(dir, 'keys.db'));
  await keys.migrate();
  await addUser(keys, { username: 'root', password: 'root-password', isAdmin: true }, TEST_COST);
  const recs = await openEmbeddedRecs({ dataDir: dir, followIntervalMs: 0 });
  // as a reload of millions of events would keep the model
  const apply = recs.applyOwnEvents.bind(recs);
  recs.applyOwnEvents = async (rows) => {
    await held;
    return apply(rows);
  };
  return { recs, gateway: await startTestGateway(createEmbeddedBackend(keys, recs, {}, { modelWaitMs })) };
}

describe('a stored call while the model is busy (a reload, the filing after start-up)', () => {
  const data = tempDir('recs-model-wait-');
  let recs: EmbeddedRecs;
  let gateway: TestGateway;
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  beforeAll(async () => {
    ({ recs, gateway } = await heldModelGateway(data.dir, held, 200));
  });
  afterAll(async () => {
    release();
    await gateway?.stop();
    data.remove();
  });

  it('is answered as accepted once the wait is over, stored, and taken by the model when it is free', async () => {
    const answer = await fetch(`${gateway.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: root },
      body: JSON.stringify({ query: RECORD, variables: { events } }),
      // without the bound the answer waits for the model, here for ever
      signal: AbortSignal.timeout(5_000),
    });
    expect(await answer.json()).toEqual({ data: { recordEvents: { accepted: 2 } } });
    expect(await recs.store!.counts()).toMatchObject({ events: 2 });
    expect(recs.applied.lastEventId).toBe(0);
    release();
    for (let i = 0; i < 100 && recs.applied.lastEventId < 2; i++) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(recs.applied.lastEventId).toBe(2);
  });
});

describe('a stored call kept from the write lock by another process while the model is busy (an import\'s move, then its reload)', () => {
  /** The call's whole wait: long beside a loaded machine's scheduling delays. */
  const WAIT = 3_000;
  const data = tempDir('recs-model-wait-lock-');
  let gateway: TestGateway;
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  beforeAll(async () => {
    ({ gateway } = await heldModelGateway(data.dir, held, WAIT));
  });
  afterAll(async () => {
    release();
    await gateway?.stop();
    data.remove();
  });

  it('counts the time spent on the lock in its wait: answered once stored, not a whole wait after', async () => {
    const other = new Database(path.join(data.dir, DB_FILE));
    other.exec('BEGIN IMMEDIATE');
    const answer = fetch(`${gateway.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: root },
      body: JSON.stringify({ query: RECORD, variables: { events } }),
      signal: AbortSignal.timeout(10 * WAIT),
    });
    // the lock is held for the call's whole wait, and let go
    await new Promise((resolve) => setTimeout(resolve, WAIT));
    other.exec('ROLLBACK');
    other.close();
    const released = Date.now();
    expect(await (await answer).json()).toEqual({ data: { recordEvents: { accepted: 2 } } });
    // counted from the store's answer, the call would wait WAIT more; two thirds of it is slack for a loaded machine
    expect(Date.now() - released).toBeLessThan((2 * WAIT) / 3);
  });
});
