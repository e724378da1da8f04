import type { ItemModel, RecommenderStateModel } from '../../ports/backend.js';
import { parseStoredRecord } from '../../model/itemRecord.js';
import type { RecEvent } from '../../recommender/index.js';
import type { EventRow, RecsDataStore, StoreHead } from './liveStore.js';
import { rowToRecEvent } from './liveStore.js';

const FOLLOW_PAGE = 20_000;
/** Behind by more events than this and than a RELOAD_SHARE of those it holds, a follower reloads whole in a
 * worker rather than apply them on its event loop. */
export const FULL_RELOAD_EVENTS = 200_000;
/** A whole reload reads every event held again, mostly PostgreSQL's work, shared by every replica (26 s at
 * 10M events held, where applying a backlog of 500,000 took 17.5 s): a backlog under a fifth of that is applied. */
const RELOAD_SHARE = 5;

/** Behind by more events than this, a follower holding `held` events reloads whole. */
export const reloadBound = (held: number): number => Math.max(FULL_RELOAD_EVENTS, held / RELOAD_SHARE);

/** What the follower sees of the recommender it keeps current. */
export interface FollowHost {
  /** The point of the store applied; the follower moves it on. */
  head(): StoreHead;
  mode(): RecommenderStateModel['mode'];
  hasLive(): boolean;
  liveReady(): Promise<void>;
  reloading(): Promise<unknown> | null;
  reload(): Promise<unknown>;
  applyEvents(events: readonly RecEvent[]): void;
  applyItems(items: readonly ItemModel[]): void;
  closed(): boolean;
  /** The events the model holds: what a whole reload reads again. */
  heldEvents(): number;
}

/** Keeps a recommender current with its store: other processes' rows, and its own calls before they are answered. */
export class StoreFollower {
  private timer: NodeJS.Timeout | null = null;
  private polling: Promise<void> = Promise.resolve();
  private pollQueued: Promise<void> | null = null;
  error: string | null = null;
  /** True while a poll has another page of events to apply: a backlog is being read. */
  readingPages = false;

  /** `fullReloadEvents`: a fixed bound instead (tests). */
  constructor(readonly store: RecsDataStore, private readonly host: FollowHost, private readonly fullReloadEvents?: number) {}

  /** Applies a batch this process has just committed, before its call is answered: directly where
   * nothing stored by others lies before it, else by catching up, which keeps the store's order. */
  async applyOwnEvents(rows: readonly EventRow[]): Promise<void> {
    if (rows.length === 0) return;
    if (!this.host.hasLive()) await this.host.liveReady();
    if (this.host.reloading() === null && rows[0]![0] === this.host.head().lastEventId + 1) {
      this.host.applyEvents(rows.map(rowToRecEvent));
      this.host.head().lastEventId = rows[rows.length - 1]![0];
      return;
    }
    await this.catchUp({ lastEventId: rows[rows.length - 1]![0] });
  }

  async applyOwnItems(items: readonly ItemModel[], seq: number): Promise<void> {
    if (!this.host.hasLive() && this.host.mode() === 'store') await this.host.liveReady();
    if (this.host.mode() === 'store' && this.host.reloading() === null && seq === this.host.head().lastItemSeq + 1) {
      this.host.applyItems(items);
      this.host.head().lastItemSeq = seq;
      return;
    }
    // demo mode: the first records switch to the stored catalogue (a reload, see pollOnce)
    await this.catchUp({ lastItemSeq: seq });
  }

  /** Follows the store until it has applied `target`. Never fails: what it waits for is committed,
   * and its call answered as failed would be sent again and stored twice. */
  async catchUp(target: Partial<Pick<StoreHead, 'lastEventId' | 'lastItemSeq'>>): Promise<void> {
    for (let i = 0; i < 100 && !this.host.closed(); i++) {
      const head = this.host.head();
      if ((target.lastEventId ?? 0) <= head.lastEventId && (target.lastItemSeq ?? 0) <= head.lastItemSeq) return;
      try {
        await this.poll();
      } catch {
        return;
      }
    }
  }

  /** Applies what the store has beyond the applied point; polls are serialised, callers meanwhile share the next. */
  poll(): Promise<void> {
    this.pollQueued ??= this.polling.then(() => {
      this.pollQueued = null;
      return this.pollOnce();
    });
    this.polling = this.pollQueued.catch(() => undefined);
    return this.pollQueued;
  }

  private async pollOnce(): Promise<void> {
    const { store, host } = this;
    if (host.closed()) return;
    await host.reloading()?.catch(() => undefined);
    try {
      // an own batch may be applied while the head is read: only a head below what was applied
      // before asking means the store lost events
      const appliedBefore = host.head().lastEventId;
      const head = await store.head();
      const applied = host.head();
      const wholeReload = head.generation !== applied.generation
        || (host.mode() === 'demo' && head.lastItemSeq > applied.lastItemSeq)
        || head.lastEventId - applied.lastEventId > (this.fullReloadEvents ?? reloadBound(this.host.heldEvents()))
        || head.lastEventId < appliedBefore;
      if (wholeReload) {
        await host.reload();
        this.error = null;
        return;
      }
      if (!host.hasLive() && (head.lastItemSeq > applied.lastItemSeq || head.lastEventId > applied.lastEventId)) await host.liveReady();
      if (head.lastItemSeq > host.head().lastItemSeq) {
        const { seq, records } = await store.itemsAfter(host.head().lastItemSeq);
        if (seq > host.head().lastItemSeq && !host.closed()) {
          host.applyItems(records.map(parseStoredRecord));
          host.head().lastItemSeq = seq;
        }
      }
      let next = head.lastEventId > host.head().lastEventId ? store.eventsAfter(host.head().lastEventId, FOLLOW_PAGE) : null;
      while (next !== null && !host.closed()) {
        const rows = await next;
        const last = rows.length === 0 ? 0 : rows[rows.length - 1]![0];
        // the next page is read while this one is applied
        next = rows.length === FOLLOW_PAGE && head.lastEventId > last ? store.eventsAfter(last, FOLLOW_PAGE) : null;
        next?.catch(() => undefined); // awaited above, unless this process stops first
        this.readingPages = next !== null;
        // an own batch applied meanwhile is at or below the applied id now
        let from = 0;
        while (from < rows.length && rows[from]![0] <= host.head().lastEventId) from++;
        if (from < rows.length) {
          host.applyEvents(rows.slice(from).map(rowToRecEvent));
          host.head().lastEventId = last;
        }
      }
      this.error = null;
    } catch (error) {
      this.error = (error as Error).message;
      throw error;
    } finally {
      this.readingPages = false;
    }
  }

  /** Polls every `intervalMs`; false when it follows already or `intervalMs` is 0. */
  follow(intervalMs: number, say: (line: string) => void): boolean {
    if (this.timer !== null || intervalMs <= 0) return false;
    let failing = false;
    const tick = (): void => {
      if (this.host.closed()) return;
      this.poll().then(
        () => {
          if (failing && !this.host.closed()) say(`recommender: following ${this.store.where} again`);
          failing = false;
        },
        (error: unknown) => {
          // a stop ends the load worker under way: that is no failure to follow the store
          if (this.host.closed()) return;
          if (!failing) say(`recommender: cannot follow ${this.store.where}, the model in use stays: ${(error as Error).message}`);
          failing = true;
        },
      );
    };
    this.timer = setInterval(tick, intervalMs);
    this.timer.unref();
    return true;
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }

  settled(): Promise<void> {
    return this.polling;
  }
}
