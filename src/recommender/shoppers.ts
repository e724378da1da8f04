import type { EventLog, RecEvent } from './eventLog.js';
import { KIND_PURCHASE, KIND_VIEW } from './eventLog.js';
import type { ShopperEvent } from './forYou.js';

/** Shoppers (sessions and users alike) whose latest events are kept, at most: past it the one idle longest goes. */
export const MAX_SHOPPERS = 100_000;
/** A shopper's latest events kept, at most: forYou reads the ten latest distinct items. */
export const MAX_SHOPPER_EVENTS = 30;

const sessionKey = (id: string): string => `s\u0000${id}`;
const userKey = (id: string): string => `u\u0000${id}`;

/** Each recent shopper's latest events, oldest first, kept as events come (recommendedForYou reads them): bounded in
 * shoppers and events a shopper, so memory follows neither traffic nor uptime. */
export class ShopperHistories {
  /** In order of last activity, the least recent first (a Map keeps insertion order). */
  private readonly byKey = new Map<string, ShopperEvent[]>();
  /** The newest event time seen: the window is measured back from it, as the model's is. */
  latest = -Infinity;

  constructor(private readonly maxShoppers = MAX_SHOPPERS, private readonly maxEvents = MAX_SHOPPER_EVENTS) {}

  get size(): number {
    return this.byKey.size;
  }

  /** The latest shoppers of a log, walked from its end: as if its events had been added one by one, but for a found
   * shopper's events from before the point where the latest maxShoppers were all found. */
  static fromLog(log: EventLog, since: number, maxShoppers = MAX_SHOPPERS, maxEvents = MAX_SHOPPER_EVENTS): ShopperHistories {
    const histories = new ShopperHistories(maxShoppers, maxEvents);
    // by the log's integer keys (a user's as -2 - key), named once a shopper: a string a shopper, not an event
    const found = new Map<number, ShopperEvent[]>();
    const take = (key: number, event: ShopperEvent): void => {
      let list = found.get(key);
      if (list === undefined) {
        if (found.size >= maxShoppers) return;
        found.set(key, (list = []));
      }
      if (list.length < maxEvents) list.push(event);
    };
    const { time, kind, session, user, item } = log;
    // stops once the latest maxShoppers are found: the walk follows them, not the log's length (their events older
    // than that point are not read)
    for (let e = log.length - 1; e >= 0 && found.size < maxShoppers; e--) {
      const t = time[e]!;
      if (t > histories.latest) histories.latest = t;
      if (t < since || (session[e]! < 0 && user[e]! < 0)) continue;
      const event = { itemId: log.items.idAt(item[e]!), kind: kind[e] === KIND_PURCHASE ? KIND_PURCHASE : KIND_VIEW, time: t };
      if (session[e]! >= 0) take(session[e]!, event);
      if (user[e]! >= 0) take(-2 - user[e]!, event);
    }
    // found holds the most recently active first; the Map wants them last. Each list was walked newest first:
    // reversed, events of one time keep store order, as `add` and a serve replica's read of the store give them
    for (const [key, list] of [...found].reverse()) {
      histories.byKey.set(key >= 0 ? sessionKey(log.sessionName(key)) : userKey(log.userName(-2 - key)), list.reverse().sort((a, b) => a.time - b.time));
    }
    return histories;
  }

  /** Events already applied to the model, in store order. */
  add(events: readonly RecEvent[]): void {
    for (const e of events) {
      if (e.time > this.latest) this.latest = e.time;
      const event = { itemId: e.itemId, kind: e.kind === 'purchase' ? KIND_PURCHASE : KIND_VIEW, time: e.time };
      if (e.session !== null) this.push(sessionKey(e.session), event);
      if (e.user !== null) this.push(userKey(e.user), event);
    }
  }

  private push(key: string, event: ShopperEvent): void {
    let list = this.byKey.get(key);
    if (list === undefined) list = [];
    else this.byKey.delete(key);
    this.byKey.set(key, list);
    if (this.byKey.size > this.maxShoppers) this.byKey.delete(this.byKey.keys().next().value!);
    // events come nearly in time order: insert from the end
    let at = list.length;
    while (at > 0 && list[at - 1]!.time > event.time) at--;
    list.splice(at, 0, event);
    if (list.length > this.maxEvents) list.shift();
  }

  /** The shopper's events since `since`, oldest first: the session's and the user's merged (an event of both once). */
  history(sessionId: string | null, userId: string | null, since: number): ShopperEvent[] {
    const ofSession = sessionId === null ? [] : this.byKey.get(sessionKey(sessionId)) ?? [];
    const ofUser = userId === null ? [] : this.byKey.get(userKey(userId)) ?? [];
    return mergeHistories(ofSession, ofUser, since);
  }
}

/** A session's and a user's latest events (each oldest first) as one history since `since`: an event of both once.
 * The live model's histories and a serve replica's reads of the store both end here. */
export function mergeHistories(ofSession: readonly ShopperEvent[], ofUser: readonly ShopperEvent[], since: number): ShopperEvent[] {
  const merged: ShopperEvent[] = [];
  let i = 0;
  let j = 0;
  while (i < ofSession.length || j < ofUser.length) {
    const a = ofSession[i];
    const b = ofUser[j];
    const next = b === undefined || (a !== undefined && a.time <= b.time) ? ofSession[i++]! : ofUser[j++]!;
    const last = merged[merged.length - 1];
    if (next.time < since || (last !== undefined && last.time === next.time && last.itemId === next.itemId && last.kind === next.kind)) continue;
    merged.push(next);
  }
  return merged;
}
