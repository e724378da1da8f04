import { ItemIndex, KeyInterner } from './interners.js';
import { shared } from './logColumns.js';
import type { EventLogColumns, TypedArrayOf } from './logColumns.js';
import { beginCompaction, compactionDone, compactionStep, finishCompaction } from './logCompaction.js';
import type { CompactionUnderWay, Interners, LogCompaction } from './logCompaction.js';

/** What the recommender learns from: a view or a purchase of one item. */
export type EventKind = 'view' | 'purchase';

/** One event as an import format yields it, before it is stored compactly. */
export interface RecEvent {
  kind: EventKind;
  /** The visit it belongs to; null where the source has none (then the user's log is split at gaps). */
  session: string | null;
  /** Who; null where anonymous. */
  user: string | null;
  itemId: number;
  /** Milliseconds since the epoch, or a monotonic sequence where the source has no clock (instacart). */
  time: number;
  /** The order a purchase belongs to; null where the source has none (then the session stands in). */
  orderId: string | null;
  /** The sender's id for the event (recordEvents): a store keeps one event an id (see RecsDataStore.appendEvents). */
  eventId?: string | null;
}

export const KIND_VIEW = 0;
export const KIND_PURCHASE = 1;

/** A columnar, append-only event log; keys are -1 where absent. Shared memory, so that a rebuild in another thread
 * reads events below `length` (which never change) in place; growing moves the log and a reader keeps the old. */
export class EventLog {
  length = 0;
  kind: Uint8Array = shared(Uint8Array, 1024);
  item: Int32Array = shared(Int32Array, 1024);
  session: Int32Array = shared(Int32Array, 1024);
  user: Int32Array = shared(Int32Array, 1024);
  order: Int32Array = shared(Int32Array, 1024);
  time: Float64Array = shared(Float64Array, 1024);
  readonly items: ItemIndex;
  private sessions = new KeyInterner();
  private users = new KeyInterner();
  private orders = new KeyInterner();
  private underWay: CompactionUnderWay | null = null;

  constructor(items: ItemIndex = new ItemIndex()) {
    this.items = items;
  }

  /** The log as typed arrays and names, copied (transfer them); `withNames` false leaves out the keys' names. */
  columns(withNames = true): EventLogColumns {
    const n = Math.max(this.length, 1); // grow() doubles the capacity, so never hand over none
    return {
      length: this.length, kind: this.kind.slice(0, n), item: this.item.slice(0, n), session: this.session.slice(0, n), user: this.user.slice(0, n),
      order: this.order.slice(0, n), time: this.time.slice(0, n), itemIds: this.items.ids(),
      names: withNames ? [this.sessions.names(), this.users.names(), this.orders.names()] : [[], [], []],
    };
  }

  /** The log's columns without a copy, for a reader in another thread of events 0..length-1 only (which never change);
   * columns from a copy (fromColumns) move to shared memory first, once. */
  sharedColumns(): EventLogColumns {
    if (!(this.kind.buffer instanceof SharedArrayBuffer)) this.resize(this.kind.length);
    return {
      length: this.length, kind: this.kind, item: this.item, session: this.session, user: this.user,
      order: this.order, time: this.time, itemIds: this.items.ids(), names: [[], [], []],
    };
  }

  /** A log from columns (built in a worker): `add` goes on interning; `items`: shared with a model of the same log. */
  static fromColumns(c: EventLogColumns, items: ItemIndex = ItemIndex.fromIds(c.itemIds)): EventLog {
    const log = new EventLog(items);
    log.length = c.length;
    log.kind = c.kind;
    log.item = c.item;
    log.session = c.session;
    log.user = c.user;
    log.order = c.order;
    log.time = c.time;
    log.sessions = KeyInterner.of(c.names[0]);
    log.users = KeyInterner.of(c.names[1]);
    log.orders = KeyInterner.of(c.names[2]);
    return log;
  }

  /** Adds an event whose keys are still strings (in-memory logs: demo, evaluation). */
  add(event: RecEvent): void {
    this.addKeys(
      event.kind === 'purchase' ? KIND_PURCHASE : KIND_VIEW,
      event.itemId,
      event.session === null ? -1 : this.sessions.intern(event.session),
      event.user === null ? -1 : this.users.intern(event.user),
      event.orderId === null ? -1 : this.orders.intern(event.orderId),
      event.time,
    );
  }

  /** Drops the events dated before `cutoff` and the keys only they had, into new buffers (a sharedColumns reader keeps its own). */
  compact(cutoff: number): LogCompaction {
    const underWay = this.beginCompact(cutoff);
    this.compactStep(underWay, Infinity);
    return this.finishCompact(underWay)!;
  }

  /** compact in steps while events go on being added (compactStep, then finishCompact). The caller must hold no event
   * dated before `cutoff`; a compaction begun replaces one under way. */
  beginCompact(cutoff: number): CompactionUnderWay {
    this.underWay = beginCompaction(cutoff, this.length, this.kind.length, this.interners);
    return this.underWay;
  }

  /** Does up to `maxEvents` more of a compaction's steps (a key's name costs NAME_COST); true when all are done
   * (finishCompact's turn), false for a compaction no longer under way. */
  compactStep(c: CompactionUnderWay, maxEvents: number): boolean {
    return c === this.underWay && compactionStep(c, this, this.interners, maxEvents);
  }

  /** Where a compaction whose scan is done puts every event it scanned and every key those kept; the finish only adds
   * after these (see LiveModel.compactStep). */
  settled(c: CompactionUnderWay): LogCompaction | null {
    if (c !== this.underWay || c.to === null) return null;
    const [sessions, users, orders] = c.keys;
    return { events: c.events, sessions, users, orders, before: c.end, kept: c.kept };
  }

  /** Ends a compaction whose steps are done: adds the events added since and moves the log to the new columns and names.
   * Where each event and key went; null (nothing changes) for a compaction no longer under way. */
  finishCompact(c: CompactionUnderWay): LogCompaction | null {
    if (c !== this.underWay || !compactionDone(c)) return null;
    this.underWay = null;
    const { to, moved } = finishCompaction(c, this, this.length, this.interners);
    Object.assign(this, to);
    this.length = moved.kept;
    return moved;
  }

  /** The name of a session key (below the sessions interned), and of a user key. */
  sessionName(key: number): string {
    return this.sessions.nameOf(key);
  }
  userName(key: number): string {
    return this.users.nameOf(key);
  }

  private get interners(): Interners {
    return [this.sessions, this.users, this.orders];
  }

  /** Adds an event whose keys are already integers (from the database). */
  addKeys(kind: number, itemId: number, session: number, user: number, order: number, time: number): void {
    if (this.length === this.kind.length) this.grow();
    const i = this.length++;
    this.kind[i] = kind;
    this.item[i] = this.items.intern(itemId);
    this.session[i] = session;
    this.user[i] = user;
    this.order[i] = order;
    this.time[i] = time;
  }

  private grow(): void {
    this.resize(this.kind.length * 2);
  }

  private resize(n: number): void {
    const move = <T extends Uint8Array | Int32Array | Float64Array>(a: T, make: TypedArrayOf<T>): T => {
      const b = shared(make, n);
      b.set(a);
      return b;
    };
    this.kind = move(this.kind, Uint8Array);
    this.item = move(this.item, Int32Array);
    this.session = move(this.session, Int32Array);
    this.user = move(this.user, Int32Array);
    this.order = move(this.order, Int32Array);
    this.time = move(this.time, Float64Array);
  }
}
