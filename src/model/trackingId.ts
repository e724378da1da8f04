import { hash, timingSafeEqual } from 'node:crypto';
import type { TrackedKind } from '../ports/attribution.js';
import { VARIANTS, type Variant } from './experiment.js';

export type { TrackedKind } from '../ports/attribution.js';
export const TRACKED_KINDS: readonly TrackedKind[] = ['POST_BROWSE', 'NEXT_BEST_PRODUCT', 'FOR_YOU'];

/** A (kind, variant) pair as one small number, so a count is an array slot: kind × 2 + variant. */
export type ListCode = number;
export const LIST_CODES = TRACKED_KINDS.length * VARIANTS.length;
export const listCode = (kind: TrackedKind, variant: Variant): ListCode => TRACKED_KINDS.indexOf(kind) * 2 + (variant === 'B' ? 1 : 0);
export const kindOfCode = (code: ListCode): TrackedKind => TRACKED_KINDS[code >> 1]!;
export const variantOfCode = (code: ListCode): Variant => VARIANTS[code & 1]!;

/** Most rows a POST /v1/stats/impressions takes: one per kind and variant an hour, so over a week of a front's counts. */
export const MAX_IMPRESSION_ROWS = 1000;
/** Most impressions one row may add. */
export const MAX_IMPRESSIONS_PER_ROW = 2 ** 31 - 1;
/** Path of the twin a REST-mode front sends its impressions to. */
export const IMPRESSIONS_PATH = '/v1/stats/impressions';

/** Longest trackingId taken: the longest made is 23 characters. */
export const MAX_TRACKING_ID_LENGTH = 32;
const MAC_BYTES = 8;
const VERSION = 0x10;
const BASE64URL = /^[A-Za-z0-9_-]+$/;

/** What a list is anchored on: an item, or a shopper (a session or user id, only ever kept as a keyed hash). */
export type ListAnchor = number | { shopper: string };

/** What a trackingId names. */
export interface TrackedList {
  code: ListCode;
  kind: TrackedKind;
  variant: Variant;
}

/** trackingIds: base64url of [version | kind | variant][item id as LEB128, or 4 bytes of a keyed hash
 * of the shopper][8 bytes of SHA-256(secret, the rest)]: without the secret none can be made, and no
 * shopper's id shows. The tag is truncated, so length extension has nothing to extend. */
export class TrackingIds {
  private readonly secret: Buffer;
  /** The secret, then room for the longest payload, so one tag is one hash of one buffer. */
  private readonly scratch: Buffer;

  constructor(secret: string | Buffer) {
    this.secret = Buffer.from(secret);
    this.scratch = Buffer.alloc(this.secret.length + 1 + MAX_LEB128 + MAC_BYTES);
    this.secret.copy(this.scratch);
  }

  /** The list's trackingId: the same for the same list, so a cached answer's stays right. */
  make(kind: TrackedKind, variant: Variant, anchor: ListAnchor): string {
    const at = this.secret.length;
    const out = this.scratch;
    out[at] = VERSION | listCode(kind, variant);
    let end = at + 1;
    if (typeof anchor === 'number') end = writeLeb128(out, end, anchor);
    else {
      hash('sha256', Buffer.concat([this.secret, SHOPPER, Buffer.from(anchor.shopper)]), 'buffer').copy(out, end, 0, 4);
      end += 4;
    }
    this.tag(end).copy(out, end, 0, MAC_BYTES);
    return out.toString('base64url', at, end + MAC_BYTES);
  }

  /** What a trackingId names; a string saying why not when it is malformed or not one of ours. */
  read(text: string): TrackedList | string {
    if (text.length === 0 || text.length > MAX_TRACKING_ID_LENGTH || !BASE64URL.test(text)) {
      return `must be a trackingId as a recommendation list gave it (base64url, at most ${MAX_TRACKING_ID_LENGTH} characters)`;
    }
    const bytes = Buffer.from(text, 'base64url');
    const notOurs = 'is not a trackingId this gateway gave (copy it from the list\'s trackingId as it was served)';
    if (bytes.length < 2 + MAC_BYTES || bytes.length > 1 + MAX_LEB128 + MAC_BYTES || (bytes[0]! & 0xf0) !== VERSION) return notOurs;
    const code = bytes[0]! & 0x0f;
    if (code >= LIST_CODES) return notOurs;
    const payload = bytes.length - MAC_BYTES;
    bytes.copy(this.scratch, this.secret.length, 0, payload);
    if (!timingSafeEqual(this.tag(this.secret.length + payload).subarray(0, MAC_BYTES), bytes.subarray(payload))) return notOurs;
    return { code, kind: kindOfCode(code), variant: variantOfCode(code) };
  }

  /** SHA-256 of the secret and the payload written after it in scratch, up to `end`. */
  private tag(end: number): Buffer {
    return hash('sha256', this.scratch.subarray(0, end), 'buffer');
  }
}

const SHOPPER = Buffer.from('\nshopper\n');
/** An item id (at most 2^53 - 1) takes at most 8 bytes of LEB128. */
const MAX_LEB128 = 8;

function writeLeb128(out: Buffer, at: number, n: number): number {
  let rest = n;
  let i = at;
  do {
    const low = rest % 128;
    rest = Math.floor(rest / 128);
    out[i++] = rest > 0 ? low | 0x80 : low;
  } while (rest > 0);
  return i;
}
