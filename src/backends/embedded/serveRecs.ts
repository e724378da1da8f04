import DataLoader from 'dataloader';
import { LRUCache } from 'lru-cache';
import pg from 'pg';
import { badUserInput, notFound } from '../../errors.js';
import { checkListFirst, underCategory } from '../../model/itemLists.js';
import { parseStoredRecord } from '../../model/itemRecord.js';
import type {
  CallOptions, ForYouListModel, ItemModel, ItemRankingModel, RecommendationFilterModel, RecommendationKind, RecommendationListModel, RecsNow, RecsService, ShopperModel,
} from '../../ports/backend.js';
import type { PublishedList, PublishedRankings, PublishState } from './publishedLists.js';
import { fillEntry, fillPaths, FilteredPick } from './serveFilter.js';
import { serveForYou, shopperHistory } from './serveForYou.js';
import { CATEGORY_KIND, changedSince, decodeCategory, decodeList, decodeRankings, LIST_KINDS, pathAnchor, RANKINGS_KIND, readPublishState, readRows } from './publishedLists.js';

/** Lists and item records a serve replica keeps (RECS_SERVE_CACHE_ENTRIES' default): its memory, whatever the store holds. */
export const SERVE_CACHE_ENTRIES = 50_000;
/** How often a replica compares the publish version with its own, notices or not. */
export const SYNC_INTERVAL_MS = 1000;
const MAX_IDS = 100;
/** Syncs whose changes a read in flight is checked against; one begun before them keeps nothing. */
const CHANGE_RING = 64;
/** An item asked for that has no record: kept, as a record's arrival is seen by its sequence. */
const NO_RECORD = Symbol('no record');
/** A list not published (an anchor newer than the learner's last publish): an empty list until it is. */
const UNPUBLISHED: PublishedList = { top: [], deep: [] };

const kindCode = (kind: RecommendationKind): number => LIST_KINDS.indexOf(kind);

/** A serve replica's recommendations: no model; lists as the learner published them (recs_published_lists),
 * item records from the store, both in an LRU that a NOTIFY at each publish (and a poll of the version
 * every SYNC_INTERVAL_MS, for a notice missed) empties of what changed. */
export class ServeRecs implements RecsService {
  private readonly lists: LRUCache<string, PublishedList>;
  private readonly items: LRUCache<number, ItemModel | typeof NO_RECORD>;
  private rankings: PublishedRankings | null = null;
  /** Bumped by every sync that changed something; `changes` holds what each of the last CHANGE_RING changed:
   * a read begun before one keeps what it read only where that sync left its key alone. */
  private epoch = 0;
  private readonly changes: { epoch: number; keys: Set<string | number> }[] = [];
  private state: PublishState = { version: 0, publishedAt: null, publishedEventId: 0, itemSeq: 0, learnerActive: false };
  private syncing: Promise<void> | null = null;
  private again = false;
  private timer: NodeJS.Timeout | null = null;
  private listener: pg.Client | null = null;
  private closed = false;
  private readonly changeListeners: (() => void)[] = [];
  syncError: string | null = null;

  constructor(
    private readonly pool: pg.Pool,
    private readonly options: {
      connectionString: string; names: { lockKey: string; channel: string }; entries?: number; say?: (line: string) => void;
      /** RECS_EVENTS_MAX_AGE_DAYS in ms (0: none): a shopper's events older than the learner's window are not anchors. */
      maxAgeMs?: number;
    },
  ) {
    const max = options.entries ?? SERVE_CACHE_ENTRIES;
    this.lists = new LRUCache({ max });
    this.items = new LRUCache({ max });
    // the misses of one turn (of every request under way) share one query
    this.rows = new DataLoader((keys) => this.readRowsOf(keys), { cache: false, maxBatchSize: 1000 });
    this.records = new DataLoader((ids) => this.readRecords(ids), { cache: false, maxBatchSize: 1000 });
  }

  private readonly rows: DataLoader<string, Buffer | undefined>;
  private readonly records: DataLoader<number, ItemModel | null>;

  private async readRowsOf(keys: readonly string[]): Promise<(Buffer | undefined)[]> {
    const found = await readRows(this.pool, keys.map((key) => {
      const [kind, anchor] = key.split(':');
      return { kind: Number(kind), anchor: Number(anchor) };
    }));
    return keys.map((key) => found.get(key));
  }

  private async readRecords(ids: readonly number[]): Promise<(ItemModel | null)[]> {
    const { rows } = await this.pool.query<{ item_id: string; record: string }>('SELECT item_id, record FROM recs_items WHERE item_id = ANY($1::bigint[])', [ids]);
    const found = new Map(rows.map((r) => [Number(r.item_id), parseStoredRecord(r.record)]));
    return ids.map((id) => found.get(id) ?? null);
  }

  /** Reads where the publisher is; from then on, follows it. Nothing of the store's size is read. */
  async start(): Promise<void> {
    this.state = await readPublishState(this.pool, this.options.names.lockKey);
    this.timer = setInterval(() => void this.sync(), SYNC_INTERVAL_MS);
    this.timer.unref();
    await this.listen();
  }

  get published(): PublishState {
    return this.state;
  }

  onChange(listener: () => void): void {
    this.changeListeners.push(listener);
  }

  private async listen(): Promise<void> {
    if (this.closed) return;
    const client = new pg.Client({ connectionString: this.options.connectionString });
    const lost = (): void => {
      if (this.listener !== client) return;
      this.listener = null;
      void client.end().catch(() => undefined);
      // the poll covers what is published meanwhile
      if (!this.closed) setTimeout(() => void this.listen().catch(() => undefined), SYNC_INTERVAL_MS).unref();
    };
    client.on('error', lost);
    client.on('end', lost);
    client.on('notification', () => void this.sync());
    this.listener = client;
    try {
      await client.connect();
      await client.query(`LISTEN ${this.options.names.channel}`);
    } catch {
      lost();
    }
  }

  /** Drops what was published or stored since the last sync; calls share one, and one asked for meanwhile runs after. */
  sync(): Promise<void> {
    if (this.syncing !== null) {
      this.again = true;
      return this.syncing;
    }
    this.syncing = this.syncOnce().finally(() => {
      this.syncing = null;
      if (this.again && !this.closed) {
        this.again = false;
        void this.sync();
      }
    });
    return this.syncing;
  }

  private async syncOnce(): Promise<void> {
    if (this.closed) return;
    try {
      const now = await readPublishState(this.pool, this.options.names.lockKey);
      const changed = new Set<string | number>();
      const fresh = new Map<string | number, PublishedList | ItemModel | null>();
      let clearLists = false;
      if (now.version > this.state.version) {
        const max = this.lists.max;
        const rows = await changedSince(this.pool, this.state.version, max + 1);
        clearLists = rows.length > max;
        // the lists this replica holds are read again in one query, so that a changed list costs no
        // request a round trip; rankings and category rows are read when asked for
        const held = clearLists ? [] : rows.filter(({ kind, anchor }) => kind < RANKINGS_KIND && this.lists.has(`${kind}:${anchor}`));
        const read = held.length > 0 ? await readRows(this.pool, held) : new Map<string, Buffer>();
        for (const { kind, anchor } of rows) {
          const key = `${kind}:${anchor}`;
          changed.add(key);
          const bytes = read.get(key);
          if (bytes !== undefined) fresh.set(key, decodeList(bytes));
        }
        if (changed.has(`${RANKINGS_KIND}:0`) || clearLists) this.rankings = null;
      }
      if (now.itemSeq > this.state.itemSeq) {
        const { rows } = await this.pool.query<{ item_id: string }>('SELECT item_id FROM recs_items WHERE seq > $1', [this.state.itemSeq]);
        for (const row of rows) changed.add(Number(row.item_id));
        // the records held, read again (an import may change millions: the others are read when asked for)
        const held = rows.map((row) => Number(row.item_id)).filter((id) => this.items.has(id));
        const records = held.length > 0 ? await this.readRecords(held) : [];
        held.forEach((id, i) => fresh.set(id, records[i] ?? null));
      }
      this.state = now;
      this.syncError = null;
      if (changed.size > 0 || clearLists) this.applyChanges(changed, fresh, clearLists);
    } catch (error) {
      this.syncError = (error as Error).message;
    }
  }

  /** What a sync (or this replica's own write) changed: held entries take their new value, and reads
   * begun before it keep nothing of these keys. */
  private applyChanges(changed: Set<string | number>, fresh: Map<string | number, PublishedList | ItemModel | null>, clearLists = false): void {
    this.epoch++;
    this.changes.push({ epoch: this.epoch, keys: changed });
    if (this.changes.length > CHANGE_RING) this.changes.shift();
    if (clearLists) this.lists.clear();
    for (const key of changed) {
      const value = fresh.get(key);
      if (typeof key === 'number') {
        if (value === undefined) this.items.delete(key);
        else this.items.set(key, (value as ItemModel | null) ?? NO_RECORD);
      } else if (value === undefined || value === null) this.lists.delete(key);
      else this.lists.set(key, value as PublishedList);
    }
    for (const listener of this.changeListeners) listener();
  }

  /** Whether a read begun at `epoch` may keep what it read of `key`: no sync since changed it. */
  private keeps(key: string | number, epoch: number): boolean {
    if (epoch === this.epoch) return true;
    if (this.changes.length === 0 || this.changes[0]!.epoch > epoch + 1) return false;
    return this.changes.every((change) => change.epoch <= epoch || !change.keys.has(key));
  }

  /** Records this replica stored itself: dropped at once, before its call is answered. */
  forgetItems(itemIds: readonly number[]): void {
    this.applyChanges(new Set(itemIds), new Map());
  }

  async getItems(ids: readonly number[], _options?: CallOptions): Promise<(ItemModel | null)[]> {
    if (ids.length > MAX_IDS) throw badUserInput(`At most ${MAX_IDS} item ids a call, got ${ids.length}`, 'ids');
    const missing = [...new Set(ids.filter((id) => !this.items.has(id)))];
    if (missing.length > 0) {
      const epoch = this.epoch;
      const found = await this.records.loadMany(missing);
      const answer = new Map<number, ItemModel | null>();
      missing.forEach((id, i) => {
        const item = found[i];
        if (item instanceof Error) throw item;
        answer.set(id, item ?? null);
        if (this.keeps(id, epoch)) this.items.set(id, item ?? NO_RECORD);
      });
      return ids.map((id) => (answer.has(id) ? answer.get(id)! : this.itemNow(id)));
    }
    return ids.map((id) => this.itemNow(id));
  }

  /** How many of `itemIds` have no record, as the records held say (the model's catalogue answers it so), the rest read. */
  async countWithoutRecord(itemIds: readonly number[]): Promise<number> {
    let missing = 0;
    for (let at = 0; at < itemIds.length; at += MAX_IDS) {
      for (const item of await this.getItems(itemIds.slice(at, at + MAX_IDS))) if (item === null) missing++;
    }
    return missing;
  }

  private itemNow(id: number): ItemModel | null {
    const item = this.items.get(id);
    return item === undefined || item === NO_RECORD ? null : item;
  }

  async list(kind: RecommendationKind, anchorId: number): Promise<PublishedList> {
    const key = `${kindCode(kind)}:${anchorId}`;
    const kept = this.lists.get(key);
    if (kept !== undefined) return kept;
    const epoch = this.epoch;
    const row = await this.rows.load(key);
    const list = row === undefined ? UNPUBLISHED : decodeList(row);
    if (this.keeps(key, epoch)) this.lists.set(key, list);
    return list;
  }

  async recommend(kind: RecommendationKind, anchorId: number, options?: CallOptions, filter: RecommendationFilterModel | null = null): Promise<RecommendationListModel> {
    const [[anchor], list] = await Promise.all([this.getItems([anchorId], options), this.list(kind, anchorId)]);
    if (anchor === null) throw notFound(`No item with itemId ${anchorId}`);
    if (filter === null) return this.answer(kind, anchorId, list.top, await this.getItems(list.top.map((e) => e.itemId), options));
    const pick = new FilteredPick(anchor!, filter);
    const records = await this.getItems(list.deep.map((e) => e.itemId), options);
    for (let i = 0; i < list.deep.length && !pick.done(); i++) pick.offer(list.deep[i]!, records[i]);
    // too few of the candidates pass: filled from the published tiers, a page of records at a time
    const tiers = fillPaths(anchor!, filter);
    for (const [t, [path, source]] of tiers.entries()) {
      const last = t === tiers.length - 1;
      const ids = await this.tierIds(kind, path);
      for (let at = 0; at < ids.length && !pick.done(last, at); at += MAX_IDS) {
        const page = ids.slice(at, at + MAX_IDS);
        const found = await this.getItems(page, options);
        for (let i = 0; i < page.length && !pick.done(last, at + i); i++) pick.offer(fillEntry(page[i]!, source), found[i]);
      }
    }
    return pick.result(kind);
  }

  /** The unfiltered list with its records (those without one left out). */
  private answer(kind: RecommendationKind, anchorId: number, candidates: PublishedList['top'], records: readonly (ItemModel | null)[]): RecommendationListModel {
    const items = records.filter((item): item is ItemModel => item !== null);
    const entries = candidates.filter((_, i) => records[i] !== null).map((e, i) => ({ ...e, rank: i + 1 }));
    return { anchorId, kind, entries, items };
  }

  async tierIds(kind: RecommendationKind, path: string): Promise<readonly number[]> {
    const key = this.fillKey(kind, path);
    const kept = this.lists.get(key);
    if (kept !== undefined) return kept.ids ?? [];
    const epoch = this.epoch;
    const row = await this.rows.load(key);
    const list = row === undefined ? UNPUBLISHED : decodeCategory(row, path);
    if (this.keeps(key, epoch)) this.lists.set(key, list);
    return list.ids ?? [];
  }

  /** The answers now from what is kept, for the response cache's recheck; throws where something is not kept. */
  readonly now: RecsNow = {
    item: (itemId) => this.itemNow(itemId),
    recommend: (kind, anchorId, filter = null) => {
      const list = this.lists.peek(`${kindCode(kind)}:${anchorId}`);
      const anchor = this.itemNow(anchorId);
      if (list === undefined || anchor === null) throw new Error('not kept');
      const kept = (id: number): ItemModel | null => {
        if (!this.items.has(id)) throw new Error('not kept');
        return this.itemNow(id);
      };
      if (filter === null) return this.answer(kind, anchorId, list.top, list.top.map((e) => kept(e.itemId)));
      const pick = new FilteredPick(anchor, filter);
      for (let i = 0; i < list.deep.length && !pick.done(); i++) pick.offer(list.deep[i]!, kept(list.deep[i]!.itemId));
      const tiers = fillPaths(anchor, filter);
      for (const [t, [path, source]] of tiers.entries()) {
        const ids = this.lists.peek(this.fillKey(kind, path))?.ids;
        if (ids === undefined) throw new Error('not kept');
        for (let i = 0; i < ids.length && !pick.done(t === tiers.length - 1, i); i++) pick.offer(fillEntry(ids[i]!, source), kept(ids[i]!));
      }
      return pick.result(kind);
    },
  };

  private fillKey(kind: RecommendationKind, categoryPath: string): string {
    return `${CATEGORY_KIND + kindCode(kind)}:${pathAnchor(categoryPath)}`;
  }

  private async rankingsNow(): Promise<PublishedRankings> {
    if (this.rankings !== null) return this.rankings;
    const epoch = this.epoch;
    const row = await this.rows.load(`${RANKINGS_KIND}:0`);
    const rankings: PublishedRankings = row === undefined ? { trending: [], popular: { POST_BROWSE: [], NEXT_BEST_PRODUCT: [] } } : decodeRankings(row);
    if (this.keeps(`${RANKINGS_KIND}:0`, epoch)) this.rankings = rankings;
    return rankings;
  }

  /** A published ranking's entries under `categoryPath`: its share of the published depth. */
  private async ranked(entries: readonly { itemId: number; score: number | null }[], categoryPath: string | null, first: number): Promise<ItemRankingModel> {
    const n = checkListFirst(first);
    const out: ItemRankingModel = { entries: [], items: [] };
    for (let at = 0; at < entries.length && out.entries.length < n; at += MAX_IDS) {
      const page = entries.slice(at, at + MAX_IDS);
      const records = await this.getItems(page.map((e) => e.itemId));
      page.forEach((entry, i) => {
        const item = records[i];
        if (item === null || item === undefined || out.entries.length >= n) return;
        if (categoryPath !== null && !underCategory(item.categoryPath, categoryPath)) return;
        out.entries.push({ itemId: entry.itemId, score: entry.score });
        out.items!.push(item);
      });
    }
    return out;
  }

  async trending(categoryPath: string | null, first: number, _options?: CallOptions): Promise<ItemRankingModel> {
    checkListFirst(first);
    return this.ranked((await this.rankingsNow()).trending, categoryPath, first);
  }

  async popular(kind: RecommendationKind, categoryPath: string | null, first: number, _options?: CallOptions): Promise<ItemRankingModel> {
    checkListFirst(first);
    return this.ranked((await this.rankingsNow()).popular[kind], categoryPath, first);
  }

  /** The shopper's latest events read from the store at each call (another replica's show at once), the lists they
   * anchor as published: the learner's answer for the same events and lists. */
  async forYou(shopper: ShopperModel, first: number, _options?: CallOptions, filter: RecommendationFilterModel | null = null): Promise<ForYouListModel> {
    const n = checkListFirst(first);
    return serveForYou(this, await shopperHistory(this.pool, shopper, this.options.maxAgeMs ?? 0), n, filter);
  }

  /** What the replica holds: bounded by its cache, whatever the store's size. */
  get kept(): { lists: number; items: number } {
    return { lists: this.lists.size, items: this.items.size };
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer !== null) clearInterval(this.timer);
    const listener = this.listener;
    this.listener = null;
    await listener?.end().catch(() => undefined);
    await this.syncing?.catch(() => undefined);
  }
}
