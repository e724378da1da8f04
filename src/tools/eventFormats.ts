import { ITEM_ID_RANGE, toItemId } from '../ports/itemRecord.js';
import type { EventKind, RecEvent } from '../recommender/index.js';
import { columnIndex } from './delimited.js';

/** A line that cannot be read as an event: reported with its line number and skipped. */
export class EventLineError extends Error {}

/** How one file format's lines become events. */
export interface EventFormat {
  name: string;
  /**
   * How the format reads a file, every choice of columns and values included: a preset's name,
   * or `csv` with its flags in a fixed order (`csv --item 3 --session 1 --kind view --delimiter ;`).
   * An import is known by it and the file's content: the same file read another way is not the
   * same import.
   */
  mapping: string;
  /** The lines it expects, for a message about a file it cannot read: its columns. */
  expected: string;
  delimiter: string;
  /** Whether the first line is a header to skip. */
  header: boolean;
  /** Fewest fields a line must have. */
  minFields: number;
  /**
   * The event of a line; null for a well-formed line that is not a view or purchase (add-to-cart,
   * favourite). Throws EventLineError for a malformed line.
   */
  parse(fields: string[]): RecEvent | null;
}

export const PRESET_NAMES = [
  'retailrocket', 'diginetica-views', 'diginetica-purchases', 'yoochoose-clicks', 'yoochoose-buys', 'taobao', 'instacart',
] as const;
export type PresetName = (typeof PRESET_NAMES)[number];

function itemOf(value: string | undefined): number {
  const id = toItemId(value);
  if (id === null) throw new EventLineError(`item id must be ${ITEM_ID_RANGE}, got ${JSON.stringify(value)}`);
  return id;
}

/**
 * A time in ms: digits are epoch seconds below 1e11 (year 5138 in ms, 1973 in s, so the two never
 * meet in real logs) and ms above; anything else goes through Date.parse (ISO 8601).
 */
export function parseTime(value: string | undefined): number {
  if (value === undefined || value === '') throw new EventLineError('time is missing');
  if (/^[0-9]+(\.[0-9]+)?$/.test(value)) {
    const n = Number(value);
    return n < 1e11 ? Math.round(n * 1000) : Math.round(n);
  }
  const t = Date.parse(value);
  if (Number.isNaN(t)) throw new EventLineError(`time is not a number or date: ${JSON.stringify(value)}`);
  return t;
}

function key(value: string | undefined): string | null {
  // Diginetica writes NA for an anonymous user; other logs leave the field empty.
  return value === undefined || value === '' || value === 'NA' ? null : value;
}

function requiredKey(value: string | undefined, what: string): string {
  const k = key(value);
  if (k === null) throw new EventLineError(`${what} is missing`);
  return k;
}

const DAY_MS = 86_400_000;

/**
 * Diginetica: the session's day and the ms since its first query (timeframe), which together
 * order a session's events. In the purchase file 14% of timeframes run past the day, up to 153
 * days, which would date those purchases months after every view and after the competition's
 * own end: a clock running ahead, which would make every other event "old" to
 * RECS_EVENTS_MAX_AGE_DAYS. Such an offset is kept within its session's day (at its last
 * millisecond), where the order of the session's events is still kept.
 */
function digineticaTime(timeframe: string | undefined, date: string | undefined): number {
  const day = date === undefined ? NaN : Date.parse(date);
  const offset = Number(timeframe);
  if (Number.isNaN(day) || timeframe === '' || !Number.isFinite(offset)) {
    throw new EventLineError(`bad timeframe/eventdate ${JSON.stringify(timeframe)}/${JSON.stringify(date)}`);
  }
  return day + Math.min(Math.max(offset, 0), DAY_MS - 1);
}

const presets: Record<PresetName, EventFormat> = {
  // timestamp,visitorid,event,itemid,transactionid; no sessions: a visitor's log is split at gaps.
  retailrocket: {
    name: 'retailrocket', mapping: 'retailrocket', expected: 'timestamp,visitorid,event,itemid,transactionid', delimiter: ',', header: true, minFields: 4,
    parse: ([ts, visitor, event, item, tx]) => {
      const kind: EventKind | null = event === 'view' ? 'view' : event === 'transaction' ? 'purchase' : null;
      if (event !== 'view' && event !== 'transaction' && event !== 'addtocart') {
        throw new EventLineError(`unknown event ${JSON.stringify(event)}`);
      }
      const itemId = itemOf(item);
      const time = parseTime(ts);
      if (kind === null) return null;
      return { kind, session: null, user: requiredKey(visitor, 'visitorid'), itemId, time, orderId: kind === 'purchase' ? key(tx) : null };
    },
  },
  'diginetica-views': {
    name: 'diginetica-views', mapping: 'diginetica-views', expected: 'session_id;user_id;item_id;timeframe;eventdate', delimiter: ';', header: true, minFields: 5,
    parse: ([session, user, item, timeframe, date]) => ({
      kind: 'view', session: requiredKey(session, 'session_id'), user: key(user), itemId: itemOf(item),
      time: digineticaTime(timeframe, date), orderId: null,
    }),
  },
  'diginetica-purchases': {
    name: 'diginetica-purchases', mapping: 'diginetica-purchases', expected: 'sessionId;userId;timeframe;eventdate;ordernumber;itemId', delimiter: ';', header: true, minFields: 6,
    parse: ([session, user, timeframe, date, order, item]) => ({
      kind: 'purchase', session: key(session), user: key(user), itemId: itemOf(item),
      time: digineticaTime(timeframe, date), orderId: requiredKey(order, 'ordernumber'),
    }),
  },
  'yoochoose-clicks': {
    name: 'yoochoose-clicks', mapping: 'yoochoose-clicks', expected: 'session,timestamp,item,category (no header)', delimiter: ',', header: false, minFields: 3,
    parse: ([session, ts, item]) => ({
      kind: 'view', session: requiredKey(session, 'session'), user: null, itemId: itemOf(item), time: parseTime(ts), orderId: null,
    }),
  },
  // A session's buys are one checkout, so the session is the order.
  'yoochoose-buys': {
    name: 'yoochoose-buys', mapping: 'yoochoose-buys', expected: 'session,timestamp,item,price,quantity (no header)', delimiter: ',', header: false, minFields: 3,
    parse: ([session, ts, item]) => {
      const s = requiredKey(session, 'session');
      return { kind: 'purchase', session: s, user: null, itemId: itemOf(item), time: parseTime(ts), orderId: s };
    },
  },
  // user,item,category,behavior,timestamp; cart and fav are intent, not views or purchases.
  taobao: {
    name: 'taobao', mapping: 'taobao', expected: 'user,item,category,behavior,timestamp (no header)', delimiter: ',', header: false, minFields: 5,
    parse: ([user, item, , behavior, ts]) => {
      if (behavior !== 'pv' && behavior !== 'buy' && behavior !== 'cart' && behavior !== 'fav') {
        throw new EventLineError(`unknown behavior ${JSON.stringify(behavior)}`);
      }
      const itemId = itemOf(item);
      const time = parseTime(ts);
      const u = requiredKey(user, 'user');
      if (behavior === 'pv') return { kind: 'view', session: null, user: u, itemId, time, orderId: null };
      if (behavior === 'buy') return { kind: 'purchase', session: null, user: u, itemId, time, orderId: null };
      return null;
    },
  },
  // No clock: order ids are increasing in time per user, so (order id, position in cart) is the sequence.
  instacart: {
    name: 'instacart', mapping: 'instacart', expected: 'order_id,product_id,add_to_cart_order,reordered', delimiter: ',', header: true, minFields: 2,
    parse: ([order, product, position]) => {
      const o = requiredKey(order, 'order_id');
      const n = Number(o);
      if (!Number.isSafeInteger(n)) throw new EventLineError(`order_id must be an integer, got ${JSON.stringify(order)}`);
      const p = position === undefined || position === '' ? 0 : Number(position);
      if (!Number.isFinite(p)) throw new EventLineError(`add_to_cart_order must be a number, got ${JSON.stringify(position)}`);
      return { kind: 'purchase', session: null, user: null, itemId: itemOf(product), time: n * 1000 + p, orderId: o };
    },
  },
};

export function isPresetName(name: string): name is PresetName {
  return (PRESET_NAMES as readonly string[]).includes(name);
}

export function presetFormat(name: PresetName): EventFormat {
  return presets[name];
}

/**
 * The generic CSV format. Columns are header names, or 1-based positions (required with
 * `header: false`). Defaults: delimiter `,`, header true, every line a view.
 */
export interface CsvFormatOptions {
  item: string;
  session?: string;
  user?: string;
  time?: string;
  order?: string;
  /** The column telling the event kind; without it every line is `kind`. */
  event?: string;
  /** Values of the event column meaning a view (default `view`). */
  viewValues?: string[];
  /** Values of the event column meaning a purchase (default `purchase`, `buy`, `transaction`). */
  purchaseValues?: string[];
  /** The kind of every line when there is no event column (default `view`). */
  kind?: EventKind;
  delimiter?: string;
  header?: boolean;
}

/** A generic format; its column positions are resolved from the header line by `bindHeader`. */
export interface CsvFormat extends EventFormat {
  bindHeader(fields: string[]): void;
}

export function csvFormat(options: CsvFormatOptions): CsvFormat {
  const header = options.header ?? true;
  const names = { item: options.item, session: options.session, user: options.user, time: options.time, order: options.order, event: options.event };
  const pos: Record<keyof typeof names, number> = { item: -1, session: -1, user: -1, time: -1, order: -1, event: -1 };
  const resolve = (headerFields: string[] | null): void => {
    for (const [field, name] of Object.entries(names) as [keyof typeof names, string | undefined][]) {
      if (name !== undefined) pos[field] = columnIndex(name, headerFields, `--${field}`);
    }
  };
  if (!header) resolve(null);
  const views = new Set(options.viewValues ?? ['view']);
  const purchases = new Set(options.purchaseValues ?? ['purchase', 'buy', 'transaction']);
  let line = 0;
  const at = (fields: string[], p: number): string | undefined => (p < 0 ? undefined : fields[p]);
  const delimiter = options.delimiter ?? ',';
  const columns = Object.entries(names).filter(([, name]) => name !== undefined).map(([field, name]) => `--${field} ${name}`);
  // the defaults spelled out: a flag given with its default value reads the file the same way
  const mapping = [
    'csv', ...columns,
    ...(options.event === undefined ? [`--kind ${options.kind ?? 'view'}`] : [`--view-values ${[...views].join(',')}`, `--purchase-values ${[...purchases].join(',')}`]),
    `--delimiter ${delimiter === '\t' ? 'tab' : delimiter}`, ...(header ? [] : ['--no-header']),
  ].join(' ');
  return {
    name: 'csv', mapping, expected: `${columns.join(' ')} separated by ${JSON.stringify(delimiter)}${header ? ', with a header' : ''}`,
    delimiter, header, minFields: 1,
    bindHeader: (fields) => resolve(fields),
    parse: (fields) => {
      line++;
      let kind: EventKind = options.kind ?? 'view';
      if (pos.event >= 0) {
        const value = fields[pos.event] ?? '';
        if (views.has(value)) kind = 'view';
        else if (purchases.has(value)) kind = 'purchase';
        else return null;
      }
      const needed = Math.max(...Object.values(pos)) + 1;
      if (fields.length < needed) throw new EventLineError(`expected at least ${needed} fields, got ${fields.length}`);
      const itemId = itemOf(at(fields, pos.item));
      // Without a time column, the line number keeps the file's order.
      const time = pos.time >= 0 ? parseTime(at(fields, pos.time)) : line;
      const session = key(at(fields, pos.session));
      const user = key(at(fields, pos.user));
      const orderId = key(at(fields, pos.order));
      return { kind, session, user, itemId, time, orderId: kind === 'purchase' ? orderId : null };
    },
  };
}
