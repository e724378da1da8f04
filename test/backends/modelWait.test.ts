import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuthorization } from '../../src/auth/authorization.js';
import { createEmbeddedBackend } from '../../src/backends/embedded/index.js';
import { SqliteKeyStore } from '../../src/backends/embedded/keys/sqliteStore.js';
import { addUser } from '../../src/backends/embedded/keys/users.js';
import { openEmbeddedRecs, type EmbeddedRecs } from '../../src/backends/embedded/recs.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { TEST_COST, tempDir } from '../helpers/stores.js';

const root = basicAuthorization('root', 'root-password');
const RECORD = 'mutation($events: [EventInput!]!) { recordEvents(events: $events) { accepted } }';
const events = [1, 2].map((itemId) => ({ kind: 'VIEW', itemId: 31000000 + itemId, sessionId: 'held', time: new Date(Date.now() - 60_000).toISOString() }));

describe('a stored call while the model is busy (a reload, the filing after start-up)', () => {
  const data = tempDir('recs-model-wait-');
  let recs: EmbeddedRecs;
  let gateway: TestGateway;
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  beforeAll(async () => {
    const keys = new SqliteKeyStore(path.join(data.dir, 'keys.db'));
    await keys.migrate();
    await addUser(keys, { username: 'root', password: 'root-password', isAdmin: true }, TEST_COST);
    recs = await openEmbeddedRecs({ dataDir: data.dir, followIntervalMs: 0 });
    // the model takes the call only once released: as a reload of millions of events would keep it
    const apply = recs.applyOwnEvents.bind(recs);
    recs.applyOwnEvents = async (rows) => {
      await held;
      return apply(rows);
    };
    gateway = await startTestGateway(createEmbeddedBackend(keys, recs, {}, { modelWaitMs: 200 }));
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
