import { parseArgs } from 'node:util';
import { argsProblem, usageProblem } from './commandArgs.js';
import { openRecsData } from '../backends/embedded/loadFromStore.js';
import { describeDatabase } from '../backends/embedded/keys/postgresStore.js';
import { recsSource } from '../backends/embedded/openRecs.js';
import { DB_FILE } from '../backends/embedded/store.js';
import { StoreBusyError, StoreOpenError, systemReason } from '../backends/embedded/dataFiles.js';
import { DAY_MS } from '../recommender/index.js';
import { fmt, type CommandIo } from './importCommand.js';

export const PRUNE_HELP = `Usage: recs-gateway prune events [--older-than-days <days>] [--dry-run]

Deletes from DATA_DIR/${DB_FILE}, or from PostgreSQL when DATABASE_URL is set, the events older
than <days> before the newest stored event: by default RECS_EVENTS_MAX_AGE_DAYS, the age past
which events stop counting in the recommender, so that what the gateway serves does not change
(run it with the gateways' own setting: a shorter one deletes events they count).
A start reads only the events that count whatever the store holds; this frees the disk of the
rest (SQLite reuses the freed pages for later writes; its file does not shrink). Runs beside
gateways writing to the same store: it deletes in short transactions, and they follow on. The
eventIds of events that old go too (sent again, such an event is stored again, and counts for
nothing, being as old); item records and the names of sessions, users and orders are kept.
--dry-run counts what it would delete, and deletes nothing.
`;

/** `prune events`: returns the exit code (0 done, 1 failed, 2 usage). */
export async function runPrune(argv: string[], io: CommandIo & { maxAgeDays: number }): Promise<number> {
  const out = (line: string): void => void io.stdout.write(`${line}\n`);
  const err = (line: string): void => void io.stderr.write(`${line}\n`);
  let parsed;
  try {
    parsed = parseArgs({ args: argv, allowPositionals: true, strict: true, options: { 'older-than-days': { type: 'string' }, 'dry-run': { type: 'boolean' }, help: { type: 'boolean', short: 'h' } } });
  } catch (error) {
    err(argsProblem(error, 'prune') ?? (error as Error).message);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.help === true) {
    out(PRUNE_HELP);
    return 0;
  }
  if (positionals.length !== 1 || positionals[0] !== 'events') {
    err(usageProblem('expected "prune events"', 'prune'));
    return 2;
  }
  const given = values['older-than-days'];
  if (given !== undefined && !/^[1-9][0-9]{0,4}$/.test(given)) {
    err(`--older-than-days must be a whole number of days from 1 to 99999, got ${JSON.stringify(given)}`);
    return 2;
  }
  const days = given !== undefined ? Number(given) : io.maxAgeDays;
  if (days === 0) {
    err('RECS_EVENTS_MAX_AGE_DAYS is 0: every event counts, so none is too old; give --older-than-days <days> to prune all the same');
    return 2;
  }
  const source = recsSource({ dataDir: io.dataDir, databaseUrl: io.databaseUrl ?? null, ...(io.schema ? { schema: io.schema } : {}) })!;
  const t0 = performance.now();
  // a store that is not there is not made (PostgreSQL: no tables), as a start would make it
  const store = await openRecsData(source, { existing: true });
  if (store === null) {
    out(source.kind === 'sqlite' ? `no store at ${io.dataDir}/${DB_FILE}: nothing to prune` : `no store in ${describeDatabase(source.connectionString)}: nothing to prune`);
    return 0;
  }
  try {
    const dryRun = values['dry-run'] === true;
    const { newest, removed, eventIds } = await store.pruneEvents(days * DAY_MS, dryRun);
    const { events } = await store.counts();
    if (newest === null) out(`no events in ${store.where}: nothing to prune`);
    else {
      const older = `events: ${fmt(removed)} older than ${fmt(days)} ${days === 1 ? 'day' : 'days'} before the newest (${new Date(newest).toISOString()})`;
      if (dryRun) out(`${older} would be deleted, ${fmt(events - removed)} left in ${store.where}; ${fmt(eventIds)} eventIds of events that old would be forgotten (dry run: nothing deleted)`);
      else out(`${older} deleted, ${fmt(events)} left in ${store.where}; ${fmt(eventIds)} eventIds of events that old forgotten (${((performance.now() - t0) / 1000).toFixed(1)} s)`);
    }
    return 0;
  } catch (error) {
    const reason = error instanceof StoreOpenError || error instanceof StoreBusyError ? error.message : systemReason(error);
    err(`recs-gateway: prune failed: ${reason}; the events deleted before it stopped stay deleted, the others are as they were: run it again`);
    return 1;
  } finally {
    await store.close();
  }
}
