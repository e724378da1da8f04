import type { ItemModel } from '../../ports/backend.js';
import { KIND_PURCHASE } from '../../recommender/index.js';
import type { RecEvent } from '../../recommender/index.js';

/** One stored event as a follower reads it; keys are ids of the store's key table (-1 where absent), never names. */
export type EventRow = [id: number, kind: number, itemId: number, session: number, user: number, order: number, time: number];

/** Where the recommender's data lives, in a form a worker thread can be given. */
export type RecsSource =
  | { kind: 'sqlite'; dataDir: string }
  | { kind: 'postgres'; connectionString: string; schema?: string };

/** The point a reader has reached; `generation` changes only when data is deleted, and a follower then reloads whole. */
export interface StoreHead {
  generation: number;
  lastEventId: number;
  lastItemSeq: number;
}

export interface ImportRecord {
  id: number;
  what: 'events' | 'catalog';
  /** How the file was read: `json`, a preset's name, or csv with its column flags (EventFormat.mapping). */
  format: string;
  file: string;
  sha256: string;
  records: number;
  skipped: number;
  finishedAt: string | null;
}

/** An import under way, staged privately so that the gateway keeps taking events meanwhile;
 * `finish` moves it in one transaction, so that a failed or abandoned import leaves nothing. */
export interface ImportSession {
  addEvents(events: readonly RecEvent[]): Promise<void>;
  addItems(items: readonly ItemModel[]): Promise<void>;
  finish(records: number, skipped: number, options?: { replace?: boolean }): Promise<{ importId: number; removed: number }>;
  abandon(): Promise<void>;
}

/** Ids a prune's transaction covers: short, so that writers elsewhere wait for one at most. */
export const PRUNE_ROWS = 20_000;

export interface SnapshotSink {
  record(json: string): void;
  event(row: EventRow): void;
}

/** RECS_MAX_ITEMS as the store holds it for every process: checked under the write lock, so that
 * writers elsewhere cannot pass it together. Imports take no cap. */
export interface ItemCap {
  maxItems: number;
}

/** The recommender's durable data (SQLite or PostgreSQL); every write one transaction, durable when it resolves. */
export interface RecsDataStore {
  /** For messages: a path or host:port/database, never a password. */
  readonly where: string;
  /** For /readyz, which anyone may ask: never where it is. */
  readonly kind: 'sqlite' | 'postgresql';
  head(): Promise<StoreHead>;
  /** A call's events in one transaction, the rows as stored; an eventId held already leaves its event out. */
  appendEvents(events: readonly RecEvent[], cap?: ItemCap): Promise<EventRow[]>;
  upsertItems(items: readonly ItemModel[], cap?: ItemCap): Promise<number>;
  eventsAfter(afterId: number, limit: number): Promise<EventRow[]>;
  itemsAfter(afterSeq: number): Promise<{ seq: number; records: string[] }>;
  /** A consistent read of everything, the records first. Events older than `maxAgeMs` are left out
   * in the database: they count for nothing in the model, and years of history would be read. */
  snapshot(sink: SnapshotSink, options?: { maxAgeMs?: number }): Promise<StoreHead>;
  /** Deletes events older than `maxAgeMs` before the newest, in short transactions (PRUNE_ROWS). The
   * newest stays whatever its age: without it, the head would go back, which followers take for lost events. */
  pruneEvents(maxAgeMs: number, dryRun?: boolean): Promise<{ newest: number | null; removed: number; eventIds: number }>;
  counts(): Promise<{ items: number; events: number }>;
  /** The key-table ids of a session and a user named by events (null: none stored by that name): how the followed
   * log names them. */
  keyIds(sessionId: string | null, userId: string | null): Promise<{ session: number | null; user: number | null }>;
  countWithoutRecord(itemIds: readonly number[]): Promise<number>;
  imports(): Promise<ImportRecord[]>;
  findImport(what: ImportRecord['what'], format: string, sha256: string): Promise<ImportRecord | undefined>;
  beginImport(what: ImportRecord['what'], format: string, file: string, sha256: string): Promise<ImportSession>;
  close(): Promise<void>;
}

/** A stored row in the recommender's spelling: keys as store ids, the same in every process, so a session's events meet. */
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

/** A call's events without those whose eventId `seen` holds or an earlier event has; the ids kept join `seen`. */
export function withoutRepeatedIds(events: readonly RecEvent[], seen = new Set<string>()): readonly RecEvent[] {
  if (!events.some((e) => e.eventId != null)) return events;
  return events.filter((e) => {
    if (e.eventId == null) return true;
    if (seen.has(e.eventId)) return false;
    seen.add(e.eventId);
    return true;
  });
}
