import { ITEM_ID_RANGE, toItemId } from '../model/itemRecord.js';
import type { EventKind, RecEvent } from '../recommender/index.js';
import { columnIndex } from './delimited.js';

/** A line that cannot be read as an event: reported with its line number and skipped. */
export class EventLineError extends Error {}

export interface EventFormat {
  name: string;
  /** The format with every choice of columns: an import is known by it and the content, as another reading is another import. */
  mapping: string;
  /** The lines it expects, for a message about a file it cannot read. */
  expected: string;
  delimiter: string;
  header: boolean;
  minFields: number;
  /** The event of a line; null for a well-formed non-view, non-purchase line; EventLineError if malformed. */
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

/** ms from digits (epoch seconds below 1e11, ms above; the two never meet in real logs) or ISO 8601. */
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

/** Diginetica: session day plus ms offset. Offsets running past the day would date purchases months
 * ahead and age every other event, so they are kept within the session's day. */
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

/** The generic CSV format: columns by header name or 1-based position; defaults `,`, a header, every line a view. */
export interface CsvFormatOptions {
  item: string;
  session?: string;
  user?: string;
  time?: string;
  order?: string;
  event?: string;
  viewValues?: string[];
  purchaseValues?: string[];
  kind?: EventKind;
  delimiter?: string;
  header?: boolean;
}

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
      // without a time column, the line number keeps the file's order
      const time = pos.time >= 0 ? parseTime(at(fields, pos.time)) : line;
      const session = key(at(fields, pos.session));
      const user = key(at(fields, pos.user));
      const orderId = key(at(fields, pos.order));
      return { kind, session, user, itemId, time, orderId: kind === 'purchase' ? orderId : null };
    },
  };
}
