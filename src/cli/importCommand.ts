import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { Catalog, loadCatalogFile } from '../backends/embedded/catalog.js';
import { readEvents } from '../backends/embedded/events/importEvents.js';
import { RELOAD_INTERVAL_MS } from '../backends/embedded/recs.js';
import { StoreOpenError, systemReason } from '../backends/embedded/dataFiles.js';
import { RecsStore, DB_FILE } from '../backends/embedded/store.js';
import { FORMAT_HELP, formatFromArgs, formatOptions } from './eventFormatArgs.js';

/** Where a CLI command writes and which DATA_DIR it works on. */
export interface CommandIo {
  dataDir: string;
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
}

export const IMPORT_HELP = `Usage:
  recs-gateway import events <file> --format <format> [format flags] [--replace]
  recs-gateway import catalog <file> [--replace]

Imports into DATA_DIR/${DB_FILE}. A running gateway on the same DATA_DIR notices the finished
import within ${RELOAD_INTERVAL_MS / 1000} s, rebuilds its model in a worker thread and swaps it in; until then
it serves the previous one.

Events: each line becomes a view or a purchase; malformed lines are reported with their line
number and skipped. Importing a file whose content was already imported (same SHA-256 and
format) does nothing, so an import can safely be run twice. An import is all or nothing: one
that fails (nothing readable in the file, an error, the process killed) leaves the database as
it was, and can be run again. --replace first deletes earlier
imports of the same content or the same path (an updated export replacing the old one).

Catalog: a JSON array of item records (recommendations.md shape), an object with an "items"
array, or JSON lines. Invalid records are reported with their line (array position) and skipped;
an item id imported again replaces the earlier record. --replace empties the catalogue first.

${FORMAT_HELP}
`;

async function sha256Of(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

const fmt = (n: number): string => n.toLocaleString('en-US');

/** `import events|catalog`: returns the exit code (0 done, 1 failed, 2 usage). */
export async function runImport(argv: string[], io: CommandIo): Promise<number> {
  const out = (line: string): void => void io.stdout.write(`${line}\n`);
  const err = (line: string): void => void io.stderr.write(`${line}\n`);
  let parsed;
  try {
    parsed = parseArgs({ args: argv, allowPositionals: true, strict: true, options: { ...formatOptions, replace: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } } });
  } catch (error) {
    err(`${(error as Error).message}\n\n${IMPORT_HELP}`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.help === true) {
    out(IMPORT_HELP);
    return 0;
  }
  const [what, file, ...extra] = positionals;
  if ((what !== 'events' && what !== 'catalog') || file === undefined || extra.length > 0) {
    err(`expected "import events <file>" or "import catalog <file>"\n\n${IMPORT_HELP}`);
    return 2;
  }
  let format;
  if (what === 'events') {
    try {
      format = formatFromArgs(values);
    } catch (error) {
      err((error as Error).message);
      return 2;
    }
  }
  const path = resolve(file);
  try {
    await stat(path);
  } catch {
    err(`cannot read ${path}`);
    return 1;
  }
  const formatName = format?.name ?? 'json';
  const t0 = performance.now();
  let store: RecsStore | undefined;
  try {
    const sha256 = await sha256Of(path);
    store = RecsStore.open(io.dataDir);
    const previous = store.findImport(what, formatName, sha256);
    if (previous !== undefined && values.replace !== true) {
      out(`${path} was already imported (import #${previous.id}, ${fmt(previous.records)} records, ${previous.finishedAt}); nothing to do. Use --replace to import it again.`);
      return 0;
    }
    // --replace's deletions are part of the import's transaction: a failed import keeps the old data
    const { importId, removed } = store.beginImport(what, formatName, path, sha256, { replace: values.replace === true });
    if (removed > 0) out(`replacing ${removed} earlier import(s) of ${path}`);

    if (what === 'catalog') {
      const writer = store.itemWriter();
      const report = await loadCatalogFile(path, new Catalog(), writer.add);
      for (const s of report.skipped.slice(0, 100)) err(`${path}:${s.line}: skipped: ${s.reason}`);
      if (report.loaded === 0 && report.skipped.length > 0) return failed(store, path);
      writer.flush();
      store.finishImport(importId, report.loaded, report.skipped.length);
      out(`catalog: ${fmt(report.loaded)} items loaded, ${fmt(report.skipped.length)} skipped, ${fmt(store.itemCount())} in ${store.path} (${Math.round(performance.now() - t0)} ms)`);
      return 0;
    }

    const items = new Set<number>();
    const writer = store.eventWriter(importId);
    const report = await readEvents(path, format!, (event) => {
      items.add(event.itemId);
      writer.add(event);
    }, {
      onProgress: (lines, events) => err(`  ${fmt(lines)} lines, ${fmt(events)} events, ${((performance.now() - t0) / 1000).toFixed(1)} s`),
    });
    for (const s of report.skipped) err(`${path}:${s.line}: skipped: ${s.reason}`);
    if (report.malformed > report.skipped.length) err(`... and ${fmt(report.malformed - report.skipped.length)} more malformed lines`);
    if (report.events === 0 && report.malformed > 0) return failed(store, path);
    writer.flush();
    store.finishImport(importId, report.events, report.malformed);
    const catalogItems = store.itemCount();
    let unknown = '';
    if (catalogItems > 0) {
      const catalog = store.loadCatalog();
      let missing = 0;
      for (const id of items) if (!catalog.has(id)) missing++;
      // They still count as co-occurrence evidence; they just cannot be recommended.
      if (missing > 0) unknown = `; ${fmt(missing)} of its items are not in the catalogue (counted as evidence, never recommended)`;
    }
    out(`events: ${fmt(report.events)} imported from ${fmt(report.lines)} lines (${fmt(report.ignored)} ignored, ${fmt(report.malformed)} malformed), ${fmt(items.size)} items${unknown}; ${fmt(store.eventCount())} events in ${store.path} (${((performance.now() - t0) / 1000).toFixed(1)} s)`);
    return 0;
  } catch (error) {
    store?.abandonImport();
    err(`recs-gateway: import of ${path} failed: ${importFailure(error)}; nothing was imported`);
    return 1;
  } finally {
    store?.close();
  }

  function failed(opened: RecsStore, file: string): number {
    opened.abandonImport();
    err(`recs-gateway: nothing in ${file} could be imported (see the lines above); nothing was recorded, so the import can be run again once the file or --format is fixed`);
    return 1;
  }
}

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
