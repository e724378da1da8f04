import { seededRandom, zipf } from '../src/backends/embedded/demo.js';
import { EventLog, KIND_PURCHASE, KIND_VIEW } from '../src/recommender/index.js';

/** One synthetic event: kind (KIND_VIEW or KIND_PURCHASE), item id, integer keys (-1 none), time in ms. */
export type SyntheticSink = (kind: number, itemId: number, session: number, user: number, order: number, time: number) => void;

/**
 * Visits of 1-15 views over Zipf(0.9)-popular items, a third of them ending in an order of 1-3
 * items, one every ~10 minutes (20 s between views).
 */
export function syntheticEvents(events: number, items: number, seed: number, sink: SyntheticSink): void {
  const random = seededRandom(seed);
  const item = zipf(items, 0.9, random);
  let n = 0;
  let session = 0;
  let order = 0;
  let time = 1_700_000_000_000;
  while (n < events) {
    session++;
    const user = Math.floor(random() * (events / 20));
    // Items of a visit cluster around a "topic" so that there is co-occurrence structure to find.
    const topic = item();
    const views = 1 + Math.floor(random() * 15);
    for (let v = 0; v < views && n < events; v++, n++) {
      const id = random() < 0.6 ? ((topic + Math.floor(random() * 20)) % items) + 1 : item() + 1;
      sink(KIND_VIEW, id, session, user, -1, (time += 20_000));
    }
    if (random() < 0.33) {
      order++;
      const m = 1 + Math.floor(random() * 3);
      for (let p = 0; p < m && n < events; p++, n++) sink(KIND_PURCHASE, ((topic + Math.floor(random() * 40)) % items) + 1, session, user, order, (time += 5_000));
    }
    time += 600_000;
  }
}

/** syntheticEvents as a columnar log. */
export function syntheticLog(events: number, items: number, seed: number): EventLog {
  const log = new EventLog();
  syntheticEvents(events, items, seed, (kind, id, session, user, order, time) => log.addKeys(kind, id, session, user, order, time));
  return log;
}
