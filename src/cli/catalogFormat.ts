import { ErrorCode, isGatewayError } from '../errors.js';
import { checkItems } from '../model/ingest.js';
import { ItemRecordError, parseItemRecord } from '../model/itemRecord.js';
import type { Catalog, CatalogLoadReport } from '../recommender/index.js';
import { columnIndex, readDelimited } from './delimited.js';

/** A delimited catalogue's columns, by header name or 1-based position; a category joins several, root first. */
export interface CatalogCsvOptions {
  item: string;
  name: string;
  parent?: string | undefined;
  categoryNode?: string[] | undefined;
  categoryPath?: string[] | undefined;
  brand?: string | undefined;
  price?: string | undefined;
  delimiter?: string | undefined;
  header?: boolean | undefined;
}

const FIELDS = [
  ['item', 'itemId'], ['name', 'name'], ['parent', 'parentItemId'], ['brand', 'brandName'], ['price', 'salePrice'],
] as const;
const CATEGORIES = [['categoryNode', 'category-node', '_'], ['categoryPath', 'category-path', '/']] as const;

/** How a catalogue file is read as CSV: its layout, its mapping (what an import is known by), and its rows as records. */
export interface CatalogCsvFormat {
  delimiter: string;
  header: boolean;
  mapping: string;
  expected: string;
  bindHeader(fields: string[]): void;
  record(fields: string[]): Record<string, string>;
}

export function catalogCsvFormat(options: CatalogCsvOptions): CatalogCsvFormat {
  const header = options.header ?? true;
  const delimiter = options.delimiter ?? ',';
  const flags: [string, string][] = [];
  for (const [flag] of FIELDS) if (options[flag] !== undefined) flags.push([`--${flag}`, options[flag]]);
  for (const [option, flag] of CATEGORIES) if (options[option] !== undefined) flags.push([`--${flag}`, options[option].join(',')]);
  let fields: [field: string, at: number][] = [];
  let categories: [field: string, at: number[], joiner: string][] = [];
  const bind = (names: string[] | null): void => {
    fields = FIELDS.flatMap(([flag, field]) => (options[flag] === undefined ? [] : [[field, columnIndex(options[flag], names, `--${flag}`)] as [string, number]]));
    categories = CATEGORIES.flatMap(([option, flag, joiner]) =>
      options[option] === undefined ? [] : [[option, options[option].map((column) => columnIndex(column, names, `--${flag}`)), joiner] as [string, number[], string]]);
  };
  if (!header) bind(null);
  const columns = flags.map(([flag, column]) => `${flag} ${column}`);
  return {
    delimiter, header,
    mapping: ['csv', ...columns, `--delimiter ${delimiter === '\t' ? 'tab' : delimiter}`, ...(header ? [] : ['--no-header'])].join(' '),
    expected: `${columns.join(' ')} separated by ${JSON.stringify(delimiter)}${header ? ', with a header' : ''}`,
    bindHeader: bind,
    record: (row) => {
      const record: Record<string, string> = {};
      for (const [field, at] of fields) {
        const value = row[at]?.trim();
        if (value) record[field] = value;
      }
      for (const [field, at, joiner] of categories) {
        const parts = at.map((i) => row[i]?.trim()).filter((part) => part);
        if (parts.length > 0) record[field] = parts.join(joiner);
      }
      return record;
    },
  };
}

/** Reads a delimited catalogue, each row checked as upsertItems checks a record; a failing row is reported and skipped. */
export async function loadCatalogCsv(path: string, format: CatalogCsvFormat, catalog: Catalog): Promise<CatalogLoadReport> {
  const report: CatalogLoadReport = { loaded: 0, skipped: [] };
  await readDelimited(path, format, (fields) => format.bindHeader(fields), (row, line) => {
    try {
      const item = parseItemRecord(format.record(row));
      checkItems([item]);
      catalog.add(item);
      report.loaded++;
    } catch (error) {
      if (!(error instanceof ItemRecordError) && !(isGatewayError(error) && error.code === ErrorCode.BAD_USER_INPUT)) throw error;
      // upsertItems' message without the call's index: "name: must be a non-empty string"
      report.skipped.push({ line, reason: error.message.replace(/^items\[0\]\./, '') });
    }
  });
  return report;
}
