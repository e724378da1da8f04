import { ErrorCode, GatewayError } from '../../errors.js';
import type { ItemModel } from '../../ports/backend.js';

/** Each record's JSON size, made once: records are replaced, never edited. */
const recordBytes = new WeakMap<ItemModel, number>();

/** The bytes of a record's JSON: the most any selection of its fields answers. */
export function recordSize(item: ItemModel): number {
  let size = recordBytes.get(item);
  if (size === undefined) {
    size = Buffer.byteLength(JSON.stringify(item), 'utf8');
    recordBytes.set(item, size);
  }
  return size;
}

/** The record bytes one answer may hold (MAX_RESPONSE_BYTES), charged by each resolver returning them.
 * The cost counts fields, not what they hold, so aliased lookups of long records need this bound too. */
export class AnswerBudget {
  private spent = 0;

  constructor(readonly maxBytes: number) {}

  charge(items: ItemModel | null | readonly (ItemModel | null | Error)[]): void {
    let bytes = 0;
    if (items === null) return;
    if (Array.isArray(items)) {
      for (const item of items as readonly (ItemModel | null | Error)[]) if (item !== null && !(item instanceof Error)) bytes += recordSize(item);
    } else {
      bytes = recordSize(items as ItemModel);
    }
    if (this.spent + bytes > this.maxBytes) {
      this.spent = this.maxBytes + 1;
      throw new GatewayError(
        ErrorCode.QUERY_TOO_COMPLEX,
        `Query too complex: its answer would hold more than ${this.maxBytes} bytes of item records, the limit (MAX_RESPONSE_BYTES): ask for fewer items a request`,
      );
    }
    this.spent += bytes;
  }

  /** Forgets what was charged: the request runs again from scratch. */
  reset(): void {
    this.spent = 0;
  }
}
