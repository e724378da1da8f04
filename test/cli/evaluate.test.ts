import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { describe, it, expect, afterAll } from 'vitest';
import { runEvaluate } from '../../src/cli/evaluateCommand.js';
import { seededRandom } from '../../src/backends/embedded/demo.js';
import { EventLog } from '../../src/recommender/index.js';
import { evaluate, formatTable } from '../../src/cli/evaluate.js';
import type { Method } from '../../src/cli/evaluate.js';
import { parseExperiment, type Experiment } from '../../src/model/experiment.js';
import { logOf } from '../recommender/helpers.js';

/** Visits that always view 2k+1 right after 2k (k < 25), over a background of popular items 1000-1004. */
function plantedLog(): EventLog {
  const random = seededRandom(3);
  const log = new EventLog();
  let t = 1_700_000_000_000;
  for (let s = 0; s < 600; s++) {
    const k = Math.floor(random() * 25);
    const user = `u${s % 97}`;
    for (const item of [1000 + Math.floor(random() * 5), 2 * k + 10, 2 * k + 11]) {
      log.add({ kind: 'view', session: `s${s}`, user, itemId: item, time: (t += 1000), orderId: null });
    }
    if (s % 2 === 0) {
      for (const item of [2 * k + 10, 500 + k]) log.add({ kind: 'purchase', session: `s${s}`, user, itemId: item, time: (t += 1000), orderId: `o${s}` });
    }
    t += 3_600_000;
  }
  return log;
}

describe('evaluate', () => {
  it('chooses each method\'s parameters on the validation split and reports the test split', () => {
    const result = evaluate(plantedLog());
    expect(result.testEvents).toBeGreaterThan(0);
    expect(result.validationEvents).toBeGreaterThan(0);
    // Validation comes out of the training part: 20% of 80% of the visits.
    expect(result.validationEvents).toBeLessThan(result.testEvents);
    const row = (task: string, method: Method) => result.rows.find((r) => r.task === task && r.method === method)!;
    for (const task of ['post-browse', 'next-best-product'] as const) {
      // The planted pairs are found, the popularity baseline cannot know them.
      expect(row(task, 'count').hitRate).toBeGreaterThan(0.45);
      expect(row(task, 'popularity').hitRate).toBeLessThan(row(task, 'count').hitRate / 2);
      for (const method of ['cosine', 'lift', 'pmi', 'model'] as const) {
        const points = result.grid.filter((p) => p.task === task && p.method === method);
        expect(points.length).toBeGreaterThan(method === 'model' ? 30 : 5);
        const best = Math.max(...points.map((p) => p.ndcg));
        expect(row(task, method).validationNdcg).toBe(best);
      }
      for (const method of ['consecutive', 'sequential', 'default'] as const) expect(row(task, method).queries).toBe(row(task, 'popularity').queries);
    }
    expect(formatTable(result.rows)).toContain('sequential');
  });

  it('compares variant B of RECS_EXPERIMENT with the shipped default on the same lists', () => {
    const experiment = parseExperiment('evidence-prior:5,share=0.5') as Experiment;
    const result = evaluate(plantedLog(), { methods: [], experiment });
    const row = (task: string, method: Method) => result.rows.find((r) => r.task === task && r.method === method)!;
    for (const task of ['post-browse', 'next-best-product'] as const) {
      const [a, b] = [row(task, 'default'), row(task, 'variant-b')];
      expect(b.queries).toBe(a.queries);
      // the same items in another order: the same hits, other ranks
      expect(b.hitRate).toBe(a.hitRate);
      expect(b.coverage).toBe(a.coverage);
      expect(b.parameters).toMatch(/then RECS_EXPERIMENT$/);
    }
    expect(evaluate(plantedLog(), { methods: [] }).rows.some((r) => r.method === 'variant-b')).toBe(false);
  });

  it('computes the baselines on a tiny log as by hand', () => {
    // Eight training visits, then two test visits asking 1 -> 3 and 4 -> 5.
    const log = logOf([[1, 2, 3], [1, 2, 3], [1, 6, 3], [3, 1], [3, 1], [4, 5], [4, 5], [6, 1], [1, 3], [4, 5]]);
    const result = evaluate(log, { methods: [] });
    expect(result.testEvents).toBe(4);
    const row = (method: Method) => result.rows.find((r) => r.task === 'post-browse' && r.method === method)!;
    // Ranks of the two targets: popularity (views: 1 six times, 3 five, then 2, 4, 5, 6 twice
    // each, the lower id first) gives 3 first for 1 and 5 fourth for 4. Consecutive (what came right
    // after): 1 -> 2 twice, 6 once, then the popular fill (3); 4 -> 5. Sequential rules: 1 -> 2 at
    // 1 + 1, 3 at 1/2 + 1/2 + 1/2, 6 at 1; 4 -> 5.
    const expected: Record<'popularity' | 'consecutive' | 'sequential', [number, number]> = { popularity: [1, 4], consecutive: [3, 1], sequential: [2, 1] };
    for (const [method, ranks] of Object.entries(expected)) {
      const r = row(method as Method);
      const gains = ranks.map((k) => 1 / Math.log2(k + 1));
      const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
      const error = (xs: number[]) => Math.sqrt((mean(xs.map((x) => x * x)) - mean(xs) ** 2) / xs.length);
      expect(r.queries).toBe(2);
      expect(r.hitRate).toBe(1);
      expect(r.hitRateError).toBe(0);
      expect(r.ndcg).toBeCloseTo(mean(gains), 12);
      expect(r.ndcgError).toBeCloseTo(error(gains), 12);
      expect(r.mrr).toBeCloseTo(mean(ranks.map((k) => 1 / k)), 12);
      expect(r.mrrError).toBeCloseTo(error(ranks.map((k) => 1 / k)), 12);
    }
    // Each popularity list holds every other item of the six; together all six.
    expect(row('popularity').coverage).toBe(1);
    expect(result.rows.find((r) => r.task === 'next-best-product' && r.method === 'sequential')!.queries).toBe(0);
  });

  it('computes the next-best-product baselines on a tiny log of orders as by hand', () => {
    // Eight training orders, then two test orders asking 1 -> 3 and 4 -> 5 (no users: an order's
    // first item asks nothing).
    const log = logOf([], [[1, 2, 3], [1, 2, 3], [1, 6, 3], [3, 1], [3, 1], [4, 5], [4, 5], [6, 1], [1, 3], [4, 5]]);
    const result = evaluate(log, { methods: [] });
    expect(result.testEvents).toBe(4);
    const row = (method: Method) => result.rows.find((r) => r.task === 'next-best-product' && r.method === method)!;
    // Purchases: 1 six times, 3 five, then 2, 4, 5, 6 twice each (the lower id first). Popularity:
    // 3 first for 1, 5 fourth for 4. Consecutive: 1 -> 2 twice, 6 once, then the popular fill (3,
    // third); 4 -> 5. Sequential rules: 1 -> 2 at 1 + 1, 3 at 1/2 + 1/2 + 1/2, 6 at 1; 4 -> 5.
    const expected: Record<'popularity' | 'consecutive' | 'sequential', [number, number]> = { popularity: [1, 4], consecutive: [3, 1], sequential: [2, 1] };
    for (const [method, ranks] of Object.entries(expected)) {
      const r = row(method as Method);
      expect(r.queries).toBe(2);
      expect(r.hitRate).toBe(1);
      expect(r.ndcg).toBeCloseTo(ranks.reduce((a, k) => a + 1 / Math.log2(k + 1), 0) / 2, 12);
      expect(r.mrr).toBeCloseTo(ranks.reduce((a, k) => a + 1 / k, 0) / 2, 12);
    }
    expect(result.rows.find((r) => r.task === 'post-browse' && r.method === 'sequential')!.queries).toBe(0);
  });

  it('trains every method, popularity included, only on the events within maxAgeDays of the newest', () => {
    // Views 1 -> 2 in four visits on day 0; 1 -> 3 twice and 5 -> 6 twice on days 95 to 97; then the
    // test visits on days 98 and 99 ask 1 -> 3 and 1 -> 2.
    const log = new EventLog();
    const day = 86_400_000;
    const visits: [number, number[]][] = [[0, [1, 2]], [0, [1, 2]], [0, [1, 2]], [0, [1, 2]], [95, [1, 3]], [95, [1, 3]], [96, [5, 6]], [97, [5, 6]], [98, [1, 3]], [99, [1, 2]]];
    visits.forEach(([d, items], s) => items.forEach((itemId, j) => log.add({ kind: 'view', session: `s${s}`, user: null, itemId, time: 1_700_000_000_000 + d * day + s * 1000 + j, orderId: null })));
    const mrr = (maxAgeDays: number, method: Method): number => {
      const result = evaluate(log, { methods: [], model: { maxAgeDays } });
      expect(result.trainEvents).toBe(16);
      expect(result.trainEventsUsed).toBe(maxAgeDays === 0 ? 16 : 8);
      return result.rows.find((r) => r.task === 'post-browse' && r.method === method)!.mrr;
    };
    // All of it: 2 (4 visits) before 3 (2) for both methods: ranks 2 and 1.
    expect(mrr(0, 'consecutive')).toBeCloseTo((1 / 2 + 1) / 2, 12);
    expect(mrr(0, 'popularity')).toBeCloseTo((1 / 2 + 1) / 2, 12);
    // 90 days before day 97: day 0 is out. Consecutive knows 1 -> 3 only, then fills by
    // popularity, where 2, never viewed since, comes after 3, 5 and 6: ranks 1 and 4.
    expect(mrr(90, 'consecutive')).toBeCloseTo((1 + 1 / 4) / 2, 12);
    expect(mrr(90, 'popularity')).toBeCloseTo((1 + 1 / 4) / 2, 12);
  });

  it('evaluate --categories reads a product table with quoted names and reports the same-category share', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'recs-eval-'));
    afterAll(() => rmSync(dir, { recursive: true, force: true }));
    // Orders of 1 with 2 (same aisle) and of 3 with 4; the last two orders are the test split.
    const orders = [[1, 2], [3, 4], [1, 2], [3, 4], [1, 2], [3, 4], [1, 2], [3, 4], [1, 2], [3, 4]];
    const baskets = join(dir, 'orders.csv');
    writeFileSync(baskets, `order_id,product_id,add_to_cart_order,reordered\n${orders.flatMap((o, i) => o.map((p, j) => `${i + 1},${p},${j + 1},0`)).join('\n')}\n`);
    const products = join(dir, 'products.csv');
    writeFileSync(products, 'product_id,product_name,aisle_id,department_id\n1,"Apples, Red",24,4\n2,Pears,24,4\n3,"Soap ""Fresh""",11,2\n4,Sponges,12,2\n');
    let out = '';
    let err = '';
    const io = { stdout: new Writable({ write(c, _e, done) { out += String(c); done(); } }), stderr: new Writable({ write(c, _e, done) { err += String(c); done(); } }) };
    const args = ['--events', baskets, '--format', 'instacart', '--categories', products, '--weighting', 'count'];
    expect(await runEvaluate([...args, '--category-column', 'aisle_id'], io)).toBe(0);
    expect(err).toContain('4 items with a category');
    // 1 -> 2 (both aisle 24) and 3 -> 4 (aisles 11 and 12): count puts the partner first each time.
    // Columns: task, method, (no parameters), val NDCG, HR@10, ..., same cat, queries.
    const count = out.split('\n').find((l) => /next-best-product\s+count/.test(l))!.trim().split(/\s+/);
    expect(count[3]).toBe('1.0000');
    expect(count.at(-1)).toBe('2');
    // Each list: the partner, then the other items; 2 is in 1's aisle, 4 not in 3's.
    const sameCategory = Number(count.at(-2));
    expect(sameCategory).toBeGreaterThan(0);
    expect(sameCategory).toBeLessThan(1);
    expect(await runEvaluate([...args, '--category-column', 'shelf'], io)).toBe(1);
    expect(err).toContain('no column "shelf" in the header (product_id, product_name, aisle_id, department_id)');
  });
});
