import type { IncomingMessage, ServerResponse } from 'node:http';
import { GatewayError } from '../errors.js';
import { ingestForbidden } from '../model/ingest.js';
import type { RequestRecord } from '../observability/requestScope.js';
import type { Backend, CallOptions, PrincipalModel } from '../ports/backend.js';
import type { ClientAddresses } from '../auth/clientAddress.js';
import type { RateLimiter } from '../auth/rateLimit.js';
import type { Config } from '../config/env.js';
import { encodingRefusal, HttpError, mayBeLonger, parseBody, type LargeBodies } from './body.js';
import { lingerAfterAnswer, lingerBudgetFor } from './linger.js';
import { deadlineOf } from './requestSignal.js';
import type { BodyKind } from './routeTable.js';
import { challengeFor } from './send.js';

/** What every route does before its interface sees a request, in this order: admit a stranger by its address,
 * authenticate from the headers alone, find the body's limit, read it, and linger when refusing an unread one.
 * What differs between interfaces is data: their Refusals, and the route table's body kinds. */

/** What the prelude needs: who asks, and how much they may send. */
export interface PreludeDeps {
  config: Pick<Config, 'bodyLimitBytes' | 'requestDeadlineMs'>;
  backend: Backend;
  limiter: RateLimiter;
  addresses: ClientAddresses;
  anonymousBodyLimit: number;
  ingestBodyLimit: number;
  // `ask`: where the right is not known yet (REST mode), how to ask the upstream; null gives 'unknown'
  ingestRightOf: (principal: PrincipalModel, ask: CallOptions | null) => IngestRight | Promise<IngestRight>;
  largeBodies: LargeBodies;
}

/** Whether a caller may send events and item records: 'unknown' where nobody asked the upstream yet. */
export type IngestRight = 'allowed' | 'refused' | 'unknown';

/** A whole answer in an interface's own shape: JSON text. */
export interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** How one interface answers what the prelude refuses, in its documented error body. */
export interface Refusals {
  /** A refusal before the body is read (401, 403, 429, 503); null for an error not the interface's to answer. */
  error(error: unknown, req: IncomingMessage): Answer | null;
  /** 415 for a body whose content type the interface does not take; null when it takes it. */
  contentType(type: string | undefined): Answer | null;
  /** 415 for a body with a content coding (encodingRefusal's message and headers). */
  encoded(message: string, headers: Record<string, string>): Answer;
  /** 429 while too many large bodies are being read at once. */
  busy(): Answer;
  /** 413 for a body past `limit`. */
  tooLarge(limit: number, message: string): Answer;
  /** 400 for a body that is not JSON, or nests too deep. */
  badBody(message: string, req: IncomingMessage): Answer;
}

/** The request was answered by the prelude: its route stops. */
export const ANSWERED = Symbol('answered');
export type Answered = typeof ANSWERED;

/** One interface's prelude. */
export class Prelude {
  constructor(
    private readonly deps: PreludeDeps,
    private readonly refusals: Refusals,
    /** Whether strangers' bodies are read (up to the anonymous limit); else their requests reach the interface unread. */
    private readonly readsStrangers: boolean,
  ) {}

  /** Admit and authenticate, from the headers alone: the caller, null for a stranger. Synchronous when nothing needs
   * waiting for (a key already known), so that the response cache's answers cost no await. */
  caller(req: IncomingMessage, res: ServerResponse, record: RequestRecord, credential: string | undefined, address: string): PrincipalModel | null | Answered | Promise<PrincipalModel | null | Answered> {
    if (credential !== undefined) {
      const known = this.deps.limiter.authenticateNow(this.deps.backend.keys, credential, address, req.socket);
      if (known !== undefined) return known;
    }
    return this.callerLater(req, res, record, credential, address);
  }

  private async callerLater(req: IncomingMessage, res: ServerResponse, record: RequestRecord, credential: string | undefined, address: string): Promise<PrincipalModel | null | Answered> {
    const { limiter, backend, config } = this.deps;
    try {
      return await limiter.authenticate(backend.keys, credential, address, deadlineOf(res, config.requestDeadlineMs));
    } catch (error) {
      return this.refuse(req, res, record, error);
    }
  }

  /** Limit and read: the body's bytes; undefined where none is read (`kind` none, or a stranger's where not taken). */
  read(req: IncomingMessage, res: ServerResponse, record: RequestRecord, kind: BodyKind, principal: PrincipalModel | null, address: string): Promise<Buffer | undefined | Answered> {
    if (kind === 'none' || (principal === null && !this.readsStrangers)) return Promise.resolve(undefined);
    const limit = principal === null ? this.deps.anonymousBodyLimit : this.deps.config.bodyLimitBytes;
    // a body past BODY_LIMIT_BYTES is read only for who may send a batch: anyone else gets the 413 unread
    if (principal !== null && (kind === 'batch' || (kind === 'operation' && mayBeLonger(req, limit)))) return this.readBatch(req, res, record, kind, principal, address, limit);
    return this.readUpTo(req, res, record, limit);
  }

  private async readBatch(req: IncomingMessage, res: ServerResponse, record: RequestRecord, kind: BodyKind, principal: PrincipalModel, address: string, limit: number): Promise<Buffer | undefined | Answered> {
    const { ingestRightOf, ingestBodyLimit, config } = this.deps;
    let right: IngestRight | Promise<IngestRight> = ingestRightOf(principal, mayBeLonger(req, limit) ? { signal: deadlineOf(res, config.requestDeadlineMs).signal, clientAddress: address } : null);
    if (typeof right !== 'string') {
      try {
        right = await right;
      } catch (error) {
        if (!(error instanceof GatewayError)) throw error;
        return this.refuse(req, res, record, error);
      }
    }
    // who may not send a batch is told so before a byte of it is read; one within the batch limit is
    // discarded as it comes, not cut off: a forwarding client would meet EPIPE
    if (kind === 'batch' && right === 'refused') {
      const declared = Number(req.headers['content-length']);
      return this.refuse(req, res, record, ingestForbidden(), Number.isSafeInteger(declared) && declared <= ingestBodyLimit);
    }
    return this.readUpTo(req, res, record, right === 'allowed' ? ingestBodyLimit : limit);
  }

  private readUpTo(req: IncomingMessage, res: ServerResponse, record: RequestRecord, limit: number): Promise<Buffer | Answered> {
    const { refusals } = this;
    // Security: a form or text/plain POST is what a browser sends cross-site, with remembered Basic credentials
    const wrongType = refusals.contentType(req.headers['content-type']);
    if (wrongType !== null) return Promise.resolve(this.answer(req, res, record, wrongType, false));
    const encoded = encodingRefusal(req);
    if (encoded !== null) return Promise.resolve(this.answer(req, res, record, refusals.encoded(encoded.message, encoded.headers), false));
    if (!this.deps.largeBodies.admit(req, res, limit)) return Promise.resolve(this.answer(req, res, record, refusals.busy(), false));
    if (Number(req.headers['content-length']) > limit) return Promise.resolve(this.tooLarge(req, res, record, limit));
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let size = 0;
      req.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size <= limit) chunks.push(chunk);
        else if (size - chunk.length <= limit) resolve(this.tooLarge(req, res, record, limit));
      });
      req.once('end', () => {
        if (size <= limit) resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
      });
      req.once('error', reject);
    });
  }

  // a body past its limit is not read to its end: the connection goes with it, after lingering (linger.ts)
  private tooLarge(req: IncomingMessage, res: ServerResponse, record: RequestRecord, limit: number): Answered {
    lingerAfterAnswer(req, res, lingerBudgetFor(limit));
    return this.answer(req, res, record, this.refusals.tooLarge(limit, `Request body larger than ${limit} bytes`), false);
  }

  /** A body's JSON (or text, where its type is not JSON); ANSWERED with 400 when it is not JSON or nests too deep. */
  parse(req: IncomingMessage, res: ServerResponse, record: RequestRecord, text: string): unknown {
    try {
      return parseBody(text, req.headers['content-type']);
    } catch (error) {
      if (!(error instanceof HttpError)) throw error;
      return this.answer(req, res, record, this.refusals.badBody(error.message, req), true);
    }
  }

  private refuse(req: IncomingMessage, res: ServerResponse, record: RequestRecord, error: unknown, bodyRead = false): Answered {
    const answer = this.refusals.error(error, req);
    if (answer === null) throw error;
    return this.answer(req, res, record, answer, bodyRead);
  }

  /** Sends an answer. One left with a large body unread closes the connection after lingering (linger.ts): a
   * client still sending then reads its answer instead of meeting a reset. */
  answer(req: IncomingMessage, res: ServerResponse, record: RequestRecord, answer: Answer, bodyRead: boolean): Answered {
    const closing = !bodyRead && (Number(req.headers['content-length'] ?? 0) > this.deps.anonymousBodyLimit || req.headers['transfer-encoding'] !== undefined);
    if (closing || answer.headers.connection === 'close') lingerAfterAnswer(req, res);
    const challenge = answer.status === 401 && answer.headers['www-authenticate'] !== undefined ? { 'www-authenticate': challengeFor(req.headers) } : {};
    res.setHeader('x-request-id', record.id);
    res.writeHead(answer.status, {
      ...answer.headers,
      ...challenge,
      'content-length': String(Buffer.byteLength(answer.body)),
      ...(closing ? { connection: 'close' } : {}),
    });
    res.end(answer.body);
    return ANSWERED;
  }
}
