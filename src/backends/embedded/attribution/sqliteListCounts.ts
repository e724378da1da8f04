import { randomBytes } from 'node:crypto';
import type Database from 'better-sqlite3';
import type { AttributionStore, ListCountsModel } from '../../../ports/attribution.js';
import { promised } from '../../../shared/promised.js';

/** The list_counts and tracking_secret tables of keys.db (the administrators' store), made when missing. */
export class SqliteListCounts implements AttributionStore {
  private readonly add;
  private readonly read;
  private readonly makeSecret;
  private readonly readSecret;

  constructor(db: Database.Database) {
    db.exec(`
      CREATE TABLE IF NOT EXISTS list_counts (
        hour INTEGER NOT NULL,
        kind TEXT NOT NULL,
        variant TEXT NOT NULL,
        impressions INTEGER NOT NULL DEFAULT 0,
        clicks INTEGER NOT NULL DEFAULT 0,
        purchases INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (hour, kind, variant)
      );
      CREATE TABLE IF NOT EXISTS tracking_secret (id INTEGER PRIMARY KEY CHECK (id = 1), secret TEXT NOT NULL);`);
    const insert = db.prepare<ListCountsModel>(
      `INSERT INTO list_counts (hour, kind, variant, impressions, clicks, purchases) VALUES (@hour, @kind, @variant, @impressions, @clicks, @purchases)
       ON CONFLICT (hour, kind, variant) DO UPDATE SET impressions = impressions + excluded.impressions, clicks = clicks + excluded.clicks, purchases = purchases + excluded.purchases`,
    );
    this.add = db.transaction((counts: readonly ListCountsModel[]) => {
      for (const count of counts) insert.run(count);
    });
    this.read = db.prepare<[number, number, number], ListCountsModel>(
      `SELECT ? AS hour, kind, variant, sum(impressions) AS impressions, sum(clicks) AS clicks, sum(purchases) AS purchases
         FROM list_counts WHERE hour >= ? AND hour < ? GROUP BY kind, variant ORDER BY kind, variant`,
    );
    this.makeSecret = db.prepare('INSERT INTO tracking_secret (id, secret) VALUES (1, ?) ON CONFLICT (id) DO NOTHING');
    this.readSecret = db.prepare<[], string>('SELECT secret FROM tracking_secret WHERE id = 1').pluck();
  }

  addListCounts(counts: readonly ListCountsModel[]): Promise<void> {
    return promised(() => this.add.immediate(counts));
  }

  readListCounts(sinceHour: number, untilHour: number): Promise<ListCountsModel[]> {
    return promised(() => this.read.all(sinceHour, sinceHour, untilHour));
  }

  trackingSecret(): Promise<string> {
    return promised(() => {
      this.makeSecret.run(randomBytes(32).toString('base64url'));
      return this.readSecret.get()!;
    });
  }
}
