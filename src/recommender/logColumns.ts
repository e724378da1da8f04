/** The log's columns, by event (see EventLog). */
export interface Columns {
  kind: Uint8Array;
  item: Int32Array;
  session: Int32Array;
  user: Int32Array;
  order: Int32Array;
  time: Float64Array;
}

/** An EventLog's columns and key names to cross a thread: copies to transfer (EventLog.columns) or shared views (sharedColumns). */
export interface EventLogColumns extends Columns {
  length: number;
  itemIds: Float64Array;
  names: [sessions: string[], users: string[], orders: string[]];
}

export const COLUMN_NAMES = ['kind', 'item', 'session', 'user', 'order', 'time'] as const;

/** New columns of `n` events, in shared memory. */
export function columnsOf(n: number): Columns {
  return { kind: shared(Uint8Array, n), item: shared(Int32Array, n), session: shared(Int32Array, n), user: shared(Int32Array, n), order: shared(Int32Array, n), time: shared(Float64Array, n) };
}

export type TypedArrayOf<T> = { new (buffer: SharedArrayBuffer): T; BYTES_PER_ELEMENT: number };

/** A typed array of `n` elements on a SharedArrayBuffer. */
export function shared<T>(make: TypedArrayOf<T>, n: number): T {
  return new make(new SharedArrayBuffer(n * make.BYTES_PER_ELEMENT));
}
