import { parseItemRecord } from '../../src/model/itemRecord.js';
import type { EventInputModel, ItemModel, PrincipalModel } from '../../src/ports/backend.js';
import { openRecsData } from '../../src/backends/embedded/loadFromStore.js';
import type { RecsSource } from '../../src/backends/embedded/liveStore.js';

/** A principal as the resolvers pass it: an administrator, or not. */
export function principal(isAdmin: boolean): PrincipalModel {
  return {
    user: { id: '00000000-0000-4000-8000-000000000001', username: isAdmin ? 'admin' : 'shopper', domain: null, isAdmin },
    authenticatedBy: 'PASSWORD',
    keyId: null,
    credentialId: isAdmin ? 'a'.repeat(64) : 'b'.repeat(64),
    authorization: '',
  };
}

/** `times` visits, each viewing `anchor` then `other` (session ids from `firstSession`). */
export function coViews(anchor: number, other: number, times: number, firstSession: number, time = Date.now() - 60_000): EventInputModel[] {
  const events: EventInputModel[] = [];
  for (let s = 0; s < times; s++) {
    const sessionId = `visit-${firstSession + s}`;
    events.push(
      { kind: 'VIEW', itemId: anchor, sessionId, userId: null, orderId: null, time: time + s * 10 },
      { kind: 'VIEW', itemId: other, sessionId, userId: null, orderId: null, time: time + s * 10 + 5 },
    );
  }
  return events;
}

/** Views and purchases by `shoppers` shoppers, `daysAgo` before now, of the item pairs given in turn; distinct ids by `tag`. */
export function shopping(tag: string, daysAgo: number, pairs: [number, number][], shoppers = 40): EventInputModel[] {
  const t0 = Date.now() - daysAgo * 86_400_000;
  const events: EventInputModel[] = [];
  for (let s = 0; s < shoppers; s++) {
    const [a, b] = pairs[s % pairs.length]!;
    const sessionId = `${tag}-visit-${s}`;
    const time = t0 + s * 60_000;
    events.push(
      { kind: 'VIEW', itemId: a, sessionId, userId: null, orderId: null, time },
      { kind: 'VIEW', itemId: b, sessionId, userId: null, orderId: null, time: time + 1_000 },
      // the same shoppers buy across the window's edge: their histories hold old and new purchases
      { kind: 'PURCHASE', itemId: s % 2 === 0 ? a : b, sessionId, userId: `shopper-${s % 7}`, orderId: `${tag}-order-${s}`, time: time + 2_000 },
    );
  }
  return events;
}

/** Item records with ids `from`..`from + n - 1`, all in one category. */
export function itemsFrom(from: number, n: number, category = 'Home/Lamps'): ItemModel[] {
  return Array.from({ length: n }, (_, i) => parseItemRecord({ itemId: from + i, name: `thing ${from + i}`, categoryPath: category }));
}

/**
 * Stores `items` as the catalogue of the store at `source`, before a gateway opens it: one that opens
 * it then loads them, rather than building the demo shop (seconds) for a test whose subject is elsewhere.
 */
export async function storeCatalogue(source: RecsSource, items: readonly ItemModel[]): Promise<void> {
  const store = (await openRecsData(source))!;
  try {
    await store.upsertItems(items);
  } finally {
    await store.close();
  }
}

/**
 * Sends events over GraphQL as a shop would: `recordEvents` with an administrator's Authorization.
 * Needs the schema of issue 20's API (the live-api branch); throws with the errors otherwise.
 */
export async function sendEvents(url: string, adminAuth: string, events: readonly EventInputModel[]): Promise<{ accepted: number }> {
  const response = await fetch(`${url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: adminAuth },
    body: JSON.stringify({
      query: 'mutation($e:[EventInput!]!){ recordEvents(events:$e){ accepted } }',
      variables: {
        e: events.map((e) => ({
          kind: e.kind, itemId: e.itemId,
          ...(e.sessionId === null ? {} : { sessionId: e.sessionId }),
          ...(e.userId === null ? {} : { userId: e.userId }),
          ...(e.orderId === null ? {} : { orderId: e.orderId }),
          time: new Date(e.time).toISOString(),
        })),
      },
    }),
  });
  const body = (await response.json()) as { data?: { recordEvents?: { accepted: number } } | null; errors?: unknown[] };
  if (body.data?.recordEvents === undefined) throw new Error(`recordEvents failed (${response.status}): ${JSON.stringify(body.errors)}`);
  return body.data.recordEvents;
}

/** How many events the store at `source` holds, read by a connection of its own. */
export async function storedEvents(source: RecsSource): Promise<number> {
  const store = (await openRecsData(source))!;
  try {
    return (await store.counts()).events;
  } finally {
    await store.close();
  }
}
