import type { IncomingMessage, ServerResponse } from 'node:http';
import { isJsonContentType } from '../graphql/pipeline/contentType.js';

/** A request refused before any route could answer it: a status, and a message a client may see. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** Bytes of large bodies read at once, all requests together: past it, the next one gets 429 before it is read. */
export class LargeBodies {
  private used = 0;

  constructor(
    readonly maxBytes: number,
    private readonly ordinaryBytes: number,
  ) {}

  /** Reserves what a body read up to `limit` may hold, until `res` closes; false when that would pass maxBytes. */
  admit(req: IncomingMessage, res: ServerResponse, limit: number): boolean {
    if (limit <= this.ordinaryBytes) return true;
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared <= this.ordinaryBytes) return true;
    const bytes = Number.isFinite(declared) ? Math.min(declared, limit) : limit;
    if (this.used + bytes > this.maxBytes) return false;
    this.used += bytes;
    res.once('close', () => {
      this.used -= bytes;
    });
    return true;
  }

  get inUse(): number {
    return this.used;
  }
}

/** Whether a request's body may be longer than `limit`: declared so, or of no declared length. */
export function mayBeLonger(req: IncomingMessage, limit: number): boolean {
  const declared = req.headers['content-length'];
  return declared === undefined ? req.headers['transfer-encoding'] !== undefined : Number(declared) > limit;
}

/** The 415 refusal of a body with a content coding, as RFC 9110 says; null for none or `identity`. */
export function encodingRefusal(req: IncomingMessage): { message: string; headers: Record<string, string> } | null {
  const encoding = req.headers['content-encoding'];
  if (encoding === undefined || encoding.trim() === '' || encoding.trim().toLowerCase() === 'identity') return null;
  return {
    message: 'Content encodings (Content-Encoding: gzip, br, deflate) are not supported: send the body uncompressed, without Content-Encoding',
    headers: { 'accept-encoding': 'identity', connection: 'close' },
  };
}

/** How deep a request's JSON may nest: checked before JSON.parse, whose work comes before any limit could look. */
export const MAX_BODY_DEPTH = 40;

// a text too short to nest past `max` is not scanned: half its length bounds the depth
function depthOf(text: string, max: number): number {
  if (text.length <= 2 * max) return text.length >> 1;
  let depth = 0;
  let deepest = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x5b && c !== 0x22) continue;
    if (c === 0x22) {
      // a string: to its closing quote, the first not escaped (after an even run of backslashes)
      for (;;) {
        const q = text.indexOf('"', i + 1);
        if (q < 0) return deepest; // unterminated: JSON.parse refuses it
        i = q;
        let k = q - 1;
        while (text.charCodeAt(k) === 0x5c) k--;
        if ((q - 1 - k) % 2 === 0) break;
      }
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > deepest && (deepest = depth) > max) return deepest;
    } else if (c === 0x5d || c === 0x7d) {
      depth--;
    }
  }
  return deepest;
}

/** A body's JSON, refused with 400 when it is not JSON or nests too deeply. */
export function parseJson(text: string): unknown {
  if (nestsTooDeep(text)) throw new HttpError(400, `The request body nests deeper than ${MAX_BODY_DEPTH} levels`);
  try {
    return JSON.parse(text);
  } catch {
    throw new HttpError(400, 'The request body is not valid JSON');
  }
}

/** Whether JSON text nests deeper than MAX_BODY_DEPTH. */
export const nestsTooDeep = (text: string): boolean => depthOf(text, MAX_BODY_DEPTH) > MAX_BODY_DEPTH;
/** A GET's `variables` or `extensions` parameter that nests deeper than MAX_BODY_DEPTH; null when none does. */
export function deepParameter(search: string): string | null {
  const params = new URLSearchParams(search);
  for (const name of ['variables', 'extensions']) {
    const value = params.get(name);
    if (value !== null && nestsTooDeep(value)) return name;
  }
  return null;
}

/** A body as the prelude takes it: JSON for a JSON content type, else the text (Apollo refuses it). */
export function parseBody(text: string, contentType: string | undefined): unknown {
  if (text.length === 0) return undefined;
  return isJsonContentType(contentType) ? parseJson(text) : text;
}
