import { Readable } from 'node:stream';
import type { EventInputModel } from '../ports/backend.js';
import type { RecEvent } from '../recommender/index.js';
import { EventLineError } from './eventFormats.js';
import type { CsvFormat, EventFormat } from './eventFormats.js';
import { readDelimited } from './delimited.js';

export interface SkippedLine {
  line: number;
  reason: string;
}

export interface EventReadReport {
  lines: number;
  events: number;
  /** Well-formed lines that are neither a view nor a purchase (add-to-cart, favourite). */
  ignored: number;
  /** Malformed lines; only the first `maxReported` are listed. */
  malformed: number;
  skipped: SkippedLine[];
}

export interface ReadEventsOptions {
  /** Called about once a second with progress; default none. */
  onProgress?: (lines: number, events: number) => void;
  /** Malformed lines to list (all are counted); default 100. */
  maxReported?: number;
}

function isCsvFormat(format: EventFormat): format is CsvFormat {
  return 'bindHeader' in format;
}

export function toEventInput(e: RecEvent): EventInputModel {
  return { kind: e.kind === 'purchase' ? 'PURCHASE' : 'VIEW', itemId: e.itemId, sessionId: e.session, userId: e.user, orderId: e.orderId, time: e.time };
}

/** Streams a file into `sink`, flat in memory; malformed lines are counted and skipped; a returned promise is awaited. */
export async function readEvents(
  input: Readable | string,
  format: EventFormat,
  sink: (event: RecEvent) => void | Promise<void>,
  options: ReadEventsOptions = {},
): Promise<EventReadReport> {
  const maxReported = options.maxReported ?? 100;
  const report: EventReadReport = { lines: 0, events: 0, ignored: 0, malformed: 0, skipped: [] };
  const skip = (line: number, reason: string): void => {
    report.malformed++;
    if (report.skipped.length < maxReported) report.skipped.push({ line, reason });
  };
  let lastProgress = Date.now();
  const onHeader = (fields: string[]): void => {
    if (isCsvFormat(format)) format.bindHeader(fields);
  };
  const count = (event: RecEvent | null, lineNo: number): void => {
    if (event === null) report.ignored++;
    else report.events++;
    if (options.onProgress !== undefined && (lineNo & 0xffff) === 0) {
      const now = Date.now();
      if (now - lastProgress >= 1000) {
        lastProgress = now;
        options.onProgress(lineNo, report.events);
      }
    }
  };
  const refused = (error: unknown, lineNo: number): void => {
    if (!(error instanceof EventLineError)) throw error;
    skip(lineNo, error.message);
  };
  // a promise only when the sink returns one: a line costs no microtask of its own
  report.lines = await readDelimited(input, format, onHeader, (fields, lineNo) => {
    if (fields.length < format.minFields) {
      skip(lineNo, `expected at least ${format.minFields} fields separated by ${JSON.stringify(format.delimiter)}, got ${fields.length}`);
      return undefined;
    }
    let event: RecEvent | null;
    let written: void | Promise<void> = undefined;
    try {
      event = format.parse(fields);
      if (event !== null) written = sink(event);
    } catch (error) {
      refused(error, lineNo);
      return undefined;
    }
    // a sink may return what it did (push's count): only a promise is waited for
    if (!(written instanceof Promise)) return count(event, lineNo);
    return written.then(() => count(event, lineNo), (error: unknown) => refused(error, lineNo));
  });
  return report;
}

export async function readEventsFromString(text: string, format: EventFormat, sink: (event: RecEvent) => void): Promise<EventReadReport> {
  return readEvents(Readable.from([text]), format, sink);
}

/** Whether a file had lines and none read as an event: most likely the wrong format, so import and evaluate stop. */
export function nothingUsable(report: EventReadReport): boolean {
  return report.events === 0 && report.malformed > 0;
}

export function nothingUsableLine(path: string, format: EventFormat, report: EventReadReport): string {
  const lines = `${report.malformed.toLocaleString('en-US')} malformed line${report.malformed === 1 ? '' : 's'}`;
  return `nothing in ${path} could be read as ${format.name} events (expected ${format.expected}): ${lines}`;
}
