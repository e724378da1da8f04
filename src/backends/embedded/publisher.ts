import { setImmediate as nextTurn } from 'node:timers/promises';
import type pg from 'pg';
import { isInStock } from '../../model/itemRecord.js';
import type { RecommendationEntryModel } from '../../ports/backend.js';
import { FILTERED_SCAN_LIMIT, MAX_RECOMMENDATIONS, SCAN_LIMIT } from '../../recommender/index.js';
import type { EmbeddedRecs } from './recs.js';
import type { ListRow, PublishedList } from './publishedLists.js';
import {
  bytesHash, CATEGORY_KIND, encodeCategory, encodeList, encodeRankings, itemsOfEvents, pathAnchor, LIST_KINDS, listHash, newestEventId, publishedHashes, publishRows,
  RANKINGS_KIND, readPublishState,
} from './publishedLists.js';

/** Candidates published per list for filters to pick from (RECS_PUBLISH_DEPTH's default). */
export const PUBLISH_DEPTH = 50;
/** Rows a publish transaction writes at most. */
const PUBLISH_ROWS = 2000;
/** How long a slice of a sweep holds the event loop. */
const SLICE_MS = 15;
/** Behind by more events than this, the items they name are left to the sweep. */
const PRIORITY_EVENTS = 50_000;
/** Behind the store by more than this, the follower is reading a backlog: lists made now would be made
 * again once it has, so a sweep waits for it (at most CATCH_UP_WAIT_MS). */
const CATCHING_UP_EVENTS = 10_000;
const CATCH_UP_WAIT_MS = 5000;
/** A learner with nothing to publish still says it is current this often. */
const HEARTBEAT_MS = 1000;
const TICK_MS = 50;
/** Rest between sweeps: what events named is published meanwhile, and the model's upkeep gets the loop. */
const SWEEP_GAP_MS = 1000;
/** Entries of each published ranking: a category's share of them is what a serve replica answers. */
const RANKING_DEPTH = 500;

export interface PublisherStats {
  rows: number;
  publishes: number;
  sweeps: number;
  lastSweepMs: number;
  lastPublishAt: number | null;
}

/** The active learner's half of the roles: after every change of the model, the lists it changed go to
 * recs_published_lists. The items the new events name go first; a sweep then compares every anchor's
 * lists with what was published (by hash), since a popularity fill can change lists no event named. */
export class Publisher {
  private hashes: Map<number, number>[] = Array.from({ length: CATEGORY_KIND + LIST_KINDS.length }, () => new Map<number, number>());
  private lockPid: number | null = null;
  private changes = 0;
  private swept = -1;
  private sweptAt = 0;
  private publishedEventId = 0;
  private timer: NodeJS.Timeout | null = null;
  private running = false;
  /** The publish under way: the next starts after it (versions in order), the sweep computes meanwhile. */
  private inFlight: Promise<void> = Promise.resolve();
  private waitingSince: number | null = null;
  /** Why the last attempt failed, until a sweep succeeds: meanwhile the learner never says its lists are current. */
  private failing: string | null = null;
  readonly stats: PublisherStats = { rows: 0, publishes: 0, sweeps: 0, lastSweepMs: 0, lastPublishAt: null };

  constructor(
    private readonly recs: EmbeddedRecs,
    private readonly pool: pg.Pool,
    private readonly names: { lockKey: string; channel: string },
    private readonly say: (line: string) => void,
    private readonly depth = PUBLISH_DEPTH,
  ) {
    recs.onChange(() => this.changes++);
  }

  get active(): boolean {
    return this.lockPid !== null;
  }

  /** The lock is ours (held by session `pid`): publish what differs from the table, then follow. */
  async activate(pid: number): Promise<void> {
    this.hashes = await publishedHashes(this.pool);
    // the events the last learner applied but may not have published go first
    this.publishedEventId = Math.min((await readPublishState(this.pool, this.names.lockKey)).publishedEventId, this.recs.applied.lastEventId);
    this.lockPid = pid;
    this.swept = -1;
    this.timer ??= setInterval(() => void this.tick(), TICK_MS);
    this.timer.unref();
  }

  deactivate(): void {
    this.lockPid = null;
  }

  private async tick(): Promise<void> {
    if (this.running || this.lockPid === null) return;
    this.running = true;
    try {
      // an empty store's demo shop has no records in the store: no replica could answer its lists
      if (this.recs.demo) return await this.heartbeat();
      await this.priority();
      if (this.changes !== this.swept && Date.now() - this.sweptAt >= SWEEP_GAP_MS && !(await this.catchingUp())) await this.sweep();
      else await this.heartbeat();
    } catch (error) {
      const message = (error as Error).message;
      if (message !== this.failing) this.say(`learner: cannot publish lists: ${message} (a sweep is tried again every ${SWEEP_GAP_MS} ms)`);
      this.failing = message;
      this.swept = -1;
      this.sweptAt = Date.now();
    } finally {
      this.running = false;
    }
  }

  /** With nothing else published for HEARTBEAT_MS, the word that the lists are current. */
  private async heartbeat(): Promise<void> {
    if (Date.now() - (this.stats.lastPublishAt ?? 0) >= HEARTBEAT_MS) await this.publishNext([]);
  }

  /** Whether the model is far behind the store's events, and has not been for long: the follower reads them now. */
  private async catchingUp(): Promise<boolean> {
    return this.waitsFor(this.recs.readingBacklog || (await newestEventId(this.pool)) - this.recs.applied.lastEventId > CATCHING_UP_EVENTS);
  }

  private waitsFor(behind: boolean): boolean {
    if (!behind) this.waitingSince = null;
    else this.waitingSince ??= Date.now();
    return behind && Date.now() - this.waitingSince! < CATCH_UP_WAIT_MS;
  }

  /** The lists of the items the events applied since the last publish name; more events than
   * PRIORITY_EVENTS (or a learner just taking over, or the first pages of a backlog the follower is
   * reading) are left to a sweep, which says it has them. */
  private async priority(): Promise<void> {
    const head = this.recs.applied.lastEventId;
    const from = this.publishedEventId;
    if (head <= from) return;
    if (head - from > PRIORITY_EVENTS || from === 0 || (head - from > CATCHING_UP_EVENTS && await this.catchingUp())) {
      this.sweptAt = 0;
      this.swept = -1;
      return;
    }
    const anchors = await itemsOfEvents(this.pool, from, head);
    const rows: ListRow[] = [];
    for (const anchor of anchors) this.rowsOf(anchor, rows);
    await this.publishNext(rows, head);
  }

  /** Every anchor's lists and the rankings, compared with what was published, in slices between other work. */
  private async sweep(): Promise<void> {
    const t0 = performance.now();
    const head = this.recs.applied.lastEventId;
    this.swept = this.changes;
    const ids = Array.from(this.recs.catalog.values(), (item) => item.itemId);
    const rows: ListRow[] = [];
    this.rankingsRow(rows);
    this.categoryRows(rows);
    let at = 0;
    let publishing: Promise<void> = Promise.resolve();
    while (at < ids.length && this.lockPid !== null) {
      // a backlog arrived meanwhile: what is left would be made again after it, so the sweep starts again then
      if (this.recs.applied.lastEventId - head > CATCHING_UP_EVENTS && this.waitsFor(this.recs.readingBacklog)) {
        await publishing;
        this.swept = -1;
        return;
      }
      const end = performance.now() + SLICE_MS;
      while (at < ids.length && performance.now() < end && rows.length < PUBLISH_ROWS) this.rowsOf(ids[at++]!, rows);
      if (rows.length >= PUBLISH_ROWS) {
        // one batch written while the next is made; a failure stops the sweep
        await publishing;
        publishing = this.publishNext(rows.splice(0));
        publishing.catch(() => undefined); // awaited below, unless a step before throws first
      }
      await nextTurn();
      // events that came meanwhile are not kept waiting for the rest of the sweep
      await this.priority();
    }
    await publishing;
    await this.publishNext(rows, Math.max(head, this.publishedEventId));
    this.stats.sweeps++;
    this.stats.lastSweepMs = performance.now() - t0;
    this.sweptAt = Date.now();
    if (this.failing !== null) this.say('learner: publishing lists again');
    this.failing = null;
  }

  private rowsOf(anchor: number, rows: ListRow[]): void {
    for (let kind = 0; kind < LIST_KINDS.length; kind++) {
      let list: PublishedList;
      try {
        const name = LIST_KINDS[kind]!;
        const deep = this.recs.candidatesNow(name, anchor, this.depth);
        list = { top: this.topOf(deep) ?? this.recs.recommendNow(name, anchor).entries, deep, anchored: this.recs.anchoredNow(name, anchor) ?? undefined };
      } catch {
        continue; // no record (yet): no list to publish
      }
      const hash = listHash(list);
      if (this.hashes[kind]!.get(anchor) !== hash) rows.push({ kind, anchor, hash, bytes: encodeList(list) });
    }
  }

  /** The list of MAX_RECOMMENDATIONS where the deep one's first are all in stock: the lookup takes the
   * same candidates in the same order until that many in stock fill it, whatever its limit. */
  private topOf(deep: RecommendationEntryModel[]): RecommendationEntryModel[] | null {
    if (deep.length < MAX_RECOMMENDATIONS) return null;
    const catalog = this.recs.catalog;
    for (let i = 0; i < MAX_RECOMMENDATIONS; i++) {
      const item = catalog.get(deep[i]!.itemId);
      if (item === undefined || !isInStock(item)) return null;
    }
    return deep.slice(0, MAX_RECOMMENDATIONS);
  }

  /** Every category path the catalogue names (and each of its parents, and '' for all items): its items by popularity, each kind. */
  private categoryRows(rows: ListRow[]): void {
    const paths = new Set<string>(['']);
    for (const item of this.recs.catalog.values()) {
      const parts = item.categoryPath?.split('/') ?? [];
      for (let n = 1; n <= parts.length; n++) paths.add(parts.slice(0, n).join('/'));
    }
    for (const path of paths) {
      const anchor = pathAnchor(path);
      for (let k = 0; k < LIST_KINDS.length; k++) {
        // as deep as a filtered lookup walks the tier: a filter few items pass still finds its ten
        const bytes = encodeCategory(path, this.recs.rankedUnderNow(LIST_KINDS[k]!, path, path === '' ? FILTERED_SCAN_LIMIT : SCAN_LIMIT));
        const hash = bytesHash(bytes);
        if (this.hashes[CATEGORY_KIND + k]!.get(anchor) !== hash) rows.push({ kind: CATEGORY_KIND + k, anchor, hash, bytes });
      }
    }
  }

  private rankingsRow(rows: ListRow[]): void {
    const { trending, popular } = this.recs.rankingsNow(RANKING_DEPTH);
    const bytes = encodeRankings({ trending, popular });
    const hash = bytesHash(bytes);
    if (this.hashes[RANKINGS_KIND]!.get(0) !== hash) rows.push({ kind: RANKINGS_KIND, anchor: 0, hash, bytes });
  }

  /** Publishes `rows` once the publish under way is done. */
  private publishNext(rows: ListRow[], eventId?: number): Promise<void> {
    const next = this.inFlight.then(() => this.publish(rows, eventId));
    this.inFlight = next.catch(() => undefined);
    return next;
  }

  /** Publishes `rows` (none: a heartbeat), with the event they reflect; a learner that lost the lock stops. */
  private async publish(rows: ListRow[], eventId = this.publishedEventId): Promise<void> {
    const pid = this.lockPid;
    if (pid === null) return;
    const version = await publishRows(this.pool, this.names, pid, rows, eventId, this.failing === null);
    if (version === null) {
      this.say('learner: the learner lock is no longer held by this process: publishing stops');
      this.lockPid = null;
      return;
    }
    for (const row of rows) this.hashes[row.kind]!.set(row.anchor, row.hash);
    this.publishedEventId = Math.max(this.publishedEventId, eventId);
    this.stats.rows += rows.length;
    this.stats.publishes++;
    if (this.failing === null) this.stats.lastPublishAt = Date.now();
  }

  async close(): Promise<void> {
    this.lockPid = null;
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    while (this.running) await new Promise((r) => setTimeout(r, 10));
  }
}
