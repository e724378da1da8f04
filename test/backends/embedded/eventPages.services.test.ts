import { afterAll, describe, expect, it } from 'vitest';
import { openPool } from '../../../src/backends/embedded/keys/postgresStore.js';
import { openRecsData } from '../../../src/backends/embedded/loadFromStore.js';
import { eventPageQuery } from '../../../src/backends/embedded/postgresAppend.js';
import type { RecEvent } from '../../../src/recommender/index.js';
import { DATABASE_URL, dropSchema, testSchema } from '../../helpers/stores.js';

/** Pages of events on a real PostgreSQL whose statistics lag a bulk append (analysed at 1,000 events, 100,000 more
 * since, autovacuum off): a page scans its own rows, and a start reads every event of its window once, in order.
 * (The plan that scanned the whole range after a page for every page showed at 10 million events, not here.) */
const PAGE = 20_000;
const events = (n: number, from: number): RecEvent[] =>
  Array.from({ length: n }, (_, i) => ({ kind: 'view' as const, itemId: 1 + ((from + i) % 500), session: `s${(from + i) >> 2}`, user: null, orderId: null, time: 1_700_000_000_000 + from + i }));

/** The most rows any scan of the plan read (EXPLAIN ANALYZE). */
function mostRowsScanned(plan: Record<string, unknown>): number {
  const here = String(plan['Node Type']).includes('Scan') ? Number(plan['Actual Rows']) : 0;
  return Math.max(here, ...((plan.Plans as Record<string, unknown>[] | undefined) ?? []).map(mostRowsScanned));
}

describe('event pages on PostgreSQL', () => {
  const schema = testSchema();
  afterAll(() => dropSchema(schema));

  it('scan their own rows, and give a start every event of its window once', async () => {
    const store = (await openRecsData({ kind: 'postgres', connectionString: DATABASE_URL, schema }))!;
    const pool = openPool({ connectionString: DATABASE_URL, schema, max: 1 });
    try {
      await store.appendEvents(events(1000, 0));
      await pool.query('ANALYZE recs_events');
      await pool.query('ALTER TABLE recs_events SET (autovacuum_enabled = false)');
      for (let at = 1000; at < 101_000; at += 5000) await store.appendEvents(events(5000, at));
      const head = (await store.head()).lastEventId;

      const { text, values } = eventPageQuery(50_000, PAGE, { upTo: head, from: Number.MIN_SAFE_INTEGER });
      const { rows } = await pool.query<{ 'QUERY PLAN': [{ Plan: Record<string, unknown> }] }>({ text: `EXPLAIN (ANALYZE, FORMAT JSON) ${text}`, values });
      expect(mostRowsScanned(rows[0]!['QUERY PLAN'][0].Plan)).toBeLessThanOrEqual(PAGE);

      // a start's read: every event once, in order, the window's bound kept
      let count = 0;
      let last = 0;
      let ordered = true;
      const from = 1_700_000_000_000 + 30_000;
      await store.snapshot({ record: () => undefined, event: (row) => {
        ordered &&= row[0] > last && row[6] >= from;
        last = row[0];
        count++;
      } }, { maxAgeMs: 101_000 - 1 - 30_000 });
      expect({ count, ordered }).toEqual({ count: 101_000 - 30_000, ordered: true });
    } finally {
      await pool.end();
      await store.close();
    }
  }, 120_000);
});
