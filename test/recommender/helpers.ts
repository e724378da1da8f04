import { Catalog, EventLog } from '../../src/recommender/index.js';

/** A catalogue from short item specs; categoryPath defaults to Dept/Cat. */
export function catalogOf(items: { id: number; parent?: number; path?: string; stock?: string; variants?: number[] }[]): Catalog {
  const catalog = new Catalog();
  catalog.addRecords(items.map((i) => ({
    itemId: i.id, parentItemId: i.parent ?? i.id, name: `item ${i.id}`, categoryPath: i.path ?? 'Dept/Cat',
    stock: i.stock ?? 'Available', ...(i.variants === undefined ? {} : { variants: i.variants }),
  })));
  for (const i of items) if (catalog.get(i.id) === undefined) throw new Error(`item ${i.id} did not parse`);
  return catalog;
}

/** A log of view sessions (each an array of item ids) and purchase orders. */
export function logOf(sessions: number[][], orders: number[][] = []): EventLog {
  const log = new EventLog();
  let t = 1_700_000_000_000;
  sessions.forEach((items, s) => items.forEach((itemId) => log.add({ kind: 'view', session: `s${s}`, user: null, itemId, time: (t += 1000), orderId: null })));
  orders.forEach((items, o) => items.forEach((itemId) => log.add({ kind: 'purchase', session: null, user: null, itemId, time: (t += 1000), orderId: `o${o}` })));
  return log;
}

export function repeat<T>(n: number, make: (i: number) => T): T[] {
  return Array.from({ length: n }, (_, i) => make(i));
}
