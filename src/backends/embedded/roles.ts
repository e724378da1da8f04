import type pg from 'pg';
import type { Backend, RoleStateModel } from '../../ports/backend.js';
import { checkKeyStore, EmbeddedIngest, type EmbeddedIngestOptions, type LiveRecs } from './index.js';
import { EmbeddedKeyService, type EmbeddedKeyServiceOptions } from './keys/keyService.js';
import { openPool } from './keys/postgresStore.js';
import type { KeyStore } from './keys/store.js';
import { LearnerLock } from './learnerLock.js';
import { openRecsData } from './loadFromStore.js';
import { migratePublished, roleNames } from './publishedLists.js';
import { Publisher } from './publisher.js';
import type { EmbeddedRecs } from './recs.js';
import { ServeRecs } from './serveRecs.js';
import { maxAgeMsOf } from '../../recommender/index.js';

// any constant will do: the same in every process; taken so that roles starting together create the table once
const PUBLISHED_MIGRATION_LOCK = 7_311_923_043;

export interface RoleOptions {
  /** DATABASE_URL: the store the roles share. */
  connectionString: string;
  /** RECS_MAX_LAG_SECONDS. */
  maxLagSeconds: number;
  /** RECS_EVENTS_MAX_AGE_DAYS (0: none): the learner's window, which a serve replica's recommendedForYou keeps to. */
  eventsMaxAgeDays?: number;
  say: (line: string) => void;
}

/** The published lists' table, created once, and the names (lock, channel) of this store's schema. */
export async function preparePublished(pool: pg.Pool): Promise<{ lockKey: string; channel: string }> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query('SELECT pg_advisory_xact_lock($1)', [PUBLISHED_MIGRATION_LOCK]);
    await migratePublished(client);
    const { rows } = await client.query<{ schema: string | null }>('SELECT current_schema() AS schema');
    await client.query('COMMIT');
    return roleNames(rows[0]?.schema ?? null);
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}

const ageOf = (at: number | null): number | null => (at === null ? null : Math.max(0, (Date.now() - at) / 1000));

/** RECS_ROLE=learn: the `all` backend, whose model also publishes its lists while this process holds the
 * store's learner lock; standing by otherwise, asking for the lock every second. */
export async function asLearner(backend: Backend, recs: EmbeddedRecs, options: RoleOptions): Promise<Backend> {
  const pool = openPool({ connectionString: options.connectionString, max: 2 });
  const names = await preparePublished(pool).catch(async (error: unknown) => {
    await pool.end();
    throw error;
  });
  const publisher = new Publisher(recs, pool, names, options.say);
  const lock = new LearnerLock({ connectionString: options.connectionString, lockKey: names.lockKey }, {
    acquired: (pid) => {
      options.say('learner: this process holds the learner lock: it publishes the lists');
      publisher.activate(pid).catch((error: unknown) => options.say(`learner: cannot start publishing: ${(error as Error).message}`));
    },
    lost: () => {
      publisher.deactivate();
      options.say('learner: the learner lock\'s connection is gone: standing by');
    },
    say: options.say,
  });
  lock.start();
  options.say('learner: asking for the learner lock (one learner publishes; others stand by)');
  return {
    ...backend,
    roleState: (): RoleStateModel => ({
      role: 'learn', learnerActive: publisher.active, listsAgeSeconds: ageOf(publisher.stats.lastPublishAt), maxLagSeconds: options.maxLagSeconds,
    }),
    async close() {
      await lock.close();
      await publisher.close();
      await pool.end();
      await backend.close();
    },
  };
}

/** RECS_ROLE=serve: no model. Lists from the published ones, items from the store, events and records
 * stored as `all` stores them; its memory is its caches', whatever the store holds. */
export async function openServeBackend(
  keyStore: KeyStore,
  options: RoleOptions & { keyOptions?: EmbeddedKeyServiceOptions; ingestOptions?: EmbeddedIngestOptions },
): Promise<Backend> {
  const store = (await openRecsData({ kind: 'postgres', connectionString: options.connectionString }))!;
  const pool = openPool({ connectionString: options.connectionString, max: 4 });
  let recs: ServeRecs;
  try {
    const names = await preparePublished(pool);
    recs = new ServeRecs(pool, { connectionString: options.connectionString, names, say: options.say, maxAgeMs: maxAgeMsOf({ maxAgeDays: options.eventsMaxAgeDays ?? 0 }) });
    await recs.start();
  } catch (error) {
    await pool.end();
    await store.close();
    throw error;
  }
  const live: LiveRecs = {
    // the learner applies them; this replica answers from what it publishes
    applyOwnEvents: () => Promise.resolve(),
    applyOwnItems: (items) => Promise.resolve(recs.forgetItems(items.map((item) => item.itemId))),
    catalog: { get: () => undefined },
    itemCount: 0,
    newItemCount: () => 0,
    store,
    withoutRecord: (itemIds) => recs.countWithoutRecord(itemIds),
  };
  const keys = new EmbeddedKeyService(keyStore, options.keyOptions ?? {});
  options.say('recommender: serve role: answering from the published lists, no model held');
  return {
    keys,
    recs,
    ingest: new EmbeddedIngest(live, options.ingestOptions ?? {}),
    onDataChange: (listener) => recs.onChange(listener),
    recsNow: recs.now,
    roleState: (): RoleStateModel => ({
      role: 'serve', learnerActive: recs.published.learnerActive, listsAgeSeconds: ageOf(recs.published.publishedAt), maxLagSeconds: options.maxLagSeconds,
    }),
    check: () => checkKeyStore(keyStore),
    async close() {
      await recs.close();
      await pool.end();
      await store.close();
      await keys.close();
      await keyStore.close();
    },
  };
}
