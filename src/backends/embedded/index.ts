import { DEFAULT_MAX_ITEMS } from '../../config/defaults.js';
import { badUserInput, ErrorCode, forbidden, GatewayError } from '../../errors.js';
import { checkEvents, checkItems, ingestForbidden } from '../../model/ingest.js';
import type { Backend, EventInputModel, IngestService, ItemModel, PrincipalModel, RecordEventsResultModel } from '../../ports/backend.js';
import type { Catalog, RecEvent } from '../../recommender/index.js';
import { EmbeddedKeyService, type EmbeddedKeyServiceOptions } from './keys/keyService.js';
import type { KeyStore } from './keys/store.js';
import { StoreBusyError, StoreFullError } from './dataFiles.js';
import type { EmbeddedRecs } from './recs.js';
import type { EventRow, RecsDataStore } from './liveStore.js';
import { KIND_PURCHASE } from '../../recommender/index.js';

/** Seconds a client is asked to wait before sending again a call the store was too busy to take. */
export const STORE_BUSY_RETRY_AFTER_S = 1;

/** A write the store refused as busy kept nothing, so the client is told to send it again (503,
 * Retry-After), not given a masked error; one refused as past RECS_MAX_ITEMS is BAD_USER_INPUT. */
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

/** What EmbeddedIngest needs of the recommender: the store a call is committed to, and the model that takes it. */
export type LiveRecs = Pick<EmbeddedRecs, 'applyOwnEvents' | 'applyOwnItems' | 'itemCount' | 'newItemCount'> & {
  readonly catalog: Pick<Catalog, 'get'>;
  readonly store: Pick<RecsDataStore, 'appendEvents' | 'upsertItems'> | null;
  /** How many of the items have no record, where no catalogue is held here (a serve replica asks the store). */
  withoutRecord?(itemIds: readonly number[]): Promise<number>;
};

export interface EmbeddedIngestOptions {
  /** RECS_MAX_ITEMS: distinct items the recommender may hold; a call that would add more is refused. Default DEFAULT_MAX_ITEMS. */
  maxItems?: number;
  /** The longest a call's answer waits, storing included, for this process's model; default MODEL_WAIT_MS. */
  modelWaitMs?: number;
}

/** EmbeddedIngestOptions.modelWaitMs' default: REQUEST_DEADLINE_MS' default. */
export const MODEL_WAIT_MS = 10_000;

/** Waits for `work` at most `ms`: a stored call is durable, and an answer held past a client's
 * timeout (a whole reload under way) would have it sent again and stored twice. */
async function awaitAtMost(work: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const elapsed = new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)));
  try {
    await Promise.race([work, elapsed]);
  } finally {
    clearTimeout(timer);
  }
}

/** Events and records into the embedded recommender: checked, committed to its store in one
 * transaction, applied to this process's model, then answered; other processes follow the store. */
export class EmbeddedIngest implements IngestService {
  private readonly maxItems: number;
  private readonly modelWaitMs: number;

  constructor(private readonly recs: LiveRecs, options: EmbeddedIngestOptions = {}) {
    this.maxItems = options.maxItems ?? DEFAULT_MAX_ITEMS;
    this.modelWaitMs = options.modelWaitMs ?? MODEL_WAIT_MS;
  }

  private reserved = 0;

  /** Refuses a call whose new item ids would pass maxItems (a named id is kept as long as the process
   * runs), counting what calls under way may add, so that calls at once cannot pass it together. */
  private async withRoom<T>(field: 'events' | 'items', ids: readonly number[], call: () => Promise<T>): Promise<T> {
    const { itemCount } = this.recs;
    let held = ids.length;
    if (itemCount + this.reserved + held > this.maxItems) {
      held = this.recs.newItemCount(ids);
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

  private async storeThenApply<T>(field: 'events' | 'items', write: () => Promise<T>, apply: (stored: T) => Promise<void>): Promise<T> {
    const deadline = Date.now() + this.modelWaitMs;
    const stored = await storing(field, write);
    await awaitAtMost(apply(stored), deadline - Date.now());
    return stored;
  }

  /** The store calls are committed to; a recommender that follows none takes no calls. */
  private store(): Pick<RecsDataStore, 'appendEvents' | 'upsertItems'> {
    const { store } = this.recs;
    if (store === null) throw forbidden('This backend does not take events or item records: its recommender keeps no store');
    return store;
  }

  async recordEvents(principal: PrincipalModel, events: readonly EventInputModel[]): Promise<RecordEventsResultModel> {
    requireAdmin(principal);
    checkEvents(events);
    return this.withRoom('events', events.map((e) => e.itemId), async () => {
      const recEvents = events.map(toRecEvent);
      const store = this.store();
      const rows = await this.storeThenApply('events', () => store.appendEvents(recEvents, { maxItems: this.maxItems }), (stored) => this.recs.applyOwnEvents(stored));
      // a duplicate left out names no item: its item was counted when it was stored
      const storedItems = rows.map((row) => row[2]);
      if (this.recs.withoutRecord) {
        const itemsWithoutRecord = await this.recs.withoutRecord([...new Set(storedItems)]);
        return { accepted: events.length, duplicates: events.length - storedItems.length, itemsWithoutRecord };
      }
      const catalog = this.recs.catalog;
      const missing = new Set<number>();
      for (const itemId of storedItems) if (catalog.get(itemId) === undefined) missing.add(itemId);
      const duplicates = events.length - storedItems.length;
      const result: RecordEventsResultModel = { accepted: events.length, duplicates, itemsWithoutRecord: missing.size };
      if (duplicates > 0) result.kept = keptOf(recEvents, rows);
      return result;
    });
  }

  async upsertItems(principal: PrincipalModel, items: Parameters<IngestService['upsertItems']>[1]): Promise<{ upserted: number }> {
    requireAdmin(principal);
    checkItems(items);
    // stored, an empty call would take an item sequence number, on which demo-mode followers reload whole
    if (items.length === 0) return { upserted: 0 };
    const records = lastOfEachItem(items);
    return this.withRoom('items', records.map((item) => item.itemId), async () => {
      const store = this.store();
      await this.storeThenApply('items', () => store.upsertItems(records, { maxItems: this.maxItems }), (seq) => this.recs.applyOwnItems(records, seq));
      return { upserted: records.length };
    });
  }
}

/** Which events were stored: the rows are the call's events in order, duplicates left out. */
function keptOf(events: readonly RecEvent[], rows: readonly EventRow[]): boolean[] {
  let r = 0;
  return events.map((e) => {
    const row = rows[r];
    const stored = row !== undefined && row[2] === e.itemId && row[6] === Math.round(e.time) && (row[1] === KIND_PURCHASE) === (e.kind === 'purchase');
    if (stored) r++;
    return stored;
  });
}

/** One record per item, the last sent: so `upserted` counts the items stored, as a later call's record replaces. */
function lastOfEachItem(items: readonly ItemModel[]): readonly ItemModel[] {
  const last = new Map<number, number>();
  for (let i = 0; i < items.length; i++) last.set(items[i]!.itemId, i);
  if (last.size === items.length) return items;
  return items.filter((item, i) => last.get(item.itemId) === i);
}

/** The in-process backend over a key store and a recommender it takes ownership of. */
export function createEmbeddedBackend(
  store: KeyStore,
  recs: EmbeddedRecs,
  keyOptions: EmbeddedKeyServiceOptions = {},
  ingestOptions: EmbeddedIngestOptions = {},
): Backend {
  const keys = new EmbeddedKeyService(store, keyOptions);
  return {
    keys,
    recs,
    ingest: new EmbeddedIngest(recs, ingestOptions),
    recommender: () => recs.state(),
    ...(store.attribution ? { attribution: store.attribution() } : {}),
    onDataChange: (listener: () => void) => recs.onChange(listener),
    recsNow: { item: (itemId: number) => recs.catalog.get(itemId) ?? null, recommend: (kind, anchorId, filter) => recs.recommendNow(kind, anchorId, filter) },
    check: () => checkKeyStore(store),
    async close() {
      await recs.close();
      await keys.close();
      await store.close();
    },
  };
}

/** A backend's check of its key store: whether the store answers a count of users. */
export async function checkKeyStore(store: Pick<KeyStore, 'countUsers'>): Promise<Record<string, string>> {
  try {
    await store.countUsers();
    return { store: 'ok' };
  } catch (error) {
    return { store: `unreachable: ${(error as Error).message}` };
  }
}
