import { ErrorCode, GatewayError } from '../errors.js';
import type { ItemModel } from '../ports/backend.js';

/** Bytes of each record's JSON, made once a record: records are values, replaced and never edited. */
const recordBytes = new WeakMap<ItemModel, number>();

/** The bytes of a record's JSON: what any selection of its fields answers at most. */
export function recordSize(item: ItemModel): number {
  let size = recordBytes.get(item);
  if (size === undefined) {
    size = Buffer.byteLength(JSON.stringify(item), 'utf8');
    recordBytes.set(item, size);
  }
  return size;
}

/**
 * The item records one request's answer may hold, in bytes (MAX_RESPONSE_BYTES): every resolver
 * that returns records charges them, each time it returns them, whatever fields are asked of
 * them (an upper bound, as the cost is). The cost counts fields, not what they hold: aliases of
 * `items` over records with long texts answered megabytes, built whole before anything was sent.
 * Past the budget, the field that would have gone past it, and each one after, is refused with
 * QUERY_TOO_COMPLEX, so the answer never holds more records than the budget.
 */
export class AnswerBudget {
  private spent = 0;

  constructor(readonly maxBytes: number) {}

  /** Charges records about to be answered; throws QUERY_TOO_COMPLEX when they would go past the budget. */
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
