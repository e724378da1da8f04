import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { runEvaluate } from '../../src/cli/evaluateCommand.js';
import { evaluateShoppers, formatShopperTable } from '../../src/cli/shopperTask.js';
import { EventLog } from '../../src/recommender/index.js';

// evaluate's shopper task on a log small enough to score by hand.

/** Fillers 100..111 viewed 12..1 times, each view its own session (the popular items); sessions [1, 2] twice and
 * [3, 4] twice; then the two held out: [3, 1, 4] and [1, 2]. */
function tinyLog(): EventLog {
  const log = new EventLog();
  let t = 1_700_000_000_000;
  let s = 0;
  const session = (items: number[]): void => {
    const name = `s${s++}`;
    for (const itemId of items) log.add({ kind: 'view', session: name, user: null, itemId, time: (t += 1000), orderId: null });
  };
  for (let k = 0; k < 12; k++) for (let n = 0; n < 12 - k; n++) session([100 + k]);
  for (const items of [[1, 2], [1, 2], [3, 4], [3, 4], [3, 1, 4], [1, 2]]) session(items);
  return log;
}

describe('evaluate --task shopper', () => {
  it('scores every method as by hand', () => {
    // 84 sessions: 2% held out is the last two. Queries: [3] -> 1, [3, 1] -> 4, [1] -> 2.
    const result = evaluateShoppers(tinyLog(), { testFraction: 0.02 });
    expect(result.testSessions).toBe(2);
    expect(result.trainEvents).toBe(78 + 8);
    const row = (method: string) => {
      const found = result.rows.find((r) => r.method.startsWith(method))!;
      return [found.hitRate, found.mrr, found.queries];
    };
    // the popular ten are 100..109: no target among them
    expect(row('popularity')).toEqual([0, 0, 3]);
    // the last item's rules: 3 -> 4 misses 1; 1 -> 2 misses 4; 1 -> 2 hits 2 first
    expect(row('sequential')).toEqual([1 / 3, 1 / 3, 3]);
    // [3, 1]: sessions with 1 weigh 1 (its position 2 of 2), with 3 weigh 1/2: 2 scores 2, 4 scores 1: 4 second
    expect(row('v-sknn')).toEqual([2 / 3, 0.5, 3]);
    // [3, 1]: 1's list (2) weighs 1, 3's (4) 1/2: 4 second as well
    expect(row('for-you a=10 r=1')).toEqual([2 / 3, 0.5, 3]);
    const sknn = result.rows.find((r) => r.method === 'v-sknn')!;
    expect(sknn.hitRateError).toBeCloseTo(Math.sqrt((2 / 3) * (1 / 3) / 3), 10);
    expect(sknn.mrrError).toBeCloseTo(Math.sqrt(((1 / 4 + 1) / 3 - 0.25) / 3), 10);
    expect(formatShopperTable(result.rows)).toMatch(/v-sknn\s+\S+\s+0\.6667\s+0\.2722\s+0\.5000\s+0\.2357\s+3/);
  });

  it('refuses a task it does not know', async () => {
    let err = '';
    const sink = (write: (text: string) => void) => new Writable({ write: (chunk: Buffer, _e, done) => (write(chunk.toString()), done()) });
    const code = await runEvaluate(['--task', 'shoppers', '--views', 'nowhere.csv'], { stdout: sink(() => undefined), stderr: sink((text) => (err += text)) });
    expect(code).toBe(2);
    expect(err).toContain('--task must be anchored or shopper');
  });
});
