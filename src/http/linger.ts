import type { IncomingMessage, ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import { lingerSpend } from './peers.js';

// Only node's own modules at run time: listener.ts (loaded before the gateway) uses this.

/**
 * A lingering close, as nginx's (lingering_close, lingering_time, lingering_timeout) and Apache's:
 * a request answered with `Connection: close` before its body was read (413, 415, a 401 or 429
 * before the body) is not closed under a client still sending it. Node destroyed the socket once
 * the answer was written: the unread bytes made the kernel send a reset, and a client still
 * writing met EPIPE before it read its answer (in up to 17 of 20 tries of a 1 MiB body, a client
 * in another process). Now the answer goes, then a FIN (the client reads the answer to its end), and
 * what the client still sends is read and dropped, never kept, until it stops sending, closes, or
 * a budget below is spent; then the socket is destroyed.
 *
 * A connection's budgets are constants, as the drain's grace is (drain.ts): a lingering connection
 * is bounded by them and still counts against MAX_CONNECTIONS until it closes, so a client gets no
 * more of the gateway from one than from a slow body, and a stopping gateway waits LINGER_MAX_MS
 * for one at most (well within DRAIN_GRACE_MS). What an address's connections linger for together
 * is LINGER_BYTES_PER_SECOND's (peers.ts): past it, its refusals close at once, as node's did.
 */

/**
 * Bytes read and dropped after the answer, at most: twice the default INGEST_BODY_LIMIT_BYTES, so
 * that a batch somewhat over the largest limit is still answered; past it the answer has long been
 * out (a client that reads as it sends has it), and a client sending a body this far over its
 * limit gets the reset. nginx reads on for lingering_time whatever the bytes; Go reads 256 KiB.
 * Only for a body refused over a limit of twice as much (lingerBudgetFor).
 */
export const LINGER_MAX_BYTES = 16 * 1024 * 1024;

/**
 * Bytes read and dropped after any other refusal: of a sender not known yet (a 401 or 429 before
 * the body, an anonymous body over its 32 KiB), or of a body nobody reads (415, 405, a start's
 * 503). A probe's 40 connections each sending on at full speed kept a core busy with 16 MiB a
 * connection (a keyed query's median 2 -> 11 to 53 ms); a client of such a request that sends a
 * body this far past it was never going to be served.
 */
export const LINGER_REFUSED_BYTES = 1024 * 1024;

/** What a body refused over `limit` bytes lingers for: twice the limit, within the two above. */
export function lingerBudgetFor(limit: number): number {
  return Math.min(LINGER_MAX_BYTES, Math.max(LINGER_REFUSED_BYTES, 2 * limit));
}

/**
 * Connections whose answer closes them (lingerAfterAnswer), with the bytes they linger for (the
 * largest asked; 0 where the body had all come): nothing after that answer on them is served (inTurn).
 */
const closing = new WeakMap<Socket, number>();

/** How long a socket lingers after the answer, at most, in ms (nginx's lingering_time is 30 s: ours is a fallback, not a transfer). */
export const LINGER_MAX_MS = 2_000;

/**
 * How long a lingering socket waits for the client's next bytes, in ms: a client that sent
 * nothing for this long has stopped, or is too starved to be waited for (nginx's
 * lingering_timeout is 5 s; Go waits 500 ms after its FIN, without reading).
 */
export const LINGER_IDLE_MS = 1_000;

/**
 * Makes the close that follows `res` (sent with `Connection: close`) a lingering one when `req`'s
 * body has not all come by then; a request read to its end closes as before. Call it before the
 * answer is ended: node closes the socket from its own 'finish' listener (socket.destroySoon),
 * which runs before any added after it.
 */
export function lingerAfterAnswer(req: IncomingMessage, res: ServerResponse, maxBytes = LINGER_REFUSED_BYTES): void {
  const socket = res.socket;
  // a pipelined request's answer waits for the socket: it closes as it did
  if (socket === null) return;
  closing.set(socket, Math.max(closing.get(socket) ?? 0, req.complete ? 0 : maxBytes));
  if (req.complete) return;
  socket.destroySoon = function destroySoonLingering(this: Socket): void {
    if (req.complete || this.destroyed) Socket.prototype.destroySoon.call(this);
    else linger(this, closing.get(this)!);
  };
}

/**
 * Runs `handle` when it is the request's turn on its connection: at once, or, for a request
 * pipelined behind one still being answered, once that answer is done (node hands the next
 * response the socket then); never behind an answer that closes the connection. node parses a
 * read whole and emits every request in it: requests sent in one write behind a refused body ran
 * (a batch of events stored), and their answers were lost with the connection (a probe).
 */
export function inTurn(req: IncomingMessage, res: ServerResponse, handle: (req: IncomingMessage, res: ServerResponse) => void): void {
  const socket = req.socket;
  if (closing.has(socket)) return;
  if (res.socket !== null) handle(req, res);
  else {
    res.once('socket', () => {
      if (!closing.has(socket)) handle(req, res);
    });
  }
}

/**
 * Sends what is written and a FIN, then reads and drops what comes within the budgets, then
 * destroys the socket; at once, as node would, when the client's address has spent its own
 * (LINGER_BYTES_PER_SECOND: a client opening connection after connection to send junk costs a
 * read of each body otherwise).
 */
function linger(socket: Socket, maxBytes: number): void {
  if (!lingerSpend(socket, 0)) {
    Socket.prototype.destroySoon.call(socket);
    return;
  }
  socket.end();
  let left = maxBytes;
  const stop = (): void => {
    clearTimeout(whole);
    clearTimeout(idle);
    socket.destroy();
  };
  const whole = setTimeout(stop, LINGER_MAX_MS).unref();
  const idle = setTimeout(stop, LINGER_IDLE_MS).unref();
  socket.once('close', () => {
    clearTimeout(whole);
    clearTimeout(idle);
  });
  // The socket leaves node's HTTP parser (the parser's 'data' listener goes; adding one of ours
  // makes node hand reads to JavaScript rather than to the parser): a request sent behind the
  // body is not served. A FIN from the client still reaches the parser ('end'), which finds the
  // body cut short and destroys the socket through 'clientError': the client is done sending.
  const takeOver = (): void => {
    socket.removeAllListeners('data');
    socket.on('data', (chunk: Buffer) => {
      left -= chunk.length;
      if (left < 0 || !lingerSpend(socket, chunk.length)) stop();
      else idle.refresh();
    });
  };
  if (socket.readableFlowing === false) {
    // paused by the parser (a body nobody read pushed back): node's own 'resume' listener, which
    // goes with the parser, starts the socket's reads again; taken over after it, in the same tick
    socket.once('resume', takeOver);
    socket.resume();
  } else {
    takeOver();
  }
}
