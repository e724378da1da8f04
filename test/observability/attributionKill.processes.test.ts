import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { PHONE } from '../helpers/harness.js';
import { firstAdmin, gql, runCli, startServe, type ServeProcess } from '../helpers/processes.js';
import { tempDir } from '../helpers/stores.js';

const LIST = `{ recommendations(itemId: ${PHONE}, kind: NEXT_BEST_PRODUCT, first: 2) { trackingId } }`;
const STATS = '{ recommendationStats(since: "2020-01-01T00:00:00Z") { kind variant impressions } }';

/** The impressions the store holds, as a process wrote them (not what it holds in memory). */
function stored(dataDir: string): number {
  const db = new Database(path.join(dataDir, 'keys.db'), { readonly: true });
  try {
    return (db.prepare("SELECT coalesce(sum(impressions), 0) AS n FROM list_counts WHERE kind = 'NEXT_BEST_PRODUCT'").get() as { n: number }).n;
  } finally {
    db.close();
  }
}

describe('counts of lists and a killed process', () => {
  const dir = tempDir('recs-attribution-kill-');
  let serve: ServeProcess | undefined;
  afterAll(async () => {
    await serve?.stop('SIGKILL');
    dir.remove();
  });

  it('loses at most the counts since its last write (2 s) to SIGKILL, and none to SIGTERM', { timeout: 120_000 }, async () => {
    serve = await startServe({ DATA_DIR: dir.dir });
    const admin = firstAdmin(serve);
    for (let i = 0; i < 5; i++) await gql(serve.url, LIST, {}, { authorization: admin });
    // written within a flush interval or two, bounded
    const end = Date.now() + 10_000;
    while (stored(dir.dir) < 5 && Date.now() < end) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(stored(dir.dir)).toBe(5);
    for (let i = 0; i < 3; i++) await gql(serve.url, LIST, {}, { authorization: admin });
    await serve.stop('SIGKILL');

    serve = await startServe({ DATA_DIR: dir.dir });
    const after = await gql(serve.url, STATS, {}, { authorization: admin });
    const impressions = (after.body.data!.recommendationStats as unknown as { kind: string; impressions: number }[]).find((s) => s.kind === 'NEXT_BEST_PRODUCT')!.impressions;
    expect(impressions).toBeGreaterThanOrEqual(5);
    expect(impressions).toBeLessThanOrEqual(8);

    await gql(serve.url, LIST, {}, { authorization: admin });
    await serve.stop('SIGTERM');
    expect(stored(dir.dir)).toBe(impressions + 1);
  });

  it('refuses a bad RECS_EXPERIMENT at start, in one line', async () => {
    const result = await runCli(['serve'], { DATA_DIR: dir.dir, RECS_EXPERIMENT: 'recency-half-life:7d,share=0.5' });
    expect(result.code).toBe(2);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr).toMatch(/RECS_EXPERIMENT must be evidence-prior:<k>,share=<s>/);
  });
});
