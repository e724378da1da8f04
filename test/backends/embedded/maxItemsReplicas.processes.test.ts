import { afterAll, describe, expect, it } from 'vitest';
import { createKey, firstAdmin, gql, startServe } from '../../helpers/processes.js';
import { sharedRecsStoreKinds } from '../../helpers/stores.js';
import { pool } from '../../helpers/pool.js';
import { itemsFrom } from '../../helpers/liveEvents.js';
import { openRecsData } from '../../../src/backends/embedded/loadFromStore.js';
import type { RecsSource } from '../../../src/backends/embedded/liveStore.js';

/**
 * RECS_MAX_ITEMS across replicas: two `recs-gateway serve` processes on one store, neither
 * following the other (RECS_FOLLOW_INTERVAL_MS=0, so each one's own check counts only what it
 * took itself: the worst case of a follow interval, made certain rather than left to timing), both
 * sent calls of new item ids at once. The store's write is what holds the cap: it never holds
 * more than RECS_MAX_ITEMS items, every refused call is BAD_USER_INPUT and left nothing, and every
 * accepted call is there whole. Bounded in requests (CALLS a process) and in time (the test's timeout).
 */
const MAX_ITEMS = 100;
/** Items the store holds before the gateways start (records): the gateways start in store mode, not with the demo shop. */
const SEEDED = 10;
const IDS_A_CALL = 10;
/** Calls a process: together they name 3 * CALLS * IDS_A_CALL new ids, past the room left (90) on either process alone. */
const CALLS = 12;
const IN_FLIGHT = 3;

const setups = sharedRecsStoreKinds('recs-maxitems', { REDIS_URL: '', OTEL_EXPORTER_OTLP_ENDPOINT: '', RECS_FOLLOW_INTERVAL_MS: '0', RECS_MAX_ITEMS: String(MAX_ITEMS) });

/** The distinct items the store holds, named by a record or an event, read by a connection of its own. */
async function storedItems(source: RecsSource): Promise<{ records: Set<number>; events: Map<number, number> }> {
  const store = (await openRecsData(source))!;
  try {
    const records = new Set<number>();
    const events = new Map<number, number>();
    await store.snapshot({
      record: (json) => records.add((JSON.parse(json) as { itemId: number }).itemId),
      event: (row) => events.set(row[2], (events.get(row[2]) ?? 0) + 1),
    });
    return { records, events };
  } finally {
    await store.close();
  }
}

type Outcome = { ok: true; ids: number[] } | { ok: false; ids: number[]; code: string | undefined; message: string | undefined };

describe.each(setups)('RECS_MAX_ITEMS held by the $name store across two gateway processes', (setup) => {
  const cleanups: (() => Promise<unknown>)[] = [];
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c();
  });

  it('calls of new ids sent to both at once: the store never holds more than the cap, refusals keep nothing, acceptances keep all', async () => {
    const store = await setup.open();
    cleanups.push(store.dispose);
    const seed = (await openRecsData(store.source))!;
    try {
      await seed.upsertItems(itemsFrom(1, SEEDED));
    } finally {
      await seed.close();
    }
    const one = await startServe(store.env(0));
    cleanups.push(() => one.stop());
    const two = await startServe(store.env(1));
    cleanups.push(() => two.stop());
    const auth = await createKey(one.url, firstAdmin(one), 'maxitems');

    const ids = (from: number): number[] => Array.from({ length: IDS_A_CALL }, (_, i) => from + i);
    const outcome = (sent: number[], field: string, body: Awaited<ReturnType<typeof gql>>['body']): Outcome => {
      const answer = body.data?.[field];
      if (answer) return { ok: true, ids: sent };
      const error: { message?: string; extensions?: { code?: string } } | undefined = body.errors?.[0];
      return { ok: false, ids: sent, code: error?.extensions?.code, message: error?.message };
    };
    const now = Date.now() - 60_000;
    // one process takes events, the other records; each call names IDS_A_CALL ids new to both
    const eventCalls = Array.from({ length: CALLS }, (_, c) => async (): Promise<Outcome> => {
      const sent = ids(100_000 + c * IDS_A_CALL);
      const events = sent.flatMap((itemId, i) => [1, 2].map((k) => ({ kind: 'VIEW', itemId, sessionId: `one-${c}-${i}`, time: new Date(now + k).toISOString() })));
      const { body } = await gql(one.url, 'mutation($e:[EventInput!]!){ recordEvents(events:$e){ accepted } }', { e: events }, { authorization: auth });
      return outcome(sent, 'recordEvents', body);
    });
    const itemCalls = Array.from({ length: CALLS }, (_, c) => async (): Promise<Outcome> => {
      const sent = ids(200_000 + c * IDS_A_CALL);
      const { body } = await gql(two.url, 'mutation($i:[ItemInput!]!){ upsertItems(items:$i){ upserted } }',
        { i: sent.map((itemId) => ({ itemId, name: `thing ${itemId}`, categoryPath: 'Home/Lamps' })) }, { authorization: auth });
      return outcome(sent, 'upsertItems', body);
    });
    const [fromOne, fromTwo] = await Promise.all([pool(CALLS, IN_FLIGHT, (c) => eventCalls[c]!()), pool(CALLS, IN_FLIGHT, (c) => itemCalls[c]!())]);

    const { records, events } = await storedItems(store.source);
    const held = new Set([...records, ...events.keys()]);
    const accepted = [...fromOne, ...fromTwo].filter((o) => o.ok);
    const refused = [...fromOne, ...fromTwo].filter((o): o is Extract<Outcome, { ok: false }> => !o.ok);
    expect(held.size).toBeLessThanOrEqual(MAX_ITEMS);
    // every call names IDS_A_CALL new ids, so exactly the room's worth is taken, and every other call refused
    expect(accepted.length).toBe((MAX_ITEMS - SEEDED) / IDS_A_CALL);
    expect(held.size).toBe(MAX_ITEMS);
    expect(refused.map((o) => o.code)).toEqual(refused.map(() => 'BAD_USER_INPUT'));
    for (const o of refused) expect(o.message).toMatch(/^(events|items): the call names 10 items the (recommender|store) does not hold yet, and it holds \d+ of at most 100 \(RECS_MAX_ITEMS\).*: nothing was kept$/);
    // a process refuses on its own only where what it took and has under way fill the room: neither
    // can take the whole room while the other takes some, so the store refused some
    expect(refused.some((o) => /the store does not hold/.test(o.message ?? ''))).toBe(true);
    for (const o of refused) for (const id of o.ids) expect([records.has(id), events.has(id)]).toEqual([false, false]);
    for (const o of fromOne.filter((x) => x.ok)) for (const id of o.ids) expect(events.get(id)).toBe(2);
    for (const o of fromTwo.filter((x) => x.ok)) for (const id of o.ids) expect(records.has(id)).toBe(true);
    // both processes took part: neither refused everything while the other took the room
    expect(refused.some((o) => o.ids[0]! < 200_000) && refused.some((o) => o.ids[0]! >= 200_000)).toBe(true);
  }, 240_000);
});
