import { describe, it, expect } from 'vitest';
import { seededRandom } from '../../src/backends/embedded/demo.js';
import { EventLog } from '../../src/backends/embedded/events/event.js';
import { PARAMETER_GRID, describeScoring, evaluate, formatTable } from '../../src/backends/embedded/recommender/evaluate.js';

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
  it('chooses each weighting\'s parameters on the validation split and reports the test split', () => {
    const result = evaluate(plantedLog());
    expect(result.testEvents).toBeGreaterThan(0);
    expect(result.validationEvents).toBeGreaterThan(0);
    // Validation comes out of the training part: 20% of 80% of the visits.
    expect(result.validationEvents).toBeLessThan(result.testEvents);
    const row = (task: string, method: string) => result.rows.find((r) => r.task === task && r.method === method)!;
    for (const task of ['post-browse', 'next-best-product'] as const) {
      // The planted pairs are found, the popularity baseline cannot know them.
      expect(row(task, 'model/count').hitRate).toBeGreaterThan(0.45);
      expect(row(task, 'popularity').hitRate).toBeLessThan(row(task, 'model/count').hitRate / 2);
      for (const [weighting, grid] of Object.entries(PARAMETER_GRID)) {
        const points = result.grid.filter((p) => p.task === task && p.scoring.weighting === weighting);
        expect(points).toHaveLength(grid.length);
        const best = points.reduce((a, b) => (b.ndcg > a.ndcg ? b : a));
        const chosen = row(task, `model/${weighting}`);
        expect(chosen.parameters).toBe(describeScoring(best.scoring));
        expect(chosen.validationNdcg).toBe(best.ndcg);
      }
      expect(row(task, 'default/damped').queries).toBe(row(task, 'popularity').queries);
    }
    expect(formatTable(result.rows)).toContain('default/damped');
  });
});
