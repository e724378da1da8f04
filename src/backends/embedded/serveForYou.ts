import type pg from 'pg';
import type { ForYouListModel, ItemModel, RecommendationFilterModel, RecommendationKind, ShopperModel } from '../../ports/backend.js';
import { familyOf, forYouFrom, listsOf, MAX_SHOPPER_EVENTS, mergeHistories } from '../../recommender/index.js';
import type { AnchoredList, ForYouPicks, ShopperEvent } from '../../recommender/index.js';
import { NS_SESSION, NS_USER } from './liveStore.js';
import type { PublishedList } from './publishedLists.js';
import { fillEntry, RecordPick } from './serveFilter.js';

/** The newest events by id whose latest time ends the window, as the learner's newest applied event does: a few, so
 * that a client's clock a little off does not move it (an import of older events stored last does, until the next). */
const LATEST_EVENTS = 100;
/** Records read a query (RecsService's getItems bound). */
const PAGE = 100;

/** The session's and the user's latest events (MAX_SHOPPER_EVENTS each, by the indexes on session and user_id, the
 * store's key ids looked up in the same query), merged as the live model merges them, since the window's start. */
export async function shopperHistory(pool: pg.Pool, shopper: ShopperModel, maxAgeMs: number): Promise<ShopperEvent[]> {
  const { rows } = await pool.query<{ w: number; kind: number; item_id: string; time: string | null }>(
    `SELECT w, kind, item_id, time FROM (
       (SELECT 0 AS w, kind, item_id, time, id FROM recs_events WHERE session = (SELECT id FROM recs_keys WHERE ns = $1 AND name = $2)
         ORDER BY time DESC, id DESC LIMIT $5)
       UNION ALL
       (SELECT 1, kind, item_id, time, id FROM recs_events WHERE user_id = (SELECT id FROM recs_keys WHERE ns = $3 AND name = $4)
         ORDER BY time DESC, id DESC LIMIT $5)
       UNION ALL
       SELECT 2, 0, 0, max(time), 0 FROM (SELECT time FROM recs_events ORDER BY id DESC LIMIT $6) r
     ) e ORDER BY time, id`,
    [NS_SESSION, shopper.sessionId, NS_USER, shopper.userId, MAX_SHOPPER_EVENTS, LATEST_EVENTS]);
  const of: [ShopperEvent[], ShopperEvent[]] = [[], []];
  let latest = -Infinity;
  for (const row of rows) {
    if (row.time === null) continue;
    const time = Number(row.time);
    if (row.w === 2) latest = time;
    else of[row.w as 0 | 1].push({ itemId: Number(row.item_id), kind: row.kind, time });
    latest = Math.max(latest, time);
  }
  return mergeHistories(of[0], of[1], maxAgeMs > 0 ? latest - maxAgeMs : -Infinity);
}

/** What a serve replica lends forYou: its cached published lists, category rows and records. */
export interface ServeLists {
  list(kind: RecommendationKind, anchorId: number): Promise<PublishedList>;
  tierIds(kind: RecommendationKind, path: string): Promise<readonly number[]>;
  getItems(ids: readonly number[]): Promise<(ItemModel | null)[]>;
}

/** recommendedForYou from published lists: the same forYouFrom as the learner's, on the anchored lists it published;
 * the popular fill from the published category row (all items, else the filter's category). What the pure function
 * reads is fetched first; a fill that needs more records asks for a page and the function runs again. */
export async function serveForYou(lists: ServeLists, history: readonly ShopperEvent[], limit: number, filter: RecommendationFilterModel | null): Promise<ForYouListModel> {
  const anchored = new Map<string, AnchoredList | null>();
  await Promise.all(listsOf(history).map(async ({ kind, itemId }) => anchored.set(`${kind}:${itemId}`, (await lists.list(kind, itemId)).anchored ?? null)));
  const records = new Map<number, ItemModel | null>();
  const load = async (ids: readonly number[]): Promise<void> => {
    const missing = [...new Set(ids)].filter((id) => !records.has(id));
    for (let at = 0; at < missing.length; at += PAGE) {
      const page = missing.slice(at, at + PAGE);
      const found = await lists.getItems(page);
      page.forEach((id, i) => records.set(id, found[i] ?? null));
    }
  };
  const candidates: number[] = history.map((e) => e.itemId);
  // one by one: a hot anchor's neighbours, spread as arguments, could pass the call stack
  for (const list of anchored.values()) if (list !== null) for (let i = 0; i < list.items.length; i++) candidates.push(list.items[i]!);
  await load(candidates);
  const tiers = new Map<RecommendationKind, readonly number[]>();
  const path = filter?.categoryPath ?? '';
  for (;;) {
    let need: (() => Promise<void>) | null = null;
    const entries = forYouFrom<ForYouPicks & { inner: RecordPick }>({
      anchored: (kind, itemId) => anchored.get(`${kind}:${itemId}`) ?? null,
      familyOf: (id) => {
        const item = records.get(id);
        return item === null || item === undefined ? id : familyOf(item);
      },
      picks: (n, f, skip) => {
        const inner = new RecordPick(n, f, (item, family) => skip(item.itemId, family));
        return {
          inner,
          offer: (itemId, score, source) => inner.offer({ rank: 0, itemId, score, evidence: 0, source }, records.get(itemId)),
          get enough() { return inner.enough; },
          entries: () => inner.picked().entries,
        };
      },
      fill: (kind, _, picks) => {
        const ids = tiers.get(kind);
        if (ids === undefined) {
          need = async () => void tiers.set(kind, await lists.tierIds(kind, path));
          return;
        }
        for (let at = 0; at < ids.length && !picks.inner.done(true, at); at++) {
          if (!records.has(ids[at]!)) {
            need = () => load(ids.slice(at, at + PAGE));
            return;
          }
          picks.inner.offer(fillEntry(ids[at]!, 'POPULAR'), records.get(ids[at]!));
        }
      },
    }, history, limit, filter);
    if (need === null) return { entries, items: entries.map((e) => records.get(e.itemId)!) };
    await (need as () => Promise<void>)();
  }
}
