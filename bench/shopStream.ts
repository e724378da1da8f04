/**
 * The shop's stream bench/uptime.ts and bench/compaction.ts send (not a test): a catalogue of
 * STREAM_ITEMS items in 40 categories, and each day's events in time order, deterministic: visits
 * of 5 views, one purchase in ten, sessions and orders named as a store names them.
 */
import { Catalog } from '../src/recommender/index.js';
import type { RecEvent } from '../src/recommender/index.js';
import { parseItemRecord } from '../src/model/itemRecord.js';

export const STREAM_ITEMS = 2_000;
const DAY = 86_400_000;

export function streamCatalog(): Catalog {
  const c = new Catalog();
  for (let i = 1; i <= STREAM_ITEMS; i++) c.add(parseItemRecord({ itemId: i, name: `item ${i}`, categoryPath: `Dept/Cat${i % 40}` }));
  return c;
}

/** Day `day`'s `perDay` events, in time order. */
export function streamDay(day: number, perDay: number): RecEvent[] {
  let s = 1 + day;
  const random = (): number => ((s = (s * 1103515245 + 12345) % 2147483648) / 2147483648);
  const start = Date.UTC(2026, 0, 1) + day * DAY;
  return Array.from({ length: perDay }, (_, i) => {
    const visit = day * perDay + i - (i % 5);
    const purchase = i % 10 === 9;
    return {
      kind: purchase ? 'purchase' : 'view', itemId: 1 + Math.floor(STREAM_ITEMS * random() * random()), time: start + Math.floor((i * DAY) / perDay),
      session: String(visit), user: purchase ? String(visit % 20_000) : null, orderId: purchase ? String(visit) : null,
    };
  });
}
