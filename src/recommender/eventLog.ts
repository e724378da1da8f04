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
  /** The names by id. */
  private byId: string[] = [];
  intern(name: string): number {
    let id = this.map.get(name);
    if (id === undefined) {
      id = this.byId.length;
      this.map.set(name, id);
      this.byId.push(name);
    }
    return id;
  }
  get size(): number {
    return this.byId.length;
  }
  /** The names by id, 0..size-1. */
  names(): string[] {
    return this.byId.slice();
  }
  /** The name of an id below size. */
  nameOf(id: number): string {
    return this.byId[id]!;
  }
  /** Moves to the names of `byId` (EventLog.finishCompact), at their indexes. */
  replace(byId: string[], map: Map<string, number>): void {
    this.byId = byId;
    this.map = map;
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
  /** By the event's index below `before` (what follows means nothing). */
  events: Int32Array;
  sessions: Int32Array;
  users: Int32Array;
  orders: Int32Array;
  /** Events before, and kept. */
  before: number;
  kept: number;
}

const COLUMN_NAMES = ['kind', 'item', 'session', 'user', 'order', 'time'] as const;
type Columns = Pick<EventLog, (typeof COLUMN_NAMES)[number]>;

/** New columns of `n` events, in shared memory. */
function columnsOf(n: number): Columns {
  return { kind: shared(Uint8Array, n), item: shared(Int32Array, n), session: shared(Int32Array, n), user: shared(Int32Array, n), order: shared(Int32Array, n), time: shared(Float64Array, n) };
}

/** A compaction done in steps (EventLog.beginCompact): what its steps have done so far. */
export interface CompactionUnderWay {
  readonly cutoff: number;
  /** The log's length when it began: events from here on are the finish's. */
  readonly end: number;
  /** Events scanned (their new indexes, their keys marked), then copied to `to`; keys' names moved (all three kinds together). */
  scanned: number;
  copied: number;
  named: number;
  /** Events kept among those scanned. */
  kept: number;
  /** Each scanned event's new index, -1 where dropped (and room after them: see beginCompact). */
  readonly events: Int32Array;
  /** Session, user and order keys by their ids when it began: once the scan is done, each one's new id (-1: dropped). */
  readonly keys: [Int32Array, Int32Array, Int32Array];
  /** Keys of each kind kept by the scan. */
  readonly keysKept: [number, number, number];
  /** The kept keys' names by new id, and the other way round: the interners' next contents. */
  readonly names: [string[], string[], string[]];
  readonly maps: [Map<string, number>, Map<string, number>, Map<string, number>];
  /** The new columns, once the scan is done. */
  to: Columns | null;
}

/**
 * What a key's name moved to the next interner costs a compaction's step (EventLog.compactStep)
 * against an event scanned or copied: a Map insertion against a few typed-array reads and writes
 * (bench/compaction.ts beside other load: 56,193 names in a step, 5.8 ms of CPU, where a step of
 * 65,536 events scanned or copied took about 0.3 ms).
 */
const NAME_COST = 8;

/** A key's new id where `map` has it; one without a name (addKeys) as it is. */
function rekeyed(map: Int32Array, key: number): number {
  return key >= 0 && key < map.length ? map[key]! : key;
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
  private underWay: CompactionUnderWay | null = null;

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
   * user and order keys that only dropped events had; the keys kept keep their order. Into new
   * buffers: a reader of sharedColumns taken before keeps the events it has. The log's keys must
   * all be interned here (add, or fromColumns with names): keys given as integers by addKeys
   * without names are kept as they are. All at once: beginCompact does the same in steps.
   */
  compact(cutoff: number): LogCompaction {
    const underWay = this.beginCompact(cutoff);
    this.compactStep(underWay, Infinity);
    return this.finishCompact(underWay)!;
  }

  /**
   * Starts a compaction (see compact) done in steps between other work, while events go on being
   * added: compactStep scans the events the log holds now, then copies those kept to new columns
   * and the names of the keys they have to new maps, a slice at a time; finishCompact then adds
   * the events added meanwhile and swaps the columns in. An event dropped is one dated before
   * `cutoff`: the caller must hold none of them (nor, at the finish, any event dropped since).
   * A key of an event added meanwhile that only dropped events had before gets a new id after
   * the others. A compaction begun replaces one under way, which can then not finish.
   */
  beginCompact(cutoff: number): CompactionUnderWay {
    const end = this.length;
    this.underWay = {
      // as long as the log's columns, so that the finish writes the events added meanwhile in it
      // (until the log grows) rather than copying it into a longer one on the swap's turn
      cutoff, end, scanned: 0, copied: 0, named: 0, kept: 0, events: new Int32Array(Math.max(end, this.kind.length)), to: null,
      keys: [new Int32Array(this.sessions.size), new Int32Array(this.users.size), new Int32Array(this.orders.size)],
      keysKept: [0, 0, 0],
      names: [[], [], []],
      maps: [new Map<string, number>(), new Map<string, number>(), new Map<string, number>()],
    };
    return this.underWay;
  }

  /**
   * Does up to `maxEvents` more of a compaction's steps (an event scanned or copied counting one,
   * a key's name moved NAME_COST, at least one name a call); true when every one is done
   * (finishCompact's turn). False for a compaction no longer under way.
   */
  compactStep(c: CompactionUnderWay, maxEvents: number): boolean {
    if (c !== this.underWay) return false;
    let budget = maxEvents;
    if (c.to === null) {
      budget -= this.scan(c, budget);
      if (c.to === null || budget <= 0) return false;
    }
    if (c.copied < c.end) {
      budget -= this.copy(c, budget);
      if (c.copied < c.end || budget <= 0) return false;
    }
    const interners = [this.sessions, this.users, this.orders];
    let before = 0;
    for (let k = 0; k < 3 && budget > 0; before += c.keys[k]!.length, k++) {
      const keys = c.keys[k]!;
      const from = c.named - before;
      if (from >= keys.length) continue;
      const stop = Math.min(keys.length, from + Math.ceil(budget / NAME_COST));
      const names = c.names[k]!;
      const map = c.maps[k]!;
      const interner = interners[k]!;
      for (let id = from; id < stop; id++) {
        if (keys[id]! < 0) continue;
        const name = interner.nameOf(id);
        map.set(name, names.length);
        names.push(name);
      }
      budget -= NAME_COST * (stop - from);
      c.named += stop - from;
    }
    return c.named === c.keys[0].length + c.keys[1].length + c.keys[2].length;
  }

  /** Scans up to `budget` events: each one's new index, and the keys of those kept. Scanned done, it numbers the keys. */
  private scan(c: CompactionUnderWay, budget: number): number {
    const { time, session, user, order } = this;
    const [sessions, users, orders] = c.keys;
    const events = c.events;
    const from = c.scanned;
    const stop = Math.min(c.end, from + budget);
    let kept = c.kept;
    // 1 marks a key a kept event has, until numbered
    for (let e = from; e < stop; e++) {
      if (!(time[e]! >= c.cutoff)) {
        events[e] = -1;
        continue;
      }
      events[e] = kept++;
      const s = session[e]!;
      const u = user[e]!;
      const o = order[e]!;
      if (s >= 0 && s < sessions.length) sessions[s] = 1;
      if (u >= 0 && u < users.length) users[u] = 1;
      if (o >= 0 && o < orders.length) orders[o] = 1;
    }
    c.scanned = stop;
    c.kept = kept;
    if (stop === c.end) {
      for (let k = 0; k < 3; k++) {
        const keys = c.keys[k]!;
        let next = 0;
        for (let id = 0; id < keys.length; id++) keys[id] = keys[id] === 1 ? next++ : -1;
        c.keysKept[k] = next;
      }
      // twice what is kept, as grow() leaves it: sized to `kept` exactly, the next event (in the next
      // batch, on the request path) copied the whole log again into columns of twice that
      c.to = columnsOf(Math.max(1024, 2 * kept));
    }
    return stop - from;
  }

  /** Copies up to `budget` more of the events scanned to the new columns, their keys renumbered. */
  private copy(c: CompactionUnderWay, budget: number): number {
    const { kind, item, time, session, user, order } = this;
    const to = c.to!;
    const events = c.events;
    const [sessions, users, orders] = c.keys;
    const from = c.copied;
    const stop = Math.min(c.end, from + budget);
    for (let e = from; e < stop; e++) {
      const j = events[e]!;
      if (j < 0) continue;
      to.kind[j] = kind[e]!;
      to.item[j] = item[e]!;
      to.time[j] = time[e]!;
      to.session[j] = rekeyed(sessions, session[e]!);
      to.user[j] = rekeyed(users, user[e]!);
      to.order[j] = rekeyed(orders, order[e]!);
    }
    c.copied = stop;
    return stop - from;
  }

  /**
   * What a compaction under way has settled once its scan is done: the new index of every event
   * it scanned and the new id of every key those kept have. The finish adds events and keys after
   * these, none of them moving these (see LiveModel.compactStep).
   */
  settled(c: CompactionUnderWay): LogCompaction | null {
    if (c !== this.underWay || c.to === null) return null;
    const [sessions, users, orders] = c.keys;
    return { events: c.events, sessions, users, orders, before: c.end, kept: c.kept };
  }

  /**
   * Ends a compaction whose steps are all done (compactStep returned true): adds the events added
   * since it began and moves the log to the new columns and names. Where each event and key went;
   * null for a compaction no longer under way (nothing changes then).
   */
  finishCompact(c: CompactionUnderWay): LogCompaction | null {
    if (c !== this.underWay || c.to === null || c.copied < c.end || c.named < c.keys[0].length + c.keys[1].length + c.keys[2].length) return null;
    this.underWay = null;
    const before = this.length;
    const interners = [this.sessions, this.users, this.orders];
    // every key numbered now: those of the events added meanwhile get the next ids, in their order
    const maps = interners.map((interner, k) => {
      const map = new Int32Array(interner.size).fill(-1);
      map.set(c.keys[k]!);
      return map;
    }) as [Int32Array, Int32Array, Int32Array];
    const next = [...c.keysKept];
    const number = (k: number, key: number): number => {
      const map = maps[k]!;
      if (key < 0 || key >= map.length) return key; // without a name (addKeys): as it is
      if (map[key]! < 0) {
        map[key] = next[k]!++;
        const name = interners[k]!.nameOf(key);
        c.maps[k]!.set(name, c.names[k]!.length);
        c.names[k]!.push(name);
      }
      return map[key]!;
    };
    const kept = c.kept + before - c.end;
    let to = c.to;
    if (to.kind.length < kept) {
      const grown = columnsOf(2 * kept);
      for (const name of COLUMN_NAMES) grown[name].set(to[name].subarray(0, c.kept));
      to = grown;
    }
    const { kind, item, session, user, order, time } = this;
    let events = c.events;
    if (events.length < before) {
      events = new Int32Array(before);
      events.set(c.events);
    }
    for (let e = c.end, j = c.kept; e < before; e++, j++) {
      events[e] = j;
      to.kind[j] = kind[e]!;
      to.item[j] = item[e]!;
      to.time[j] = time[e]!;
      to.session[j] = number(0, session[e]!);
      to.user[j] = number(1, user[e]!);
      to.order[j] = number(2, order[e]!);
    }
    Object.assign(this, to);
    this.length = kept;
    interners.forEach((interner, k) => interner.replace(c.names[k]!, c.maps[k]!));
    const [sessions, users, orders] = maps;
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
