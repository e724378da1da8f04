import { forbidden } from '../../errors.js';
import { checkEvents, checkItems } from '../../ports/ingest.js';
import type { Backend, EventInputModel, IngestService, PrincipalModel, RecsService } from '../../ports/backend.js';
import type { RecEvent } from './events/event.js';
import { EmbeddedKeyService, type EmbeddedKeyServiceOptions } from './keys/keyService.js';
import type { KeyStore } from './keys/store.js';
import type { EmbeddedRecs } from './recs.js';

function requireAdmin(principal: PrincipalModel): void {
  if (!principal.user.isAdmin) throw forbidden('Only administrators may send events and item records');
}

/** The stored form of an event: the recommender's own spelling. */
export function toRecEvent(e: EventInputModel): RecEvent {
  return { kind: e.kind === 'PURCHASE' ? 'purchase' : 'view', itemId: e.itemId, session: e.sessionId, user: e.userId, orderId: e.orderId, time: e.time };
}

/**
 * Events and records into the embedded recommender. Stand-in until issue 20's store lands: applied
 * in memory, not yet durable or shared.
 */
export class EmbeddedIngest implements IngestService {
  constructor(private readonly recs: Pick<EmbeddedRecs, 'applyEvents' | 'applyItems' | 'catalog'>) {}

  async recordEvents(principal: PrincipalModel, events: readonly EventInputModel[]): Promise<{ accepted: number; itemsWithoutRecord: number | null }> {
    requireAdmin(principal);
    checkEvents(events);
    this.recs.applyEvents(events.map(toRecEvent));
    const catalog = this.recs.catalog;
    const missing = new Set<number>();
    for (const e of events) if (catalog.get(e.itemId) === undefined) missing.add(e.itemId);
    return { accepted: events.length, itemsWithoutRecord: missing.size };
  }

  async upsertItems(principal: PrincipalModel, items: Parameters<IngestService['upsertItems']>[1]): Promise<{ upserted: number }> {
    requireAdmin(principal);
    checkItems(items);
    this.recs.applyItems(items);
    return { upserted: items.length };
  }
}

/** The in-process backend over a key store and a recommender it takes ownership of. */
export function createEmbeddedBackend(
  store: KeyStore,
  recs: RecsService & { close(): Promise<void> } & Partial<Pick<EmbeddedRecs, 'applyEvents' | 'applyItems' | 'catalog'>>,
  keyOptions: EmbeddedKeyServiceOptions = {},
): Backend {
  const live = recs.applyEvents !== undefined && recs.applyItems !== undefined ? (recs as unknown as EmbeddedRecs) : null;
  return {
    keys: new EmbeddedKeyService(store, keyOptions),
    recs,
    ingest: live !== null ? new EmbeddedIngest(live) : unsupportedIngest,
    async check() {
      try {
        await store.countUsers();
        return { store: 'ok' };
      } catch (error) {
        return { store: `unreachable: ${(error as Error).message}` };
      }
    },
    async close() {
      await recs.close();
      await store.close();
    },
  };
}

/** For a backend whose recommender cannot learn (test doubles). */
const unsupportedIngest: IngestService = {
  recordEvents: () => Promise.reject(forbidden('This backend does not take events')),
  upsertItems: () => Promise.reject(forbidden('This backend does not take item records')),
};
