/**
 * The realistic mix's requests (issue 22; not a test): anchors drawn Zipf(1.0) over the whole
 * demo catalogue, three field selections, 10% item lookups of 1 to 20 ids, 5% recordEvents
 * batches of 50 (as an administrator). bench/run.ts's scenario (8) and bench/ab.ts's `mixed`
 * send the same seeded sequence.
 */
export const MIXED_BODIES = 300_000;
/**
 * Requests of the mix sent before measuring, unmeasured: the response cache's hit rate then
 * comes from a cache in its steady state, not from how many requests the machine managed.
 */
export const MIXED_WARM = 50_000;
const MIXED_QUERIES = [
  'query Recs($itemId: ItemId!) { productRecommendations(itemId: $itemId) { itemId name salePrice brandName customerRating } }',
  'query Item($itemId: ItemId!) { item(itemId: $itemId) { itemId name salePrice thumbnailImage productRecommendations(first: 5) { itemId name salePrice } } }',
  'query Browse($itemId: ItemId!) { recommendations(itemId: $itemId, kind: POST_BROWSE, first: 10) { edges { rank node { itemId name brandName } } } }',
];
const ITEMS_QUERY = 'query Items($ids: [ItemId!]!) { items(itemIds: $ids) { itemId name salePrice } }';
/** Share of item lookups; and of recordEvents batches of EVENTS_PER_BATCH (issue 20's mutation, as an administrator). */
export const ITEMS_SHARE = 0.1;
export const EVENTS_SHARE = 0.05;
export const EVENTS_PER_BATCH = 50;
const EVENTS_MUTATION = 'mutation Record($e: [EventInput!]!) { recordEvents(events: $e) { accepted } }';
export const isEventsBody = (payload: string): boolean => payload.startsWith('{"query":"mutation Record');
/**
 * The mix's bodies over `catalogue` (the demo shop's item ids, in its order); `eventsShare` 0 for
 * the reads alone (the same draws, the batches left out).
 */
export function mixedBodies(catalogueIds: readonly number[], eventsShare: number, count = MIXED_BODIES): string[] {
  // a seeded generator (mulberry32), so that every run asks the same
  let seed = 0x9e3779b9;
  const random = (): number => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  // popularity: the catalogue in a shuffled order, rank k drawn with weight 1/k
  const catalogue = [...catalogueIds];
  for (let i = catalogue.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [catalogue[i], catalogue[j]] = [catalogue[j]!, catalogue[i]!];
  }
  const cumulative = new Float64Array(catalogue.length);
  let sum = 0;
  for (let k = 0; k < catalogue.length; k++) cumulative[k] = sum += 1 / (k + 1);
  const zipf = (): number => {
    const x = random() * sum;
    let lo = 0;
    let hi = cumulative.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cumulative[mid]! < x) lo = mid + 1;
      else hi = mid;
    }
    return catalogue[lo]!;
  };
  const bodies: string[] = [];
  for (let n = 0; n < count; n++) {
    const draw = random();
    if (draw < EVENTS_SHARE) {
      // a shopper's session: views of Zipf-drawn items, one purchase in ten events
      const batch = batchOf(random, zipf, n);
      if (draw < eventsShare) bodies.push(JSON.stringify({ query: EVENTS_MUTATION, variables: { e: batch } }));
      continue;
    }
    if (draw < EVENTS_SHARE + ITEMS_SHARE) {
      const ids = Array.from({ length: 1 + Math.floor(random() * 20) }, zipf);
      bodies.push(JSON.stringify({ query: ITEMS_QUERY, variables: { ids } }));
    } else {
      bodies.push(JSON.stringify({ query: MIXED_QUERIES[Math.floor(random() * MIXED_QUERIES.length)], variables: { itemId: zipf() } }));
    }
  }
  return bodies;
}

/**
 * A batch as a shop's collector sends one: the events of several shoppers' visits, each of 2 to 8
 * Zipf-drawn views (the demo shop's visits; Diginetica's average about 5), three in ten ending
 * with a purchase of one of the items viewed, until EVENTS_PER_BATCH events (about one purchase
 * in twenty events). Until 2026-11-23 a batch was one visit of 45 views and 5 purchases: no
 * shop's traffic, and every batch one group of 30 distinct popular items.
 */
function batchOf(random: () => number, zipf: () => number, n: number): Record<string, unknown>[] {
  const batch: Record<string, unknown>[] = [];
  for (let visit = 0; batch.length < EVENTS_PER_BATCH; visit++) {
    const sessionId = `bench-session-${n}-${visit}`;
    const viewed: number[] = [];
    for (let v = 2 + Math.floor(random() * 7); v > 0 && batch.length < EVENTS_PER_BATCH; v--) {
      const itemId = zipf();
      viewed.push(itemId);
      batch.push({ kind: 'VIEW', itemId, sessionId });
    }
    if (random() < 0.3 && batch.length < EVENTS_PER_BATCH) {
      batch.push({ kind: 'PURCHASE', itemId: viewed[Math.floor(random() * viewed.length)], sessionId, userId: `bench-user-${(n * 7 + visit) % 5000}`, orderId: `bench-order-${n}-${visit}` });
    }
  }
  return batch;
}
