import type { ItemModel } from '../../ports/backend.js';
import { KIND_PURCHASE } from '../../recommender/index.js';
import type { RecEvent } from '../../recommender/index.js';

/**
 * One stored event as a follower reads it: [id, kind (0 view, 1 purchase), item id, session,
 * user, order, time in ms]. Session, user and order are ids of the store's key table (-1 where
 * absent): the identifiers shoppers sent are never read back.
 */
export type EventRow = [id: number, kind: number, itemId: number, session: number, user: number, order: number, time: number];

/** Where the recommender's data lives, in a form a worker thread can be given. */
export type RecsSource =
  | { kind: 'sqlite'; dataDir: string }
  | { kind: 'postgres'; connectionString: string; schema?: string };

/**
 * The point a reader has reached. `generation` changes only when data is deleted or replaced
 * (import --replace): a follower then reloads whole. Events and item records are otherwise only
 * appended, under increasing `lastEventId` (events) and `lastItemSeq` (one per batch of records).
 */
export interface StoreHead {
  generation: number;
  lastEventId: number;
  lastItemSeq: number;
}

/** One import as recorded in the `imports` table. */
export interface ImportRecord {
  id: number;
  what: 'events' | 'catalog';
  /** How the file was read: `json` (a catalogue), a preset's name, or csv with its column flags (EventFormat.mapping); `csv` alone before they were recorded. */
  format: string;
  file: string;
  sha256: string;
  records: number;
  skipped: number;
  finishedAt: string | null;
}

/**
 * An import under way: rows go to a staging area private to it (no lock on the shared tables, so
 * the gateway keeps taking events meanwhile), and `finish` moves them in ONE transaction, with
 * `replace`'s deletions and the import's record. A failed or abandoned import leaves nothing.
 */
export interface ImportSession {
  addEvents(events: readonly RecEvent[]): Promise<void>;
  addItems(items: readonly ItemModel[]): Promise<void>;
  finish(records: number, skipped: number, options?: { replace?: boolean }): Promise<{ importId: number; removed: number }>;
  abandon(): Promise<void>;
}

/**
 * The recommender's durable data, SQLite (DATA_DIR/recs.db) or PostgreSQL (DATABASE_URL): the
 * catalogue, the event log, and the imports. Every write is one transaction, committed durably
 * before its promise resolves (SQLite: WAL with synchronous=FULL; PostgreSQL: COMMIT).
 */
/** Ids a prune's transaction covers (RecsDataStore.pruneEvents). */
export const PRUNE_ROWS = 20_000;

/** Where a snapshot goes: item records (JSON text), then events. */
export interface SnapshotSink {
  record(json: string): void;
  event(row: EventRow): void;
}

/**
 * RECS_MAX_ITEMS as the store holds it, for every process sharing it: a write whose item ids new
 * to the store (named by no stored event or record) would take the distinct items it holds past
 * `maxItems` is refused whole (StoreFullError), decided inside the write's transaction under the
 * write lock, so writers in other processes cannot pass it together. A write naming no new item
 * is never refused. Imports take no cap, and their items count as any.
 */
export interface ItemCap {
  maxItems: number;
}

export interface RecsDataStore {
  /** For messages: a path or host:port/database, never a password. */
  readonly where: string;
  /** What it is, for /readyz (which anyone may ask: never where it is). */
  readonly kind: 'sqlite' | 'postgresql';
  head(): Promise<StoreHead>;
  /**
   * Stores a whole call's events in one transaction; the rows as stored, in id order. An event
   * whose eventId the store holds (from an earlier call, or earlier in this one) is left out, and
   * its id taken in the same transaction as the rows: a call stored twice keeps its events once.
   * With `cap`, see ItemCap: StoreFullError, nothing stored, where it would pass it.
   */
  appendEvents(events: readonly RecEvent[], cap?: ItemCap): Promise<EventRow[]>;
  /** Stores a call's item records in one transaction under one new sequence number; `cap` as appendEvents'. */
  upsertItems(items: readonly ItemModel[], cap?: ItemCap): Promise<number>;
  /** Events with an id above `afterId`, in id order, at most `limit`. */
  eventsAfter(afterId: number, limit: number): Promise<EventRow[]>;
  /** Item records (JSON text) changed by batches above `afterSeq`, and the last such batch. */
  itemsAfter(afterSeq: number): Promise<{ seq: number; records: string[] }>;
  /**
   * A consistent read of everything (start-up, reloads): the records first, then the events in id
   * order; returns the head it read at. With `maxAgeMs`, the events older than that before the
   * newest one read are left out, in the database: they count for nothing in the model
   * (RECS_EVENTS_MAX_AGE_DAYS, cutoffOf), and a shop's history of years would otherwise be read,
   * held in memory and walked at every start.
   */
  snapshot(sink: SnapshotSink, options?: { maxAgeMs?: number }): Promise<StoreHead>;
  /**
   * Deletes the events older than `maxAgeMs` before the newest (`recs-gateway prune events`), in
   * short transactions of at most PRUNE_ROWS ids each, so that gateways writing meanwhile wait
   * for no more than one (SQLite: with a pause after each, which lets them take the lock); a prune stopped between two (killed) leaves a store as consistent as
   * any. The event with the largest id stays whatever its age: SQLite would hand its rowid out
   * again, under the id followers have read up to, and PostgreSQL's head would go back, which
   * followers take for a store that lost events (a whole reload). The eventIds taken by events
   * that old go too (`eventIds`: how many): a call sent again with one counts for nothing then,
   * its events being as old. `newest`: null where there are no events. `dryRun`: only counts
   * what it would delete.
   */
  pruneEvents(maxAgeMs: number, dryRun?: boolean): Promise<{ newest: number | null; removed: number; eventIds: number }>;
  counts(): Promise<{ items: number; events: number }>;
  /** How many of `itemIds` have no record. */
  countWithoutRecord(itemIds: readonly number[]): Promise<number>;
  imports(): Promise<ImportRecord[]>;
  /** A finished import of the same content, if any. */
  findImport(what: ImportRecord['what'], format: string, sha256: string): Promise<ImportRecord | undefined>;
  beginImport(what: ImportRecord['what'], format: string, file: string, sha256: string): Promise<ImportSession>;
  close(): Promise<void>;
}

/**
 * A stored row in the recommender's spelling. Keys become their store ids in decimal: the same
 * string in every process, so one session's events meet in the model whoever stored them, and not
 * the identifier the shop sent.
 */
export function rowToRecEvent(row: EventRow): RecEvent {
  const [, kind, itemId, session, user, order, time] = row;
  return {
    kind: kind === KIND_PURCHASE ? 'purchase' : 'view',
    itemId,
    session: session < 0 ? null : String(session),
    user: user < 0 ? null : String(user),
    orderId: order < 0 ? null : String(order),
    time,
  };
}

export const NS_SESSION = 0;
export const NS_USER = 1;
export const NS_ORDER = 2;
/** Events' own ids (RecEvent.eventId), named when an event is stored: a name taken is a duplicate. */
export const NS_EVENT = 3;

/**
 * A call's events without those whose eventId `seen` holds or an earlier event of the call has
 * (the first is kept); the ids kept join `seen`. The PostgreSQL store's repeats within a call
 * (a fresh set), and EmbeddedIngest's ids without a store (its own, for as long as it runs).
 */
export function withoutRepeatedIds(events: readonly RecEvent[], seen = new Set<string>()): readonly RecEvent[] {
  if (!events.some((e) => e.eventId != null)) return events;
  return events.filter((e) => {
    if (e.eventId == null) return true;
    if (seen.has(e.eventId)) return false;
    seen.add(e.eventId);
    return true;
  });
}
