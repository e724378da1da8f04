import type { ParseArgsConfig } from 'node:util';
import { PRESET_NAMES, csvFormat, isPresetName, presetFormat } from './eventFormats.js';
import type { EventFormat } from './eventFormats.js';
import { catalogCsvFormat, type CatalogCsvFormat } from './catalogFormat.js';

/** The flags naming an event file's format, shared by `import events` and `evaluate`. */
export const formatOptions = {
  format: { type: 'string' },
  item: { type: 'string' },
  session: { type: 'string' },
  user: { type: 'string' },
  time: { type: 'string' },
  order: { type: 'string' },
  event: { type: 'string' },
  kind: { type: 'string' },
  'view-values': { type: 'string' },
  'purchase-values': { type: 'string' },
  delimiter: { type: 'string' },
  'no-header': { type: 'boolean' },
} as const satisfies ParseArgsConfig['options'];

export const FORMAT_HELP = `Formats (--format):
  retailrocket          events.csv: timestamp,visitorid,event,itemid,transactionid (view, transaction; addtocart ignored)
  diginetica-views      session_id;user_id;item_id;timeframe;eventdate
  diginetica-purchases  sessionId;userId;timeframe;eventdate;ordernumber;itemId
  yoochoose-clicks      session,timestamp,item,category (no header)
  yoochoose-buys        session,timestamp,item,price,quantity (no header; the session is the order)
  taobao                UserBehavior.csv: user,item,category,behavior,timestamp (pv, buy; cart, fav ignored; no header)
  instacart             order_products: order_id,product_id,add_to_cart_order,reordered (purchases; order id stands for time)
  csv                   any delimited file, columns named by header name or 1-based position:
    --item COL (required) --session COL --user COL --time COL --order COL
    --event COL [--view-values a,b] [--purchase-values c,d]   kind from a column (defaults: view; purchase,buy,transaction)
    --kind view|purchase                                       every line the same kind (default view)
    --delimiter CHAR (default ,)  --no-header
Times: epoch seconds or ms, or ISO 8601. Without sessions, a user's views are split at 30 minutes of inactivity.`;

type FormatValues = { [K in keyof typeof formatOptions]?: (typeof formatOptions)[K]['type'] extends 'boolean' ? boolean : string };

const list = (value: string | undefined): string[] | undefined => (value === undefined ? undefined : value.split(',').map((v) => v.trim()));

const delimiterOf = (value: string | undefined): string | undefined => (value === '\\t' || value === 'tab' ? '\t' : value);

/** The format named by the flags; throws with a usage message when they do not add up. */
export function formatFromArgs(values: FormatValues): EventFormat {
  const name = values.format;
  if (name === undefined) throw new Error(`--format is required: one of ${[...PRESET_NAMES, 'csv'].join(', ')}`);
  if (isPresetName(name)) return presetFormat(name);
  if (name !== 'csv') throw new Error(`unknown format ${JSON.stringify(name)}: one of ${[...PRESET_NAMES, 'csv'].join(', ')}`);
  if (values.item === undefined) throw new Error('--format csv needs --item COLUMN');
  const kind = values.kind;
  if (kind !== undefined && kind !== 'view' && kind !== 'purchase') throw new Error('--kind is view or purchase');
  return csvFormat({
    item: values.item, session: values.session, user: values.user, time: values.time, order: values.order, event: values.event,
    viewValues: list(values['view-values']), purchaseValues: list(values['purchase-values']),
    kind, delimiter: delimiterOf(values.delimiter), header: values['no-header'] !== true,
  });
}

/** `import catalog --format csv` flags beyond those shared with events. */
export const catalogFormatOptions = {
  name: { type: 'string' },
  parent: { type: 'string' },
  'category-node': { type: 'string' },
  'category-path': { type: 'string' },
  brand: { type: 'string' },
  price: { type: 'string' },
} as const satisfies ParseArgsConfig['options'];

export const CATALOG_FORMAT_HELP = `Catalogue formats (--format):
  json (default)        a JSON array of item records, an object with an "items" array, or JSON lines
  csv                   any delimited file, one item a line, columns named by header name or 1-based position:
    --item COL --name COL (required) --parent COL --brand COL --price COL (salePrice)
    --category-node COL[,COL...]   categoryNode: the columns' values joined with _, root first
    --category-path COL[,COL...]   categoryPath: the columns' values joined with /, root first
    --delimiter CHAR (default ,)  --no-header
  Instacart's products.csv: --format csv --item product_id --name product_name --category-node department_id,aisle_id`;

type CatalogValues = FormatValues & { [K in keyof typeof catalogFormatOptions]?: string };

const EVENT_ONLY = ['session', 'user', 'time', 'order', 'event', 'kind', 'view-values', 'purchase-values'] as const;
const CSV_ONLY = ['item', 'delimiter', 'no-header', ...Object.keys(catalogFormatOptions)] as (keyof CatalogValues)[];

/** The flags of one import that belong to the other (`--name` on events, `--session` on a catalogue); throws naming the first. */
export function refuseOtherFlags(values: CatalogValues, what: 'events' | 'catalog'): void {
  const others = what === 'events' ? Object.keys(catalogFormatOptions) : EVENT_ONLY;
  const given = others.find((flag) => values[flag as keyof CatalogValues] !== undefined);
  if (given !== undefined) throw new Error(`--${given} is a flag of import ${what === 'events' ? 'catalog' : 'events'}, not of import ${what}`);
}

/** A catalogue's csv format named by the flags; null for JSON. */
export function catalogFormatFromArgs(values: CatalogValues): CatalogCsvFormat | null {
  refuseOtherFlags(values, 'catalog');
  const name = values.format ?? 'json';
  if (name === 'json') {
    const given = CSV_ONLY.find((flag) => values[flag] !== undefined);
    if (given !== undefined) throw new Error(`--${given} reads a csv catalogue: add --format csv`);
    return null;
  }
  if (name !== 'csv') throw new Error(`unknown catalogue format ${JSON.stringify(name)}: json (the default) or csv`);
  if (values.item === undefined || values.name === undefined) throw new Error('--format csv needs --item COLUMN and --name COLUMN');
  return catalogCsvFormat({
    item: values.item, name: values.name, parent: values.parent, brand: values.brand, price: values.price,
    categoryNode: list(values['category-node']), categoryPath: list(values['category-path']),
    delimiter: delimiterOf(values.delimiter), header: values['no-header'] !== true,
  });
}
