import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';

/** One line's fields; a quoted field may hold the delimiter (product names do) and "" for a quote. */
export function splitFields(line: string, delimiter: string): string[] {
  if (!line.includes('"')) return line.split(delimiter);
  const fields: string[] = [];
  let at = 0;
  for (;;) {
    let value = '';
    if (line.charCodeAt(at) === 34) {
      const quoted = closingQuote(line, at);
      // without a closing quote, the field is read as written
      if (quoted !== null) [value, at] = quoted;
    }
    // after a closing quote, anything up to the delimiter belongs to the field
    const end = line.indexOf(delimiter, at);
    fields.push(value + line.slice(at, end < 0 ? line.length : end));
    if (end < 0) return fields;
    at = end + delimiter.length;
  }
}

function closingQuote(line: string, open: number): [string, number] | null {
  let value = '';
  let from = open + 1;
  for (;;) {
    const quote = line.indexOf('"', from);
    if (quote < 0) return null;
    value += line.slice(from, quote);
    if (line.charCodeAt(quote + 1) !== 34) return [value, quote + 1];
    value += '"';
    from = quote + 2;
  }
}

/** The 0-based column a flag names, by header name or 1-based position; throws naming the flag. */
export function columnIndex(name: string, header: readonly string[] | null, flag: string): number {
  let index = header === null ? -1 : header.indexOf(name);
  if (index < 0 && /^[0-9]+$/.test(name)) index = Number(name) - 1;
  if (index < 0) {
    throw new Error(`column ${JSON.stringify(name)} (${flag}) is not in the header${header === null ? ' (without a header, name columns by 1-based position)' : `: ${header.join(', ')}`}`);
  }
  return index;
}

export interface Layout {
  delimiter: string;
  header: boolean;
}

/** Streams a delimited file's rows to `onRow`, awaiting any promise it returns, so memory stays flat. */
export async function readDelimited(
  input: Readable | string,
  layout: Layout,
  onHeader: (fields: string[]) => void,
  onRow: (fields: string[], line: number) => void | Promise<void>,
): Promise<number> {
  const stream = typeof input === 'string' ? createReadStream(input) : input;
  const rl = createInterface({ input: stream, crlfDelay: Infinity });
  let lineNo = 0;
  for await (const raw of rl) {
    lineNo++;
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (lineNo === 1 && layout.header) {
      onHeader(splitFields(line, layout.delimiter));
      continue;
    }
    if (line.trim() === '') continue;
    const written = onRow(splitFields(line, layout.delimiter), lineNo);
    if (written instanceof Promise) await written;
  }
  return lineNo;
}
