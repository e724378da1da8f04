import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ClientAddresses } from '../auth/clientAddress.js';
import type { RateLimiter } from '../auth/rateLimit.js';
import type { Config } from '../config/env.js';
import type { Backend, CallOptions, PrincipalModel } from '../ports/backend.js';
import { isJsonContentType } from '../graphql/pipeline/contentType.js';

/** A request refused before any route could answer it: a status, and a message a client may see. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** For a 413, the limit the body went past. */
    readonly limit?: number,
  ) {
    super(message);
  }
}

/**
 * Bytes of large bodies (past BODY_LIMIT_BYTES: administrators' batches of events, or in REST
 * mode any signed-in caller's, whose rights only the upstream knows) read at once, all requests
 * together. Without it, forty callers with a key sending 8 MiB at once held 1.2 GB of a REST-mode
 * gateway; with it, the next one gets 429 before a byte of its body is read.
 */
export class LargeBodies {
  private used = 0;

  constructor(
    readonly maxBytes: number,
    /** A body declared at most this large needs no share (BODY_LIMIT_BYTES). */
    private readonly ordinaryBytes: number,
  ) {}

  /**
   * Reserves what a body read up to `limit` may hold, until `res` closes; false (nothing
   * reserved) when that would pass maxBytes. A body that declares an ordinary length needs none.
   */
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

/** What every route that reads a body needs of the front door: who asks, and how much they may send. */
export interface BodyRouteDeps {
  config: Pick<Config, 'bodyLimitBytes' | 'requestDeadlineMs'>;
  backend: Backend;
  limiter: RateLimiter;
  addresses: ClientAddresses;
  /** The most a request without credentials may send; a larger body left unread closes the connection. */
  anonymousBodyLimit: number;
  /** INGEST_BODY_LIMIT_BYTES: the most one who may send events and item records may send (others: BODY_LIMIT_BYTES). */
  ingestBodyLimit: number;
  /**
   * Whether a signed-in caller may send events and item records, and so bodies up to
   * ingestBodyLimit. `ask`: the options of a call to find out where that is not known yet (REST
   * mode, whose upstream decides), given when a body that may pass BODY_LIMIT_BYTES is on its way;
   * null: 'unknown' then. A promise only where it asks; rejects as that call fails.
   */
  ingestRightOf: (principal: PrincipalModel, ask: CallOptions | null) => IngestRight | Promise<IngestRight>;
  /** Large bodies read at once, all requests together. */
  largeBodies: LargeBodies;
}

/** Whether a caller may send events and item records: 'unknown' where nobody asked the upstream yet. */
export type IngestRight = 'allowed' | 'refused' | 'unknown';

/** Whether a request's body may be longer than `limit`: declared so, or of no declared length (chunked). */
export function mayBeLonger(req: IncomingMessage, limit: number): boolean {
  const declared = req.headers['content-length'];
  return declared === undefined ? req.headers['transfer-encoding'] !== undefined : Number(declared) > limit;
}

/**
 * The refusal of a body sent with a content coding (Content-Encoding: gzip, br, ...), or null for
 * none (or `identity`). Bodies are read as they come: a compressed one was read as text and
 * answered 400 "not valid JSON", which sends a client looking at its JSON. 415 as RFC 9110 15.5.16
 * says, with Accept-Encoding naming what is taken (RFC 7694).
 */
export function encodingRefusal(req: IncomingMessage): { message: string; headers: Record<string, string> } | null {
  const encoding = req.headers['content-encoding'];
  if (encoding === undefined || encoding.trim() === '' || encoding.trim().toLowerCase() === 'identity') return null;
  return {
    message: 'Content encodings (Content-Encoding: gzip, br, deflate) are not supported: send the body uncompressed, without Content-Encoding',
    // the body is left unread: the connection goes with it
    headers: { 'accept-encoding': 'identity', connection: 'close' },
  };
}

export function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const tooLarge = () => new HttpError(413, `Request body larger than ${limit} bytes`, limit);
  if (Number(req.headers['content-length']) > limit) return Promise.reject(tooLarge());
  // events rather than an async iterator: a few microseconds a request on the hot path
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) chunks.push(chunk);
      // answered at once; node drops the rest of the body after the 413 is sent
      else if (size - chunk.length <= limit) reject(tooLarge());
    });
    req.once('end', () => {
      if (size <= limit) resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
    });
    req.once('error', reject);
  });
}

/**
 * How deep a request's JSON may nest: checked on the text before JSON.parse, whose work on a
 * megabyte of `[[[` comes before any limit could look at the result.
 */
export const MAX_BODY_DEPTH = 40;

/**
 * How deep JSON text nests (strings skipped), exactly up to `max + 1`, where the scan stops: linear.
 * For a text JSON.parse takes it is a bound of how deep the value nests (a duplicate key can only
 * drop a value); a text too short to nest past `max` is not scanned (half its length bounds it).
 */
function depthOf(text: string, max: number): number {
  if (text.length <= 2 * max) return text.length >> 1;
  let depth = 0;
  let deepest = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    // the quote and the brackets are 0x22, 0x5b, 0x5d, 0x7b, 0x7d: one test passes over digits,
    // ':' and ',', most of what lies between an events batch's strings (a fifth off the scan)
    if (c < 0x5b && c !== 0x22) continue;
    if (c === 0x22) {
      // a string: to its closing quote, the first not escaped (after an even run of backslashes);
      // indexOf rather than a loop over characters: most of an events batch is strings
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
/** A body as GraphQL takes it: JSON for a JSON content type, else the text (Apollo refuses it). */
export function parseBody(text: string, contentType: string | undefined): unknown {
  if (text.length === 0) return undefined;
  return isJsonContentType(contentType) ? parseJson(text) : text;
}
