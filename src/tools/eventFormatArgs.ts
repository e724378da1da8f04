import type { ParseArgsConfig } from 'node:util';
import { PRESET_NAMES, csvFormat, isPresetName, presetFormat } from './eventFormats.js';
import type { EventFormat } from './eventFormats.js';

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

/** The format named by the flags; throws an Error with a usage message when they do not add up. */
export function formatFromArgs(values: FormatValues): EventFormat {
  const name = values.format;
  if (name === undefined) throw new Error(`--format is required: one of ${[...PRESET_NAMES, 'csv'].join(', ')}`);
  if (isPresetName(name)) return presetFormat(name);
  if (name !== 'csv') throw new Error(`unknown format ${JSON.stringify(name)}: one of ${[...PRESET_NAMES, 'csv'].join(', ')}`);
  if (values.item === undefined) throw new Error('--format csv needs --item COLUMN');
  const kind = values.kind;
  if (kind !== undefined && kind !== 'view' && kind !== 'purchase') throw new Error('--kind is view or purchase');
  const delimiter = values.delimiter === '\\t' || values.delimiter === 'tab' ? '\t' : values.delimiter;
  return csvFormat({
    item: values.item, session: values.session, user: values.user, time: values.time, order: values.order, event: values.event,
    viewValues: list(values['view-values']), purchaseValues: list(values['purchase-values']),
    kind, delimiter, header: values['no-header'] !== true,
  });
}
