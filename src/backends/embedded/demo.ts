import { Catalog, DAY_MS, EventLog } from '../../recommender/index.js';
import type { RecEvent } from '../../recommender/index.js';

/** A deterministic demo shop (invented taxonomy, variants, visits comparing substitutes and buying
 * planted complements), from one seeded PRNG so that every run gives the same data; no real data. */

interface Leaf { name: string; noun: string; price: [number, number]; complements?: string[] }
interface Group { name: string; leaves: Leaf[] }
interface Department { name: string; groups: Group[] }

const TAXONOMY: Department[] = [
  { name: 'Gadgets & Devices', groups: [
    { name: 'Mobile', leaves: [
      { name: 'Smartphones', noun: 'Smartphone', price: [149, 899], complements: ['Phone Cases', 'Chargers & Cables'] },
      { name: 'Phone Cases', noun: 'Phone Case', price: [8, 39] },
      { name: 'Chargers & Cables', noun: 'Fast Charger', price: [9, 49] } ] },
    { name: 'Audio', leaves: [
      { name: 'Headphones', noun: 'Headphones', price: [25, 349], complements: ['Audio Cables'] },
      { name: 'Portable Speakers', noun: 'Speaker', price: [29, 299], complements: ['Audio Cables'] },
      { name: 'Audio Cables', noun: 'Audio Cable', price: [5, 25] } ] } ] },
  { name: 'Home & Hearth', groups: [
    { name: 'Kitchenware', leaves: [
      { name: 'Cookware Sets', noun: 'Cookware Set', price: [59, 399], complements: ['Kitchen Utensils', 'Oven Mitts'] },
      { name: 'Kitchen Utensils', noun: 'Utensil Set', price: [9, 59] },
      { name: 'Oven Mitts', noun: 'Oven Mitt Pair', price: [6, 24] } ] },
    { name: 'Bedding', leaves: [
      { name: 'Duvets', noun: 'Duvet', price: [49, 249], complements: ['Duvet Covers', 'Pillowcases'] },
      { name: 'Pillowcases', noun: 'Pillowcase Pair', price: [9, 39] },
      { name: 'Duvet Covers', noun: 'Duvet Cover', price: [25, 119] } ] } ] },
  { name: 'Pantry', groups: [
    { name: 'Coffee & Tea', leaves: [
      { name: 'Ground Coffee', noun: 'Ground Coffee', price: [5, 19], complements: ['Coffee Filters', 'Sweeteners'] },
      { name: 'Coffee Filters', noun: 'Filter Papers', price: [2, 7] },
      { name: 'Sweeteners', noun: 'Sweetener', price: [2, 9] } ] },
    { name: 'Breakfast', leaves: [
      { name: 'Cereals', noun: 'Cereal', price: [3, 8], complements: ['Oat Milks'] },
      { name: 'Oat Milks', noun: 'Oat Drink', price: [2, 5] },
      { name: 'Breakfast Spreads', noun: 'Spread', price: [3, 9] } ] } ] },
  { name: 'Outdoor Living', groups: [
    { name: 'Camping', leaves: [
      { name: 'Tents', noun: 'Tent', price: [79, 599], complements: ['Sleeping Bags', 'Camp Lanterns'] },
      { name: 'Sleeping Bags', noun: 'Sleeping Bag', price: [29, 199] },
      { name: 'Camp Lanterns', noun: 'Lantern', price: [12, 59] } ] },
    { name: 'Garden', leaves: [
      { name: 'Garden Hoses', noun: 'Hose', price: [19, 89], complements: ['Hose Nozzles'] },
      { name: 'Hose Nozzles', noun: 'Spray Nozzle', price: [6, 29] },
      { name: 'Planters', noun: 'Planter', price: [9, 99] } ] } ] },
  { name: 'Wardrobe', groups: [
    { name: 'Footwear', leaves: [
      { name: 'Running Shoes', noun: 'Running Shoe', price: [49, 189], complements: ['Sport Socks', 'Shoe Care'] },
      { name: 'Sport Socks', noun: 'Sock 3-Pack', price: [7, 19] },
      { name: 'Shoe Care', noun: 'Shoe Cleaner', price: [5, 19] } ] },
    { name: 'Outerwear', leaves: [
      { name: 'Rain Jackets', noun: 'Rain Jacket', price: [39, 229], complements: ['Umbrellas'] },
      { name: 'Fleece Layers', noun: 'Fleece', price: [25, 99] },
      { name: 'Umbrellas', noun: 'Umbrella', price: [9, 39] } ] } ] },
  { name: 'Play & Learn', groups: [
    { name: 'Building', leaves: [
      { name: 'Brick Sets', noun: 'Brick Set', price: [14, 199], complements: ['Baseplates', 'Storage Bins'] },
      { name: 'Baseplates', noun: 'Baseplate', price: [6, 24] },
      { name: 'Storage Bins', noun: 'Storage Bin', price: [9, 39] } ] },
    { name: 'Games', leaves: [
      { name: 'Board Games', noun: 'Board Game', price: [15, 79], complements: ['Card Sleeves', 'Dice Sets'] },
      { name: 'Card Sleeves', noun: 'Card Sleeves', price: [4, 14] },
      { name: 'Dice Sets', noun: 'Dice Set', price: [4, 24] } ] } ] },
  { name: 'Wellness', groups: [
    { name: 'Oral Care', leaves: [
      { name: 'Electric Toothbrushes', noun: 'Electric Toothbrush', price: [24, 199], complements: ['Brush Heads'] },
      { name: 'Brush Heads', noun: 'Brush Head 4-Pack', price: [9, 34] },
      { name: 'Dental Floss', noun: 'Floss', price: [2, 8] } ] },
    { name: 'Fitness', leaves: [
      { name: 'Yoga Mats', noun: 'Yoga Mat', price: [19, 119], complements: ['Yoga Blocks', 'Water Bottles'] },
      { name: 'Yoga Blocks', noun: 'Yoga Block', price: [8, 29] },
      { name: 'Water Bottles', noun: 'Water Bottle', price: [9, 39] } ] } ] },
  { name: 'Workshop', groups: [
    { name: 'Power Tools', leaves: [
      { name: 'Cordless Drills', noun: 'Cordless Drill', price: [49, 329], complements: ['Drill Bits', 'Tool Batteries'] },
      { name: 'Drill Bits', noun: 'Drill Bit Set', price: [9, 59] },
      { name: 'Tool Batteries', noun: 'Tool Battery', price: [29, 129] } ] },
    { name: 'Painting', leaves: [
      { name: 'Wall Paints', noun: 'Wall Paint', price: [19, 79], complements: ['Paint Rollers', 'Masking Tape'] },
      { name: 'Paint Rollers', noun: 'Paint Roller', price: [5, 29] },
      { name: 'Masking Tape', noun: 'Masking Tape', price: [3, 12] } ] } ] },
];

const BRANDS = ['Norvale', 'Quillon', 'Bramwick', 'Tessaro', 'Okkam', 'Vireo Labs', 'Halden & Co', 'Marlow Pike', 'Sundew', 'Kestrel', 'Amberlyn', 'Porto Verde'];
const ADJECTIVES = ['Classic', 'Pro', 'Lite', 'Max', 'Eco', 'Compact', 'Deluxe', 'Everyday', 'Studio', 'Trail', 'Urban', 'Prime'];
const COLORS = ['Black', 'Slate', 'Sand', 'Forest', 'Coral', 'White'];
const SIZES = ['S', 'M', 'L', 'XL'];
const IMAGE_HOST = 'https://img.shop.example.com';
const SHOP = 'https://shop.example.com';

/** mulberry32: tiny, fast and good enough for synthetic data; the same seed gives the same stream everywhere. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Samples ranks 0..n-1 with probability proportional to 1/(rank+1)^s. */
export function zipf(n: number, s: number, random: () => number): () => number {
  const cumulative = new Float64Array(n);
  let sum = 0;
  for (let r = 0; r < n; r++) cumulative[r] = sum += 1 / Math.pow(r + 1, s);
  return () => {
    const x = random() * sum;
    let lo = 0;
    let hi = n - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cumulative[mid]! < x) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
}

/** Options of generateDemo. */
export interface DemoOptions {
  /** PRNG seed; default 20240301. */
  seed?: number;
  /** Parent products per leaf category; default 90 (with 1 to 4 variants each: about 10,800 items). */
  productsPerLeaf?: number;
  /** Events to generate at least; default 200,000. */
  events?: number;
  /** The last event's time (ms since the epoch), the others as far before it as generated; default
   * as generated (the first on 2024-03-01). A served demo ends now (demoEndsAt): events sent to it
   * today must not make its whole history older than RECS_EVENTS_MAX_AGE_DAYS at once. */
  endsAt?: number;
}

/** The demo data: item records in the recommendations.md shape, and events in time order. */
export interface DemoData {
  records: Record<string, unknown>[];
  events: RecEvent[];
  /** For tests: per parent product, the parent ids of its planted complements. */
  complements: Map<number, number[]>;
}

interface Product { parentId: number; itemIds: number[]; inStock: boolean[]; leaf: number }

function upcOf(n: number): string {
  const digits = String(100000000000 + (n % 100000000000)).slice(1);
  let sum = 0;
  for (let i = 0; i < 11; i++) sum += Number(digits[i]) * (i % 2 === 0 ? 3 : 1);
  return digits + String((10 - (sum % 10)) % 10);
}

const slug = (s: string): string => s.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '');
const money = (x: number): number => Math.round(x * 100) / 100;

export function generateDemo(options: DemoOptions = {}): DemoData {
  const random = seededRandom(options.seed ?? 20240301);
  const perLeaf = options.productsPerLeaf ?? 90;
  const targetEvents = options.events ?? 200_000;
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;

  const leaves: { path: string; node: string; leaf: Leaf; dept: number; products: Product[] }[] = [];
  TAXONOMY.forEach((dept, d) => dept.groups.forEach((group, g) => group.leaves.forEach((leaf, l) => {
    const node = `${7100 + d}_${7100 + d}${String(g + 1).padStart(2, '0')}_${7100 + d}${String(g + 1).padStart(2, '0')}${String(l + 1).padStart(2, '0')}`;
    leaves.push({ path: `${dept.name}/${group.name}/${leaf.name}`, node, leaf, dept: d, products: [] });
  })));
  const leafByName = new Map(leaves.map((l, i) => [l.leaf.name, i]));

  const records: Record<string, unknown>[] = [];
  let nextId = 31_000_000;
  leaves.forEach((entry, leafIndex) => {
    const wardrobe = entry.path.startsWith('Wardrobe/');
    for (let p = 0; p < perLeaf; p++) {
      const brand = pick(BRANDS);
      const base = `${brand} ${pick(ADJECTIVES)} ${entry.leaf.noun} ${100 + p}`;
      const nVariants = 1 + Math.floor(random() * 4);
      const options = wardrobe ? SIZES : COLORS;
      const first = Math.floor(random() * options.length);
      const [lo, hi] = entry.leaf.price;
      const price = money(lo + (hi - lo) * Math.pow(random(), 2));
      const ids = Array.from({ length: nVariants }, () => (nextId += 1 + Math.floor(random() * 5)));
      const product: Product = { parentId: ids[0]!, itemIds: ids, inStock: [], leaf: leafIndex };
      const rating = random();
      ids.forEach((itemId, v) => {
        const variant = options[(first + v) % options.length]!;
        const name = `${base}, ${variant}`;
        const inStock = random() >= 0.08;
        product.inStock.push(inStock);
        const image = (size: number): string => `${IMAGE_HOST}/${itemId}/main.jpg?w=${size}&h=${size}`;
        const record: Record<string, unknown> = {
          itemId,
          parentItemId: product.parentId,
          name,
          salePrice: price,
          upc: upcOf(itemId * 7 + 11),
          categoryPath: entry.path,
          categoryNode: entry.node,
          shortDescription: `The ${base.toLowerCase()} in ${variant.toLowerCase()}: a demo product of the ${entry.leaf.name.toLowerCase()} range.`,
          longDescription: `&lt;ul&gt;&lt;li&gt;${entry.leaf.noun} by ${brand}&lt;/li&gt;&lt;li&gt;${wardrobe ? 'Size' : 'Colour'}: ${variant}&lt;/li&gt;&lt;/ul&gt;`,
          brandName: brand,
          thumbnailImage: image(100),
          mediumImage: image(180),
          largeImage: image(450),
          productTrackingUrl: `${SHOP}/track?item=${itemId}&source=demo`,
          standardShipRate: price >= 35 ? 0 : 5.99,
          modelNumber: `${brand.slice(0, 3).toUpperCase()}-${100 + p}-${v + 1}`,
          productUrl: `${SHOP}/ip/${slug(name)}/${itemId}`,
          bundle: false,
          clearance: random() < 0.05,
          preOrder: false,
          stock: inStock ? 'Available' : 'Not available',
          attributes: wardrobe ? { size: variant, material: pick(['cotton', 'polyester', 'wool blend']) } : { color: variant },
          addToCartUrl: `${SHOP}/cart/add?items=${itemId}|1`,
          offerType: random() < 0.7 ? 'ONLINE_AND_STORE' : 'ONLINE_ONLY',
          availableOnline: inStock,
          freeShippingOver35Dollars: price >= 35,
          giftOptions: {},
          imageEntities: [{ thumbnailImage: image(100), mediumImage: image(180), largeImage: image(450), entityType: 'PRIMARY' }],
          isTwoDayShippingEligible: random() < 0.5,
        };
        if (wardrobe) record.size = variant;
        else record.color = variant;
        if (random() < 0.6) record.msrp = money(price * (1.1 + random() * 0.3));
        if (rating < 0.7) {
          record.customerRating = (3 + rating * 2.8).toFixed(3);
          record.numReviews = 1 + Math.floor(random() * 400);
          record.customerRatingImage = `${IMAGE_HOST}/rating/${(3 + rating * 2.8).toFixed(1)}.gif`;
        }
        if (nVariants > 1) record.variants = ids;
        records.push(record);
      });
      entry.products.push(product);
    }
  });

  // A fixed compatible product in each complement leaf, chosen per product: that is the planted signal.
  const complements = new Map<number, number[]>();
  const complementOf: number[][][] = leaves.map((entry) => entry.products.map((product, p) => {
    const comps = (entry.leaf.complements ?? []).map((name) => {
      const target = leaves[leafByName.get(name)!]!;
      return (p * 7 + 3 * target.products.length / 9) % target.products.length | 0;
    });
    complements.set(product.parentId, (entry.leaf.complements ?? []).map((name, i) => leaves[leafByName.get(name)!]!.products[comps[i]!]!.parentId));
    return comps;
  }));

  const leafWeights = zipf(leaves.length, 0.6, random);
  // A seeded shuffle, so that the most visited categories are not simply the first department's.
  const leafOrder = leaves.map((_, i) => i);
  for (let i = leafOrder.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [leafOrder[i], leafOrder[j]] = [leafOrder[j]!, leafOrder[i]!];
  }
  const productRank = zipf(perLeaf, 1.0, random);
  const userRank = zipf(20_000, 0.8, random);
  const events: RecEvent[] = [];
  let time = Date.UTC(2024, 2, 1);
  let session = 0;
  let order = 0;
  while (events.length < targetEvents) {
    session++;
    time += Math.floor(random() * 60_000);
    const anonymous = random() < 0.3;
    const user = anonymous ? null : `u${userRank() + 1}`;
    const sessionId = `s${session}`;
    const leafIndex = leafOrder[leafWeights()]!;
    const leaf = leaves[leafIndex]!;
    const nViews = 2 + Math.floor(random() * 7);
    let t = time;
    const viewed: { product: Product; variant: number }[] = [];
    for (let v = 0; v < nViews; v++) {
      // Mostly substitutes of one category; now and then a detour elsewhere.
      const where = random() < 0.12 ? leaves[Math.floor(random() * leaves.length)]! : leaf;
      const product = where.products[productRank()]!;
      const variant = Math.floor(random() * product.itemIds.length);
      t += 15_000 + Math.floor(random() * 90_000);
      events.push({ kind: 'view', session: sessionId, user, itemId: product.itemIds[variant]!, time: t, orderId: null });
      viewed.push({ product, variant });
    }
    if (random() < 0.3) {
      const chosen = viewed.filter((v) => v.product.inStock[v.variant] === true && v.product.leaf === leafIndex);
      if (chosen.length > 0) {
        const { product, variant } = chosen[Math.floor(random() * chosen.length)]!;
        const orderId = `o${++order}`;
        t += 60_000;
        events.push({ kind: 'purchase', session: sessionId, user, itemId: product.itemIds[variant]!, time: t, orderId });
        const p = leaf.products.indexOf(product);
        (leaf.leaf.complements ?? []).forEach((name, i) => {
          if (random() >= 0.55) return;
          const target = leaves[leafByName.get(name)!]!.products[complementOf[leafIndex]![p]![i]!]!;
          const tv = Math.floor(random() * target.itemIds.length);
          t += 5_000;
          events.push({ kind: 'purchase', session: sessionId, user, itemId: target.itemIds[tv]!, time: t, orderId });
        });
      }
    }
  }
  if (options.endsAt !== undefined) {
    const shift = options.endsAt - events[events.length - 1]!.time;
    for (const event of events) event.time += shift;
  }
  return { records, events, complements };
}

/** When a served demo shop's history ends: the start of the current UTC day (so that replicas started the same day agree). */
export function demoEndsAt(now = Date.now()): number {
  return now - (now % DAY_MS);
}

/** The demo as a catalogue and an event log, ready for buildModel. */
export function buildDemo(options: DemoOptions = {}): { catalog: Catalog; log: EventLog; data: DemoData } {
  const data = generateDemo(options);
  const catalog = new Catalog();
  const report = catalog.addRecords(data.records);
  if (report.skipped.length > 0) throw new Error(`demo record ${report.skipped[0]!.line} is invalid: ${report.skipped[0]!.reason}`);
  const log = new EventLog();
  for (const event of data.events) log.add(event);
  return { catalog, log, data };
}
