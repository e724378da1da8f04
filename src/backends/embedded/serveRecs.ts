import { LRUCache } from 'lru-cache';
import pg from 'pg';
import { badUserInput, notFound } from '../../errors.js';
import { checkListFirst, underCategory } from '../../model/itemLists.js';
import { isInStock, parseStoredRecord } from '../../model/itemRecord.js';
import { passesFilter } from '../../model/recommendationFilter.js';
import type {
  CallOptions, ItemModel, ItemRankingModel, RecommendationFilterModel, RecommendationKind, RecommendationListModel, RecommendationSource, RecsNow, RecsService,
} from '../../ports/backend.js';
import { MAX_RECOMMENDATIONS } from '../../recommender/index.js';
import { familyOf } from '../../recommender/catalog.js';
import type { PublishedList, PublishedRankings, PublishState } from './publishedLists.js';
import { CATEGORY_KIND, changedSince, decodeCategory, decodeList, LIST_KINDS, pathAnchor, RANKINGS_KIND, readPublishState, readRows } from './publishedLists.js';

/** Lists and item records a serve replica keeps (RECS_SERVE_CACHE_ENTRIES' default): its memory, whatever the store holds. */
export const SERVE_CACHE_ENTRIES = 50_000;
/** How often a replica compares the publish version with its own, notices or not. */
export const SYNC_INTERVAL_MS = 1000;
const MAX_IDS = 100;
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
  /** Bumped by every drop: a read begun before one must not keep what it read. */
  private epoch = 0;
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
    private readonly options: { connectionString: string; names: { lockKey: string; channel: string }; entries?: number; say?: (line: string) => void },
  ) {
    const max = options.entries ?? SERVE_CACHE_ENTRIES;
    this.lists = new LRUCache({ max });
    this.items = new LRUCache({ max });
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
      let dropped = false;
      if (now.version > this.state.version) {
        const max = this.lists.max;
        const changed = await changedSince(this.pool, this.state.version, max + 1);
        this.epoch++;
        if (changed.length > max) this.lists.clear();
        for (const { kind, anchor } of changed) {
          if (kind === RANKINGS_KIND) this.rankings = null;
          else this.lists.delete(`${kind}:${anchor}`);
        }
        if (changed.length > max) this.rankings = null;
        dropped = true;
      }
      if (now.itemSeq > this.state.itemSeq) {
        const { rows } = await this.pool.query<{ item_id: string }>('SELECT item_id FROM recs_items WHERE seq > $1', [this.state.itemSeq]);
        this.epoch++;
        for (const row of rows) this.items.delete(Number(row.item_id));
        dropped = true;
      }
      this.state = now;
      this.syncError = null;
      if (dropped) for (const listener of this.changeListeners) listener();
    } catch (error) {
      this.syncError = (error as Error).message;
    }
  }

  /** Records this replica stored itself: dropped at once, before its call is answered. */
  forgetItems(itemIds: readonly number[]): void {
    this.epoch++;
    for (const id of itemIds) this.items.delete(id);
    for (const listener of this.changeListeners) listener();
  }

  async getItems(ids: readonly number[], _options?: CallOptions): Promise<(ItemModel | null)[]> {
    if (ids.length > MAX_IDS) throw badUserInput(`At most ${MAX_IDS} item ids a call, got ${ids.length}`, 'ids');
    const missing = [...new Set(ids.filter((id) => !this.items.has(id)))];
    if (missing.length > 0) {
      const epoch = this.epoch;
      const { rows } = await this.pool.query<{ item_id: string; record: string }>('SELECT item_id, record FROM recs_items WHERE item_id = ANY($1::bigint[])', [missing]);
      const found = new Map(rows.map((r) => [Number(r.item_id), parseStoredRecord(r.record)]));
      const keep = epoch === this.epoch;
      const answer = new Map<number, ItemModel | null>();
      for (const id of missing) {
        const item = found.get(id) ?? null;
        answer.set(id, item);
        if (keep) this.items.set(id, item ?? NO_RECORD);
      }
      return ids.map((id) => (answer.has(id) ? answer.get(id)! : this.itemNow(id)));
    }
    return ids.map((id) => this.itemNow(id));
  }

  private itemNow(id: number): ItemModel | null {
    const item = this.items.get(id);
    return item === undefined || item === NO_RECORD ? null : item;
  }

  private async list(kind: RecommendationKind, anchorId: number): Promise<PublishedList> {
    const key = `${kindCode(kind)}:${anchorId}`;
    const kept = this.lists.get(key);
    if (kept !== undefined) return kept;
    const epoch = this.epoch;
    const text = (await readRows(this.pool, [{ kind: kindCode(kind), anchor: anchorId }])).get(key);
    const list = text === undefined ? UNPUBLISHED : decodeList(text);
    if (epoch === this.epoch) this.lists.set(key, list);
    return list;
  }

  async recommend(kind: RecommendationKind, anchorId: number, options?: CallOptions, filter: RecommendationFilterModel | null = null): Promise<RecommendationListModel> {
    const [anchor] = await this.getItems([anchorId], options);
    if (anchor === null) throw notFound(`No item with itemId ${anchorId}`);
    const list = await this.list(kind, anchorId);
    if (filter === null) return this.answer(kind, anchor!, list.top, await this.getItems(list.top.map((e) => e.itemId), options), null);
    const records = await this.getItems(list.deep.map((e) => e.itemId), options);
    const answer = this.answer(kind, anchor!, list.deep, records, filter);
    if (answer.entries.length >= MAX_RECOMMENDATIONS) return answer;
    // too few of the candidates pass: filled from the published popular items (of the filter's category) that do
    const fill = await this.fillOf(kind, anchor!, filter);
    const fillRecords: (ItemModel | null)[] = [];
    for (let at = 0; at < fill.length; at += MAX_IDS) fillRecords.push(...await this.getItems(fill.slice(at, at + MAX_IDS).map((e) => e.itemId), options));
    return this.answer(kind, anchor!, [...list.deep, ...fill], [...records, ...fillRecords], filter);
  }

  /** A list's entries with their records; filtered, the candidates passing it, one per family, never the
   * anchor's, in stock first, ranked anew. */
  private answer(kind: RecommendationKind, anchor: ItemModel, candidates: PublishedList['top'], records: readonly (ItemModel | null)[], filter: RecommendationFilterModel | null): RecommendationListModel {
    const anchorId = anchor.itemId;
    if (filter === null) {
      const items = records.filter((item): item is ItemModel => item !== null);
      const entries = candidates.filter((_, i) => records[i] !== null).map((e, i) => ({ ...e, rank: i + 1 }));
      return { anchorId, kind, entries, items };
    }
    const families = new Set([familyOf(anchor)]);
    const inStock: [RecommendationListModel['entries'][number], ItemModel][] = [];
    const outOfStock: [RecommendationListModel['entries'][number], ItemModel][] = [];
    for (let i = 0; i < candidates.length && inStock.length < MAX_RECOMMENDATIONS; i++) {
      const item = records[i];
      if (item === null || item === undefined || item.itemId === anchorId || !passesFilter(filter, item.itemId, item)) continue;
      const family = familyOf(item);
      if (families.has(family) || anchor.variants?.includes(item.itemId) === true || item.variants?.includes(anchorId) === true) continue;
      families.add(family);
      (isInStock(item) ? inStock : outOfStock).push([candidates[i]!, item]);
    }
    const kept = inStock.concat(outOfStock).slice(0, MAX_RECOMMENDATIONS);
    return { anchorId, kind, entries: kept.map(([e], i) => ({ ...e, rank: i + 1 })), items: kept.map(([, item]) => item), filter };
  }

  /** The answers now from what is kept, for the response cache's recheck; throws where something is not kept. */
  readonly now: RecsNow = {
    item: (itemId) => this.itemNow(itemId),
    recommend: (kind, anchorId, filter = null) => {
      const list = this.lists.peek(`${kindCode(kind)}:${anchorId}`);
      const anchor = this.itemNow(anchorId);
      if (list === undefined || anchor === null) throw new Error('not kept');
      const candidates = filter === null ? list.top : list.deep;
      const kept = (ids: readonly number[]): (ItemModel | null)[] => ids.map((id) => {
        if (!this.items.has(id)) throw new Error('not kept');
        return this.itemNow(id);
      });
      const answer = this.answer(kind, anchor, candidates, kept(candidates.map((e) => e.itemId)), filter);
      if (filter === null || answer.entries.length >= MAX_RECOMMENDATIONS) return answer;
      const fill = this.fillKept(kind, anchor, filter);
      return this.answer(kind, anchor, [...candidates, ...fill], kept([...candidates, ...fill].map((e) => e.itemId)), filter);
    },
  };

  private fillKey(kind: RecommendationKind, categoryPath: string): string {
    return `${CATEGORY_KIND + kindCode(kind)}:${pathAnchor(categoryPath)}`;
  }

  /** What a filtered list too short is filled from, as the model's tiers: the items of the anchor's category,
   * then of its department, where the filter's category holds them; then of the filter's category (else of
   * all items), each by popularity, with the source the model gives each tier. */
  private fillPaths(anchor: ItemModel, filter: RecommendationFilterModel): [string, RecommendationSource][] {
    const path = filter.categoryPath;
    const leaf = anchor.categoryPath ?? null;
    const department = leaf?.split('/')[0] ?? null;
    const paths: [string, RecommendationSource][] = [];
    if (leaf !== null && (path === null || underCategory(leaf, path))) paths.push([leaf, 'CATEGORY']);
    if (department !== null && department !== leaf && (path === null || path === department)) paths.push([department, 'DEPARTMENT']);
    if (path === null) paths.push(['', 'POPULAR']);
    else if (path !== leaf && path !== department) paths.push([path, department !== null && underCategory(path, department) ? 'DEPARTMENT' : 'POPULAR']);
    return paths;
  }

  private async fillOf(kind: RecommendationKind, anchor: ItemModel, filter: RecommendationFilterModel): Promise<PublishedList['deep']> {
    const fill: PublishedList['deep'] = [];
    for (const [path, source] of this.fillPaths(anchor, filter)) {
      const key = this.fillKey(kind, path);
      let list = this.lists.get(key);
      if (list === undefined) {
        const epoch = this.epoch;
        const text = (await readRows(this.pool, [{ kind: CATEGORY_KIND + kindCode(kind), anchor: pathAnchor(path) }])).get(key);
        list = text === undefined ? UNPUBLISHED : decodeCategory(text, path);
        if (epoch === this.epoch) this.lists.set(key, list);
      }
      for (const e of list.deep) fill.push({ ...e, source });
    }
    return fill;
  }

  private fillKept(kind: RecommendationKind, anchor: ItemModel, filter: RecommendationFilterModel): PublishedList['deep'] {
    const fill: PublishedList['deep'] = [];
    for (const [path, source] of this.fillPaths(anchor, filter)) {
      const kept = this.lists.peek(this.fillKey(kind, path));
      if (kept === undefined) throw new Error('not kept');
      for (const e of kept.deep) fill.push({ ...e, source });
    }
    return fill;
  }

  private async rankingsNow(): Promise<PublishedRankings> {
    if (this.rankings !== null) return this.rankings;
    const epoch = this.epoch;
    const text = (await readRows(this.pool, [{ kind: RANKINGS_KIND, anchor: 0 }])).get(`${RANKINGS_KIND}:0`);
    const rankings: PublishedRankings = text === undefined ? { trending: [], popular: { POST_BROWSE: [], NEXT_BEST_PRODUCT: [] } } : JSON.parse(text) as PublishedRankings;
    if (epoch === this.epoch) this.rankings = rankings;
    return rankings;
  }

  /** A published ranking's entries under `categoryPath`: its share of the published depth. */
  private async ranked(entries: readonly { itemId: number; score: number }[], categoryPath: string | null, first: number): Promise<ItemRankingModel> {
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
