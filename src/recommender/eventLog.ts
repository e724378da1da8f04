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

/** Item ids (up to 2^53) to dense indexes 0..n-1, so that the model can use typed arrays. */
export class ItemIndex {
  private readonly byId = new Map<number, number>();
  private idsArray = new Float64Array(1024);

  get size(): number {
    return this.byId.size;
  }

  /** An index holding `ids` at indexes 0..n-1 (a model built elsewhere). */
  static fromIds(ids: Float64Array): ItemIndex {
    const index = new ItemIndex();
    index.idsArray = new Float64Array(Math.max(1024, ids.length));
    index.idsArray.set(ids);
    for (let i = 0; i < ids.length; i++) index.byId.set(ids[i]!, i);
    return index;
  }

  /** The ids by index, 0..size-1 (a copy). */
  ids(): Float64Array {
    return this.idsArray.slice(0, this.byId.size);
  }

  /** The dense index of an id, adding it when new. */
  intern(id: number): number {
    let index = this.byId.get(id);
    if (index === undefined) {
      index = this.byId.size;
      if (index === this.idsArray.length) {
        const grown = new Float64Array(this.idsArray.length * 2);
        grown.set(this.idsArray);
        this.idsArray = grown;
      }
      this.idsArray[index] = id;
      this.byId.set(id, index);
    }
    return index;
  }

  /** The dense index of an id, or -1. */
  indexOf(id: number): number {
    return this.byId.get(id) ?? -1;
  }

  idAt(index: number): number {
    return this.idsArray[index]!;
  }

  /** The ids by index, not copied: valid (and read-only) until the next intern of a new id. */
  idsNow(): Float64Array {
    return this.idsArray;
  }
}

/** Strings to small integers, for session, user and order keys. */
export class KeyInterner {
  private map = new Map<string, number>();
  constructor(private next = 0) {}
  intern(name: string): number {
    let id = this.map.get(name);
    if (id === undefined) {
      id = this.next++;
      this.map.set(name, id);
    }
    return id;
  }
  get size(): number {
    return this.map.size;
  }
  /** The names by id, 0..size-1. */
  names(): string[] {
    return [...this.map.keys()];
  }
  /**
   * Keeps only the names whose id `kept` maps to a new one (-1: dropped), at those ids: new ids
   * must keep the old ones' order (names() lists by id, which is the order of interning).
   */
  compact(kept: Int32Array): void {
    // a new map of the names kept: deleting most of a map's entries in place costs more (rehashing)
    const map = new Map<string, number>();
    for (const [name, id] of this.map) if (kept[id]! >= 0) map.set(name, kept[id]!);
    this.map = map;
    this.next = map.size;
  }

  /** An interner holding `names` at ids 0..n-1 (a log built in another thread). */
  static of(names: readonly string[]): KeyInterner {
    const interner = new KeyInterner();
    for (const name of names) interner.intern(name);
    return interner;
  }
}

/**
 * An EventLog's columns and key names, to cross a thread boundary: copies to transfer (see
 * EventLog.columns), or views of memory shared with the log (EventLog.sharedColumns).
 */
export interface EventLogColumns {
  length: number;
  kind: Uint8Array;
  item: Int32Array;
  session: Int32Array;
  user: Int32Array;
  order: Int32Array;
  time: Float64Array;
  itemIds: Float64Array;
  names: [sessions: string[], users: string[], orders: string[]];
}

/** Where compact moved each event and key of a log: new index or id, -1 where dropped. */
export interface LogCompaction {
  events: Int32Array;
  sessions: Int32Array;
  users: Int32Array;
  orders: Int32Array;
  /** Events before, and kept. */
  before: number;
  kept: number;
}

/**
 * A columnar, append-only event log: 25 bytes an event, so 10M events fit in about 250 MB where
 * 10M objects would take several GB. Keys are -1 where absent.
 *
 * The columns live in SharedArrayBuffers, so that a rebuild in another thread reads the events
 * up to `length` where they are (sharedColumns) instead of a copy taken on the event loop: an
 * event is written once, below `length` nothing changes, and growing moves the log to new
 * buffers while a reader keeps the old ones.
 */
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

  constructor(items: ItemIndex = new ItemIndex()) {
    this.items = items;
  }

  /**
   * The log as typed arrays and names, copied (transfer them). `withNames` false: without the
   * keys' names, for a build that only groups by them (a log from such columns cannot intern more).
   */
  columns(withNames = true): EventLogColumns {
    const n = Math.max(this.length, 1); // grow() doubles the capacity, so never hand over none
    return {
      length: this.length, kind: this.kind.slice(0, n), item: this.item.slice(0, n), session: this.session.slice(0, n), user: this.user.slice(0, n),
      order: this.order.slice(0, n), time: this.time.slice(0, n), itemIds: this.items.ids(),
      names: withNames ? [this.sessions.names(), this.users.names(), this.orders.names()] : [[], [], []],
    };
  }

  /**
   * The log's columns as they are, without a copy: views of its shared memory, for a reader in
   * another thread that reads events 0..length-1 only (which never change). Columns that came
   * from a copy (fromColumns) move to shared memory first, once.
   */
  sharedColumns(): EventLogColumns {
    if (!(this.kind.buffer instanceof SharedArrayBuffer)) this.resize(this.kind.length);
    return {
      length: this.length, kind: this.kind, item: this.item, session: this.session, user: this.user,
      order: this.order, time: this.time, itemIds: this.items.ids(), names: [[], [], []],
    };
  }

  /**
   * A log from columns (a log built in a worker thread): `add` goes on interning where it left off.
   * `items`: the index to share with a model built from the same log (the same ids in the same order).
   */
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

  /**
   * Drops the events dated before `cutoff`, keeping the others in their order, and the session,
   * user and order keys that only dropped events had; new ids keep the old ones' order. Into new
   * buffers: a reader of sharedColumns taken before keeps the events it has. The log's keys must
   * all be interned here (add, or fromColumns with names): keys given as integers by addKeys
   * without names are kept as they are.
   */
  compact(cutoff: number): LogCompaction {
    const before = this.length;
    const { kind, item, session, user, order, time } = this;
    const events = new Int32Array(before);
    const sessions = new Int32Array(this.sessions.size).fill(-1);
    const users = new Int32Array(this.users.size).fill(-1);
    const orders = new Int32Array(this.orders.size).fill(-1);
    let kept = 0;
    for (let e = 0; e < before; e++) {
      if (!(time[e]! >= cutoff)) {
        events[e] = -1;
        continue;
      }
      events[e] = kept++;
      const s = session[e]!;
      const u = user[e]!;
      const o = order[e]!;
      if (s >= 0 && s < sessions.length) sessions[s] = 0;
      if (u >= 0 && u < users.length) users[u] = 0;
      if (o >= 0 && o < orders.length) orders[o] = 0;
    }
    for (const map of [sessions, users, orders]) {
      let next = 0;
      for (let id = 0; id < map.length; id++) if (map[id] === 0) map[id] = next++;
    }
    // twice what is kept, as grow() leaves it: sized to `kept` exactly, the next event (in the next
    // batch, on the request path) copied the whole log again into columns of twice that
    const n = Math.max(1024, 2 * kept);
    const to = { kind: shared(Uint8Array, n), item: shared(Int32Array, n), session: shared(Int32Array, n), user: shared(Int32Array, n), order: shared(Int32Array, n), time: shared(Float64Array, n) };
    const { kind: toKind, item: toItem, session: toSession, user: toUser, order: toOrder, time: toTime } = to;
    for (let e = 0; e < before; e++) {
      const j = events[e]!;
      if (j < 0) continue;
      toKind[j] = kind[e]!;
      toItem[j] = item[e]!;
      toTime[j] = time[e]!;
      // keys given as integers without names (addKeys) stay as they are
      const s = session[e]!;
      const u = user[e]!;
      const o = order[e]!;
      toSession[j] = s >= 0 && s < sessions.length ? sessions[s]! : s;
      toUser[j] = u >= 0 && u < users.length ? users[u]! : u;
      toOrder[j] = o >= 0 && o < orders.length ? orders[o]! : o;
    }
    Object.assign(this, to);
    this.length = kept;
    this.sessions.compact(sessions);
    this.users.compact(users);
    this.orders.compact(orders);
    return { events, sessions, users, orders, before, kept };
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

  /** Moves the columns to new shared buffers of `n` events (a reader of the old ones keeps them). */
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

type TypedArrayOf<T> = { new (buffer: SharedArrayBuffer): T; BYTES_PER_ELEMENT: number };

/** A typed array of `n` elements on a SharedArrayBuffer. */
function shared<T>(make: TypedArrayOf<T>, n: number): T {
  return new make(new SharedArrayBuffer(n * make.BYTES_PER_ELEMENT));
}
