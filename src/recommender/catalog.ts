import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { underCategory } from '../model/itemLists.js';
import { ItemRecordError, parseItemRecord } from '../model/itemRecord.js';
import { brandKey } from '../model/recommendationFilter.js';
import type { ItemModel } from '../ports/backend.js';

/** A catalogue record that was not loaded, and why. */
export interface SkippedRecord {
  /** 1-based line of a JSON-lines file, or 1-based position of the element in a JSON array. */
  line: number;
  reason: string;
}

/** What loading a catalogue file did. */
export interface CatalogLoadReport {
  loaded: number;
  skipped: SkippedRecord[];
}

/** The leaf category of an item: its categoryPath, else its categoryNode; null when it has neither. */
export function categoryOf(item: ItemModel): string | null {
  if (item.categoryPath) return `p:${item.categoryPath}`;
  if (item.categoryNode) return `n:${item.categoryNode}`;
  return null;
}

/** The department: the first segment of the path (or node), which is what the taxonomy's roots are. */
export function departmentOf(item: ItemModel): string | null {
  if (item.categoryPath) return `p:${item.categoryPath.split('/')[0]!}`;
  if (item.categoryNode) return `n:${item.categoryNode.split('_')[0]!}`;
  return null;
}

const brandOf = (item: ItemModel): string | null => (item.brandName ? brandKey(item.brandName) : null);

/** The id shared by an item and its variants: its parentItemId, else its own id. */
export function familyOf(item: ItemModel): number {
  return item.parentItemId ?? item.itemId;
}

function push<K>(map: Map<K, number[]>, key: K | null, id: number): void {
  if (key === null) return;
  const list = map.get(key);
  if (list === undefined) map.set(key, [id]);
  else list.push(id);
}

function remove<K>(map: Map<K, number[]>, key: K | null, id: number): void {
  if (key === null) return;
  const list = map.get(key);
  const at = list?.indexOf(id) ?? -1;
  if (list !== undefined && at >= 0) list.splice(at, 1);
}

const none: readonly number[] = [];

/** The in-memory catalogue: items by id, with indexes by family (parentItemId), category and department. */
export class Catalog {
  private readonly items = new Map<number, ItemModel>();
  private readonly families = new Map<number, number[]>();
  private readonly categories = new Map<string, number[]>();
  private readonly departments = new Map<string, number[]>();
  private readonly brands = new Map<string, number[]>();

  get size(): number {
    return this.items.size;
  }

  /** Adds an item, replacing one with the same id. */
  add(item: ItemModel): void {
    const old = this.items.get(item.itemId);
    if (old !== undefined) {
      remove(this.families, familyOf(old), old.itemId);
      remove(this.categories, categoryOf(old), old.itemId);
      remove(this.departments, departmentOf(old), old.itemId);
      remove(this.brands, brandOf(old), old.itemId);
    }
    this.items.set(item.itemId, item);
    push(this.families, familyOf(item), item.itemId);
    push(this.categories, categoryOf(item), item.itemId);
    push(this.departments, departmentOf(item), item.itemId);
    push(this.brands, brandOf(item), item.itemId);
  }

  get(id: number): ItemModel | undefined {
    return this.items.get(id);
  }

  has(id: number): boolean {
    return this.items.has(id);
  }

  values(): IterableIterator<ItemModel> {
    return this.items.values();
  }

  /** Ids of the items of a family (the parent and its variants), in insertion order. */
  family(parentItemId: number): readonly number[] {
    return this.families.get(parentItemId) ?? none;
  }

  /** Ids of the items of a category key (see categoryOf). */
  category(key: string): readonly number[] {
    return this.categories.get(key) ?? none;
  }

  /** Ids of the items whose categoryPath is `path` or lies under it, segment by segment. */
  under(path: string): number[] {
    const out: number[] = [];
    for (const [key, ids] of this.categories) {
      // one by one: a spread passes every id as an argument, past the stack for a category of 200,000 items
      if (key.startsWith('p:') && underCategory(key.slice(2), path)) for (const id of ids) out.push(id);
    }
    return out;
  }

  /** Ids of the items of a department key (see departmentOf). */
  department(key: string): readonly number[] {
    return this.departments.get(key) ?? none;
  }

  /** Ids of the items of a brand, by brandKey (case does not matter). */
  brand(key: string): readonly number[] {
    return this.brands.get(key) ?? none;
  }

  /** Parses and adds records; bad ones are reported with their 1-based position and skipped. */
  addRecords(records: Iterable<unknown>, report: CatalogLoadReport = { loaded: 0, skipped: [] }, firstLine = 1): CatalogLoadReport {
    let line = firstLine;
    for (const raw of records) {
      this.addRecord(raw, line++, report);
    }
    return report;
  }

  addRecord(raw: unknown, line: number, report: CatalogLoadReport): ItemModel | null {
    try {
      const item = parseItemRecord(raw);
      this.add(item);
      report.loaded++;
      return item;
    } catch (error) {
      if (!(error instanceof ItemRecordError)) throw error;
      report.skipped.push({ line, reason: error.message });
      return null;
    }
  }
}

/** Reads a catalogue file (a JSON array, an object with an `items` array, or JSON lines); a bad record is reported
 * and skipped; `onItem` sees every loaded item (to persist it). */
export async function loadCatalogFile(path: string, catalog: Catalog, onItem?: (item: ItemModel) => void): Promise<CatalogLoadReport> {
  const report: CatalogLoadReport = { loaded: 0, skipped: [] };
  const handle = await open(path, 'r');
  let first = '';
  try {
    const { buffer, bytesRead } = await handle.read(Buffer.alloc(4096), 0, 4096, 0);
    first = buffer.subarray(0, bytesRead).toString('utf8').trimStart();
  } finally {
    await handle.close();
  }
  const add = (raw: unknown, line: number): void => {
    const item = catalog.addRecord(raw, line, report);
    if (item !== null) onItem?.(item);
  };
  const lines = createInterface({ input: createReadStream(path), crlfDelay: Infinity });
  if (first.startsWith('[') || (first.startsWith('{') && !isSingleLineObject(first))) {
    // A whole JSON document: it has to be parsed in one piece.
    let text = '';
    for await (const line of lines) text += `${line}\n`;
    let doc: unknown;
    try {
      doc = JSON.parse(text);
    } catch (error) {
      report.skipped.push({ line: 0, reason: `not JSON: ${(error as Error).message}` });
      return report;
    }
    const records = Array.isArray(doc) ? doc : isItemsDoc(doc) ? doc.items : null;
    if (records === null) {
      report.skipped.push({ line: 0, reason: 'expected a JSON array of item records or an object with an items array' });
      return report;
    }
    records.forEach((raw, i) => add(raw, i + 1));
    return report;
  }
  let lineNo = 0;
  for await (const line of lines) {
    lineNo++;
    if (line.trim() === '') continue;
    let raw: unknown;
    try {
      raw = JSON.parse(line);
    } catch (error) {
      report.skipped.push({ line: lineNo, reason: `not JSON: ${(error as Error).message}` });
      continue;
    }
    add(raw, lineNo);
  }
  return report;
}

function isItemsDoc(doc: unknown): doc is { items: unknown[] } {
  return typeof doc === 'object' && doc !== null && Array.isArray((doc as { items?: unknown }).items);
}

/** Whether the start of a file is a complete one-line object, i.e. the file is JSON lines. */
function isSingleLineObject(start: string): boolean {
  const newline = start.indexOf('\n');
  if (newline < 0) return true;
  try {
    JSON.parse(start.slice(0, newline));
    return true;
  } catch {
    return false;
  }
}
