import { DEFAULT_MAX_ITEMS } from '../../config/defaults.js';
import { badUserInput, ErrorCode, forbidden, GatewayError } from '../../errors.js';
import { checkEvents, checkItems, ingestForbidden } from '../../ports/ingest.js';
import type { Backend, EventInputModel, IngestService, ItemModel, PrincipalModel, RecordEventsResultModel, RecsService } from '../../ports/backend.js';
import type { RecEvent } from '../../recommender/index.js';
import { EmbeddedKeyService, type EmbeddedKeyServiceOptions } from './keys/keyService.js';
import type { KeyStore } from './keys/store.js';
import { StoreBusyError, StoreFullError } from './dataFiles.js';
import { EmbeddedRecs } from './recs.js';
import { withoutRepeatedIds } from './liveStore.js';

/** Seconds a client is asked to wait before sending again a call the store was too busy to take. */
export const STORE_BUSY_RETRY_AFTER_S = 1;

/**
 * A write the store refused as busy (another process held its write lock too long): nothing of
 * the call was kept, so the client is told to send it again (UPSTREAM_UNAVAILABLE with
 * retryAfter; REST: 503 and Retry-After) rather than given a masked INTERNAL_SERVER_ERROR. One it
 * refused as past RECS_MAX_ITEMS (every process's calls counted, see ItemCap) is BAD_USER_INPUT,
 * as EmbeddedIngest.withRoom's refusal.
 */
async function storing<T>(field: 'events' | 'items', write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (error) {
    if (error instanceof StoreFullError) {
      const { fresh, held, maxItems } = error;
      throw badUserInput(
        `${field}: the call names ${fresh} ${fresh === 1 ? 'item' : 'items'} the store does not hold yet, and it holds ${held} of at most ${maxItems} (RECS_MAX_ITEMS), every process's calls counted: nothing was kept`,
        field,
      );
    }
    if (!(error instanceof StoreBusyError)) throw error;
    throw new GatewayError(ErrorCode.UPSTREAM_UNAVAILABLE, `The recommendation store is busy: another process holds its write lock; nothing of the call was kept, retry in ${STORE_BUSY_RETRY_AFTER_S} s`, {
      service: 'recommendations', retryAfter: STORE_BUSY_RETRY_AFTER_S, cause: error,
    });
  }
}

function requireAdmin(principal: PrincipalModel): void {
  if (!principal.user.isAdmin) throw ingestForbidden();
}

/** The stored form of an event: the recommender's own spelling. */
export function toRecEvent(e: EventInputModel): RecEvent {
  return { kind: e.kind === 'PURCHASE' ? 'purchase' : 'view', itemId: e.itemId, session: e.sessionId, user: e.userId, orderId: e.orderId, time: e.time, eventId: e.eventId ?? null };
}

/**
 * What EmbeddedIngest needs of the recommender: an EmbeddedRecs, or (benchmarks of the API alone)
 * anything that applies events and records in memory, without a store.
 */
export type LiveRecs = Pick<EmbeddedRecs, 'applyEvents' | 'applyItems' | 'catalog'> &
  Partial<Pick<EmbeddedRecs, 'store' | 'applyOwnEvents' | 'applyOwnItems' | 'itemCount' | 'newItemCount'>>;

/** What EmbeddedIngest is told at start-up. */
export interface EmbeddedIngestOptions {
  /** RECS_MAX_ITEMS: distinct items the recommender may hold; a call that would add more is refused. Default DEFAULT_MAX_ITEMS. */
  maxItems?: number;
  /**
   * The longest a call's answer waits, storing included, for this process's model to take it
   * (the serve command gives REQUEST_DEADLINE_MS); default MODEL_WAIT_MS. A store kept busy by
   * another writer's lock (an import's move) spends this budget first: counted from the store's
   * answer, a call waited for the lock and then the whole wait again (17 s for a 10 s deadline).
   */
  modelWaitMs?: number;
}

/** EmbeddedIngestOptions.modelWaitMs' default: REQUEST_DEADLINE_MS' default. */
export const MODEL_WAIT_MS = 10_000;

/**
 * Waits for `work` at most `ms`. A stored call is answered once the model has it, which takes
 * milliseconds, except while the model is being filed after start-up or reloaded whole (an
 * import replacing data, the first records replacing the demo shop): then it waits for that, 30 s
 * on a store of 3 million events (a probe's measure). Its events are durable already: an answer
 * held past a client's or a balancer's timeout would have it sent again and stored twice. So past
 * `ms` it is answered as accepted, and the model applies it when the reload ends (catchUp goes on;
 * race() has taken charge of its settling, so a late failure is no unhandled rejection).
 */
async function awaitAtMost(work: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const elapsed = new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)));
  try {
    await Promise.race([work, elapsed]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Events and records into the embedded recommender: the whole call is checked, committed in one
 * transaction to the recommender's store (durable when this resolves: SQLite synchronous=FULL, or
 * a PostgreSQL commit), then applied to this process's model (waited for at most modelWaitMs: see
 * awaitAtMost), then answered. Other processes pick
 * the rows up by following the store. Without a store (tests, benchmarks) it is applied in memory only.
 */
export class EmbeddedIngest implements IngestService {
  private readonly maxItems: number;
  private readonly modelWaitMs: number;

  constructor(private readonly recs: LiveRecs, options: EmbeddedIngestOptions = {}) {
    this.maxItems = options.maxItems ?? DEFAULT_MAX_ITEMS;
    this.modelWaitMs = options.modelWaitMs ?? MODEL_WAIT_MS;
  }

  /** New items that calls under way may add (reserve): counted against maxItems until they end. */
  private reserved = 0;

  /**
   * Refuses a call whose new item ids would take the recommender past maxItems: an id once named
   * is kept (about 1.1 KB) for as long as the process runs, so a client inventing ids would grow
   * it without end. Checked before anything is stored, against what calls under way may add too
   * (their ids' count, or where that comes near the cap the ids new to the recommender), so that
   * calls running at once cannot pass it together; the reservation is held until `call` ends.
   * The fast first refusal: processes sharing a store learn each other's items a follow interval
   * late, so the store's write checks the cap again, against every process's (ItemCap).
   */
  private async withRoom<T>(field: 'events' | 'items', ids: readonly number[], call: () => Promise<T>): Promise<T> {
    const { itemCount, newItemCount } = this.recs;
    if (itemCount === undefined || newItemCount === undefined) return call();
    let held = ids.length;
    if (itemCount + this.reserved + held > this.maxItems) {
      held = newItemCount.call(this.recs, ids);
      if (held > 0 && itemCount + this.reserved + held > this.maxItems) {
        const pending = this.reserved > 0 ? `, and calls under way may add ${this.reserved}` : '';
        throw badUserInput(
          `${field}: the call names ${held} ${held === 1 ? 'item' : 'items'} the recommender does not hold yet, and it holds ${itemCount} of at most ${this.maxItems} (RECS_MAX_ITEMS)${pending}: nothing was kept`,
          field,
        );
      }
    }
    this.reserved += held;
    try {
      return await call();
    } finally {
      this.reserved -= held;
    }
  }

  /** A call stored (`write`), then taken by this process's model (`apply`): waited for modelWaitMs in all, storing included; what write gave. */
  private async storeThenApply<T>(field: 'events' | 'items', write: () => Promise<T>, apply: (stored: T) => Promise<void>): Promise<T> {
    const deadline = Date.now() + this.modelWaitMs;
    const stored = await storing(field, write);
    await awaitAtMost(apply(stored), deadline - Date.now());
    return stored;
  }

  /**
   * Without a store (tests, benchmarks), the eventIds this process has taken, kept as a store
   * keeps them (RecsDataStore.appendEvents), for as long as it runs.
   */
  private readonly eventIds = new Set<string>();

  async recordEvents(principal: PrincipalModel, events: readonly EventInputModel[]): Promise<RecordEventsResultModel> {
    requireAdmin(principal);
    checkEvents(events);
    return this.withRoom('events', events.map((e) => e.itemId), async () => {
      const recEvents = events.map(toRecEvent);
      const { store, applyOwnEvents } = this.recs;
      // the items of the events stored: a duplicate left out names none (its item was counted when it was stored)
      let storedItems: number[];
      if (!store || !applyOwnEvents) {
        const fresh = withoutRepeatedIds(recEvents, this.eventIds);
        this.recs.applyEvents(fresh);
        storedItems = fresh.map((e) => e.itemId);
      } else {
        const rows = await this.storeThenApply('events', () => store.appendEvents(recEvents, { maxItems: this.maxItems }), (stored) => applyOwnEvents.call(this.recs, stored));
        storedItems = rows.map((row) => row[2]);
      }
      const catalog = this.recs.catalog;
      const missing = new Set<number>();
      for (const itemId of storedItems) if (catalog.get(itemId) === undefined) missing.add(itemId);
      return { accepted: events.length, duplicates: events.length - storedItems.length, itemsWithoutRecord: missing.size };
    });
  }

  async upsertItems(principal: PrincipalModel, items: Parameters<IngestService['upsertItems']>[1]): Promise<{ upserted: number }> {
    requireAdmin(principal);
    checkItems(items);
    // Stored, an empty call would take a new item sequence number: in demo mode every process
    // following the store reloads whole on it, building the demo shop's model on its event loop.
    if (items.length === 0) return { upserted: 0 };
    const records = lastOfEachItem(items);
    return this.withRoom('items', records.map((item) => item.itemId), async () => {
      const { store, applyOwnItems } = this.recs;
      if (!store || !applyOwnItems) this.recs.applyItems(records);
      else await this.storeThenApply('items', () => store.upsertItems(records, { maxItems: this.maxItems }), (seq) => applyOwnItems.call(this.recs, records, seq));
      return { upserted: records.length };
    });
  }
}

/**
 * A call's records with one per item: the last sent of an itemId, where it stands. A record sent
 * twice in one call replaces itself, as a record sent again in a later call does, so the call
 * stores one and `upserted` counts the items stored, as `duplicates` counts the events a call
 * repeats (the probe's two records of 54952 were answered `upserted: 2`, one stored).
 */
function lastOfEachItem(items: readonly ItemModel[]): readonly ItemModel[] {
  const last = new Map<number, number>();
  for (let i = 0; i < items.length; i++) last.set(items[i]!.itemId, i);
  if (last.size === items.length) return items;
  return items.filter((item, i) => last.get(item.itemId) === i);
}

/** The in-process backend over a key store and a recommender it takes ownership of. */
export function createEmbeddedBackend(
  store: KeyStore,
  recs: RecsService & { close(): Promise<void> },
  keyOptions: EmbeddedKeyServiceOptions = {},
  ingestOptions: EmbeddedIngestOptions = {},
): Backend {
  const live = recs instanceof EmbeddedRecs ? recs : null;
  return {
    keys: new EmbeddedKeyService(store, keyOptions),
    recs,
    ingest: live !== null ? new EmbeddedIngest(live, ingestOptions) : unsupportedIngest,
    ...(live !== null ? {
      recommender: () => live.state(),
      onDataChange: (listener: () => void) => live.onChange(listener),
      recsNow: { item: (itemId: number) => live.catalog.get(itemId) ?? null, recommend: (kind, anchorId) => live.recommendNow(kind, anchorId) },
      recordsAreValues: true,
    } satisfies Partial<Backend> : {}),
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
