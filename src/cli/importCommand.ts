import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { argsProblem, usageProblem } from './commandArgs.js';
import { checkEvents, checkItems, MAX_ITEMS_PER_CALL } from '../model/ingest.js';
import type { ItemModel } from '../ports/backend.js';
import { Catalog, loadCatalogFile } from '../recommender/index.js';
import type { RecEvent } from '../recommender/index.js';
import { EventLineError, type EventFormat } from './eventFormats.js';
import { nothingUsable, nothingUsableLine, readEvents, toEventInput } from './importEvents.js';
import type { ImportRecord, ImportSession, RecsDataStore } from '../backends/embedded/liveStore.js';
import { openRecsData } from '../backends/embedded/loadFromStore.js';
import { FULL_RELOAD_EVENTS } from '../backends/embedded/storeFollower.js';
import { recsSource } from '../backends/embedded/openRecs.js';
import { StoreOpenError, systemReason } from '../backends/embedded/dataFiles.js';
import { DB_FILE } from '../backends/embedded/store.js';
import { CATALOG_FORMAT_HELP, FORMAT_HELP, catalogFormatFromArgs, catalogFormatOptions, formatFromArgs, formatOptions, refuseOtherFlags } from './eventFormatArgs.js';
import { loadCatalogCsv, type CatalogCsvFormat } from './catalogFormat.js';

export interface CommandIo {
  dataDir: string;
  /** DATABASE_URL: import into PostgreSQL instead of DATA_DIR/recs.db. */
  databaseUrl?: string | null;
  /** The PostgreSQL schema for the tables (tests). */
  schema?: string;
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
}

export const IMPORT_HELP = `Usage:
  recs-gateway import events <file> --format <format> [format flags] [--replace]
  recs-gateway import catalog <file> [--format csv <catalogue flags>] [--replace]

Imports into DATA_DIR/${DB_FILE}, or into PostgreSQL when DATABASE_URL is set: the store the
gateway's recordEvents and upsertItems write to, with the same checks. Running gateways on it
apply the new rows within about a second (RECS_FOLLOW_INTERVAL_MS); more than
${FULL_RELOAD_EVENTS.toLocaleString('en-US')} events at once (and a fifth of those they hold), or a
--replace, they reload whole in a worker thread and swap the new model in; until then they serve the previous one.

Events: each line becomes a view or a purchase; malformed lines are reported with their line
number and skipped. Importing a file whose content was already imported (same SHA-256) the same
way (the same --format, and for csv the same column and value flags) does nothing, so an import
can safely be run twice. The same content read another way is refused, as it would count its
events twice (once misread); --replace imports it again that way. An import is all or nothing:
one that fails (nothing readable in the file, an error, the process killed) leaves the database
as it was, and can be run again. --replace first deletes earlier imports of the same content or
the same path (an updated export replacing the old one).

Catalog: a JSON array of item records (recommendations.md shape), an object with an "items"
array, or JSON lines; or with --format csv, a delimited file whose columns the flags name.
Invalid records are reported with their line (array position) and skipped; an item id imported
again replaces the earlier record. --replace empties the catalogue first.

${FORMAT_HELP}

${CATALOG_FORMAT_HELP}
`;

async function sha256Of(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

export const fmt = (n: number): string => n.toLocaleString('en-US');

/** `import events|catalog`: returns the exit code (0 done, 1 failed, 2 usage). */
export async function runImport(argv: string[], io: CommandIo): Promise<number> {
  const out = (line: string): void => void io.stdout.write(`${line}\n`);
  const err = (line: string): void => void io.stderr.write(`${line}\n`);
  let parsed;
  try {
    parsed = parseArgs({ args: argv, allowPositionals: true, strict: true, options: { ...formatOptions, ...catalogFormatOptions, replace: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } } });
  } catch (error) {
    err(argsProblem(error, 'import') ?? (error as Error).message);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.help === true) {
    out(IMPORT_HELP);
    return 0;
  }
  const [what, file, ...extra] = positionals;
  if ((what !== 'events' && what !== 'catalog') || file === undefined || extra.length > 0) {
    const reason = what !== 'events' && what !== 'catalog'
      ? 'expected "import events <file>" or "import catalog <file>"'
      : file === undefined ? `name the file to import: import ${what} <file>` : `unexpected argument ${extra[0]}: one file an import`;
    err(usageProblem(reason, 'import'));
    return 2;
  }
  let format: EventFormat | undefined;
  let catalogFormat: CatalogCsvFormat | null = null;
  try {
    if (what === 'events') {
      refuseOtherFlags(values, 'events');
      format = formatFromArgs(values);
    } else catalogFormat = catalogFormatFromArgs(values);
  } catch (error) {
    err((error as Error).message);
    return 2;
  }
  const path = resolve(file);
  try {
    if ((await stat(path)).isDirectory()) {
      err(`recs-gateway: cannot read ${path}: it is a directory; name the file to import`);
      return 1;
    }
  } catch (error) {
    err(`recs-gateway: cannot read ${path}: ${systemReason(error)}`);
    return 1;
  }
  // an import is known by its content and the way it is read (preset, or csv with its columns)
  const mapping = format?.mapping ?? catalogFormat?.mapping ?? 'json';
  const t0 = performance.now();
  let store: RecsDataStore | null = null;
  let session: ImportSession | undefined;
  try {
    const sha256 = await sha256Of(path);
    const source = recsSource({ dataDir: io.dataDir, databaseUrl: io.databaseUrl ?? null, ...(io.schema ? { schema: io.schema } : {}) })!;
    store = await openRecsData(source);
    const opened = store!;
    if (values.replace !== true) {
      const previous = await opened.findImport(what, mapping, sha256);
      const done = (i: ImportRecord): string => `import #${i.id}, ${fmt(i.records)} record${i.records === 1 ? '' : 's'}, ${i.finishedAt}`;
      if (previous !== undefined) {
        out(`${path} was already imported (${done(previous)}); nothing to do. Use --replace to import it again.`);
        return 0;
      }
      const other = (await opened.imports()).find((i) => i.what === what && i.sha256 === sha256 && i.finishedAt !== null);
      if (other !== undefined && other.format === 'csv' && format?.name === 'csv') {
        // older versions recorded a csv import as "csv" alone, without its columns
        out(`${path} was already imported (${done(other)}) by an earlier version, which did not record its columns; nothing to do. If they were not these (${mapping}), --replace imports it again with them.`);
        return 0;
      }
      if (other !== undefined) {
        // imported again another way, it would count each event twice, once misread
        err(`recs-gateway: ${path} was imported as ${other.format} (${done(other)}), not as ${mapping}; --replace imports it again this way (dropping what import #${other.id} stored)`);
        return 1;
      }
    }
    session = await opened.beginImport(what, mapping, path, sha256);
    const replace = { replace: values.replace === true };

    if (what === 'catalog') {
      const catalog = new Catalog();
      const report = catalogFormat === null ? await loadCatalogFile(path, catalog) : await loadCatalogCsv(path, catalogFormat, catalog);
      for (const s of report.skipped.slice(0, SKIPPED_SHOWN)) err(`${path}:${s.line}: skipped: ${s.reason}`);
      if (report.skipped.length > SKIPPED_SHOWN) err(`... and ${fmt(report.skipped.length - SKIPPED_SHOWN)} more skipped records`);
      if (report.loaded === 0 && report.skipped.length > 0) return await failed(session, path, report.skipped.length);
      // the checks of upsertItems, a call's worth at a time
      let batch: ItemModel[] = [];
      const flush = async (): Promise<void> => {
        await session!.addItems(checkItems(batch));
        batch = [];
      };
      for (const item of catalog.values()) {
        batch.push(item);
        if (batch.length === MAX_ITEMS_PER_CALL) await flush();
      }
      await flush();
      const { removed } = await session.finish(report.loaded, report.skipped.length, replace);
      if (removed > 0) out(`replaced the catalogue of ${removed} earlier import(s)`);
      const counts = await opened.counts();
      out(`catalog: ${fmt(report.loaded)} items loaded, ${fmt(report.skipped.length)} skipped, ${fmt(counts.items)} in ${opened.where} (${Math.round(performance.now() - t0)} ms)`);
      return 0;
    }

    const items = new Set<number>();
    let pending: RecEvent[] = [];
    const now = Date.now();
    const report = await readEvents(path, format!, (event) => {
      try {
        checkEvents([toEventInput(event)], now);
      } catch (error) {
        // the API's message without the call's index: "sessionId: a view needs a sessionId or a userId"
        throw new EventLineError((error as Error).message.replace(/^events\[0\]\./, ''));
      }
      items.add(event.itemId);
      pending.push(event);
      if (pending.length < IMPORT_BATCH) return undefined;
      const batch = pending;
      pending = [];
      return session!.addEvents(batch);
    }, {
      onProgress: (lines, events) => err(`  ${fmt(lines)} lines, ${fmt(events)} events, ${((performance.now() - t0) / 1000).toFixed(1)} s`),
    });
    for (const s of report.skipped) err(`${path}:${s.line}: skipped: ${s.reason}`);
    if (report.malformed > report.skipped.length) err(`... and ${fmt(report.malformed - report.skipped.length)} more malformed lines`);
    if (nothingUsable(report)) {
      await session.abandon();
      err(`recs-gateway: ${nothingUsableLine(path, format!, report)}; nothing was recorded, so the import can be run again once the file or --format is fixed`);
      return 1;
    }
    await session.addEvents(pending);
    const { removed } = await session.finish(report.events, report.malformed, replace);
    if (removed > 0) out(`replaced ${removed} earlier import(s) of ${path}`);
    const counts = await opened.counts();
    const missing = await opened.countWithoutRecord([...items]);
    out(`events: ${fmt(report.events)} imported from ${fmt(report.lines)} lines (${fmt(report.ignored)} ignored, ${fmt(report.malformed)} malformed), ${fmt(items.size)} items; ${fmt(counts.events)} events in ${opened.where} (${((performance.now() - t0) / 1000).toFixed(1)} s)`);
    if (missing > 0) {
      // an events-only import must never look like it changed nothing visible without saying why
      const have = `${fmt(missing)} of its items ${missing === 1 ? 'has' : 'have'} no record`;
      out(counts.items === 0
        ? `${have}: the store has no catalogue yet, so a gateway serves the demo shop (these events count only for demo items) until one is imported (recs-gateway import catalog <file>) or sent (upsertItems)`
        : `${have}: they count as evidence for the others but are never recommended until their records are imported or sent (upsertItems)`);
    }
    return 0;
  } catch (error) {
    await session?.abandon().catch(() => undefined);
    err(`recs-gateway: import of ${path} failed: ${importFailure(error)}; nothing was imported`);
    return 1;
  } finally {
    await store?.close();
  }

  async function failed(opened: ImportSession, file: string, skipped: number): Promise<number> {
    await opened.abandon();
    const expected = catalogFormat === null ? 'a JSON array of records, an object with an "items" array, or JSON lines' : catalogFormat.expected;
    const fix = catalogFormat === null ? 'the file is fixed' : 'the file or its flags are fixed';
    err(`recs-gateway: nothing in ${file} could be read as item records (expected ${expected}): ${fmt(skipped)} skipped; nothing was recorded, so the import can be run again once ${fix}`);
    return 1;
  }
}

/** The skipped records of a catalogue a run lists one by one; the rest are counted. */
const SKIPPED_SHOWN = 100;

const IMPORT_BATCH = 20_000;

/** Why an import failed, as one line: SQLite's and the file system's codes in words. */
function importFailure(error: unknown): string {
  if (error instanceof StoreOpenError) return error.message;
  switch ((error as { code?: string } | null)?.code) {
    case 'SQLITE_BUSY':
      return 'another import is writing to the database; run this one when it has finished';
    case 'SQLITE_FULL':
      return 'the disk is full';
    default:
      return systemReason(error);
  }
}
