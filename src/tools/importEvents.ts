import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { Readable } from 'node:stream';
import type { EventInputModel } from '../ports/backend.js';
import type { RecEvent } from '../recommender/eventLog.js';
import { EventLineError } from './eventFormats.js';
import type { CsvFormat, EventFormat } from './eventFormats.js';

/** A line skipped on import, 1-based. */
export interface SkippedLine {
  line: number;
  reason: string;
}

/** What reading an event file did. */
export interface EventReadReport {
  lines: number;
  events: number;
  /** Well-formed lines that are neither a view nor a purchase (add-to-cart, favourite). */
  ignored: number;
  /** Number of malformed lines; only the first `maxReported` are listed in `skipped`. */
  malformed: number;
  skipped: SkippedLine[];
}

/** Options of readEvents. */
export interface ReadEventsOptions {
  /** Called about once a second with the lines read so far; default none. */
  onProgress?: (lines: number, events: number) => void;
  /** How many malformed lines to list (all are counted); default 100. */
  maxReported?: number;
}

function isCsvFormat(format: EventFormat): format is CsvFormat {
  return 'bindHeader' in format;
}

function split(line: string, delimiter: string): string[] {
  const fields = line.split(delimiter);
  for (let i = 0; i < fields.length; i++) {
    const f = fields[i]!;
    // Plain CSV quoting of whole fields is enough for these logs: none has a delimiter inside a value.
    if (f.length >= 2 && f.charCodeAt(0) === 34 && f.charCodeAt(f.length - 1) === 34) fields[i] = f.slice(1, -1);
  }
  return fields;
}

/** An event as the API takes it (for checkEvents, which every entry shares). */
export function toEventInput(e: RecEvent): EventInputModel {
  return { kind: e.kind === 'purchase' ? 'PURCHASE' : 'VIEW', itemId: e.itemId, sessionId: e.session, userId: e.user, orderId: e.orderId, time: e.time };
}

/**
 * Streams a file line by line into `sink`; malformed lines are counted, listed with their line
 * number and skipped, the rest is read. Memory stays flat whatever the file size. The sink may
 * refuse an event by throwing an EventLineError (counted as malformed), and may return a promise
 * (a batch being written), which is awaited before the next line.
 */
export async function readEvents(
  input: Readable | string,
  format: EventFormat,
  sink: (event: RecEvent) => void | Promise<void>,
  options: ReadEventsOptions = {},
): Promise<EventReadReport> {
  const stream = typeof input === 'string' ? createReadStream(input) : input;
  const rl = createInterface({ input: stream, crlfDelay: Infinity });
  const maxReported = options.maxReported ?? 100;
  const report: EventReadReport = { lines: 0, events: 0, ignored: 0, malformed: 0, skipped: [] };
  const skip = (line: number, reason: string): void => {
    report.malformed++;
    if (report.skipped.length < maxReported) report.skipped.push({ line, reason });
  };
  let lastProgress = Date.now();
  for await (const raw of rl) {
    const lineNo = ++report.lines;
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (lineNo === 1 && format.header) {
      if (isCsvFormat(format)) format.bindHeader(split(line, format.delimiter));
      continue;
    }
    if (line.trim() === '') continue;
    const fields = split(line, format.delimiter);
    if (fields.length < format.minFields) {
      skip(lineNo, `expected at least ${format.minFields} fields separated by ${JSON.stringify(format.delimiter)}, got ${fields.length}`);
      continue;
    }
    let event: RecEvent | null;
    try {
      event = format.parse(fields);
      if (event !== null) {
        const written = sink(event);
        if (written !== undefined) await written;
      }
    } catch (error) {
      if (!(error instanceof EventLineError)) throw error;
      skip(lineNo, error.message);
      continue;
    }
    if (event === null) report.ignored++;
    else report.events++;
    if (options.onProgress !== undefined && (lineNo & 0xffff) === 0) {
      const now = Date.now();
      if (now - lastProgress >= 1000) {
        lastProgress = now;
        options.onProgress(report.lines, report.events);
      }
    }
  }
  return report;
}

/** Reads a whole string (tests, small fixtures). */
export async function readEventsFromString(text: string, format: EventFormat, sink: (event: RecEvent) => void): Promise<EventReadReport> {
  return readEvents(Readable.from([text]), format, sink);
}

/**
 * Whether a file gave nothing to use: it had lines, and not one read as an event (most likely a
 * file in another format, or a --format that does not fit it). An empty file is not that.
 * `import events` records nothing then, and `evaluate` measures nothing: both stop.
 */
export function nothingUsable(report: EventReadReport): boolean {
  return report.events === 0 && report.malformed > 0;
}

/** The line saying so: the file, what the format expected, and how many lines it could not read. */
export function nothingUsableLine(path: string, format: EventFormat, report: EventReadReport): string {
  const lines = `${report.malformed.toLocaleString('en-US')} malformed line${report.malformed === 1 ? '' : 's'}`;
  return `nothing in ${path} could be read as ${format.name} events (expected ${format.expected}): ${lines}`;
}
