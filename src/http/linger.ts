import type { IncomingMessage, ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import { lingerSpend } from './peers.js';

// Only node's own modules at run time: listener.ts (loaded before the gateway) uses this.

/** Lingering close (as nginx's lingering_close): after a `Connection: close` answer to an unread body, send a FIN and
 * read and drop what the client still sends, within budgets, so it reads its answer instead of meeting a reset. */

/** Bytes read and dropped after a body refused over its limit, at most (lingerBudgetFor). */
export const LINGER_MAX_BYTES = 16 * 1024 * 1024;

/** Bytes read and dropped after any other refusal (a 401 or 429 before the body, a 415, 405, or a start's 503). */
export const LINGER_REFUSED_BYTES = 1024 * 1024;

/** What a body refused over `limit` bytes lingers for: twice the limit, within the two above. */
export function lingerBudgetFor(limit: number): number {
  return Math.min(LINGER_MAX_BYTES, Math.max(LINGER_REFUSED_BYTES, 2 * limit));
}

// closing sockets and the bytes they linger for: nothing after that answer on them is served (inTurn)
const closing = new WeakMap<Socket, number>();

/** How long a socket lingers after the answer, at most, in ms. */
export const LINGER_MAX_MS = 2_000;

/** How long a lingering socket waits for the client's next bytes, in ms. */
export const LINGER_IDLE_MS = 1_000;

/** Makes the close after `res` a lingering one when `req`'s body has not all come. Call it before the answer ends:
 * node closes the socket from its own 'finish' listener, which runs before any added after it. */
export function lingerAfterAnswer(req: IncomingMessage, res: ServerResponse, maxBytes = LINGER_REFUSED_BYTES): void {
  const socket = res.socket;
  if (socket === null) return;
  closing.set(socket, Math.max(closing.get(socket) ?? 0, req.complete ? 0 : maxBytes));
  if (req.complete) return;
  socket.destroySoon = function destroySoonLingering(this: Socket): void {
    if (req.complete || this.destroyed) Socket.prototype.destroySoon.call(this);
    else linger(this, closing.get(this)!);
  };
}

/** Runs `handle` when it is the request's turn on its connection; never behind an answer that closes the connection,
 * since node emits every pipelined request in a read and their answers would be lost with it. */
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
  // Taking the socket from node's HTTP parser means a request sent behind the body is not served; a FIN
  // from the client still reaches the parser, which destroys the socket through 'clientError'.
  const takeOver = (): void => {
    socket.removeAllListeners('data');
    socket.on('data', (chunk: Buffer) => {
      left -= chunk.length;
      if (left < 0 || !lingerSpend(socket, chunk.length)) stop();
      else idle.refresh();
    });
  };
  if (socket.readableFlowing === false) {
    // paused by the parser: node's own 'resume' listener restarts reads, so take over after it
    socket.once('resume', takeOver);
    socket.resume();
  } else {
    takeOver();
  }
}
