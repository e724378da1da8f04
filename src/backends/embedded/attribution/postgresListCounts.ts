import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import type { AttributionStore, ListCountsModel } from '../../../ports/attribution.js';

/** The tables, made by PostgresKeyStore's migration, under its lock: replicas starting together would race. */
export const LIST_COUNTS_TABLES = `
  CREATE TABLE IF NOT EXISTS list_counts (
    hour bigint NOT NULL,
    kind text NOT NULL,
    variant text NOT NULL,
    impressions bigint NOT NULL DEFAULT 0,
    clicks bigint NOT NULL DEFAULT 0,
    purchases bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (hour, kind, variant)
  );
  CREATE TABLE IF NOT EXISTS tracking_secret (id smallint PRIMARY KEY CHECK (id = 1), secret text NOT NULL);`;

/** The list_counts and tracking_secret tables beside the key tables. */
export class PostgresListCounts implements AttributionStore {
  constructor(private readonly pool: pg.Pool) {}

  async addListCounts(counts: readonly ListCountsModel[]): Promise<void> {
    if (counts.length === 0) return;
    await this.pool.query(
      `INSERT INTO list_counts (hour, kind, variant, impressions, clicks, purchases)
       SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::bigint[], $5::bigint[], $6::bigint[])
       ON CONFLICT (hour, kind, variant) DO UPDATE SET impressions = list_counts.impressions + excluded.impressions,
         clicks = list_counts.clicks + excluded.clicks, purchases = list_counts.purchases + excluded.purchases`,
      [counts.map((c) => c.hour), counts.map((c) => c.kind), counts.map((c) => c.variant), counts.map((c) => c.impressions), counts.map((c) => c.clicks), counts.map((c) => c.purchases)],
    );
  }

  async readListCounts(sinceHour: number, untilHour: number): Promise<ListCountsModel[]> {
    const { rows } = await this.pool.query<Record<'kind' | 'variant' | 'impressions' | 'clicks' | 'purchases', string>>(
      `SELECT kind, variant, sum(impressions) AS impressions, sum(clicks) AS clicks, sum(purchases) AS purchases
         FROM list_counts WHERE hour >= $1 AND hour < $2 GROUP BY kind, variant ORDER BY kind, variant`,
      [sinceHour, untilHour],
    );
    return rows.map((row) => ({
      hour: sinceHour, kind: row.kind as ListCountsModel['kind'], variant: row.variant as ListCountsModel['variant'],
      impressions: Number(row.impressions), clicks: Number(row.clicks), purchases: Number(row.purchases),
    }));
  }

  async trackingSecret(): Promise<string> {
    await this.pool.query('INSERT INTO tracking_secret (id, secret) VALUES (1, $1) ON CONFLICT (id) DO NOTHING', [randomBytes(32).toString('base64url')]);
    const { rows } = await this.pool.query<{ secret: string }>('SELECT secret FROM tracking_secret WHERE id = 1');
    return rows[0]!.secret;
  }
}
