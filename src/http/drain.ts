import type http from 'node:http';
import type { Socket } from 'node:net';

/** How long stopping waits for requests in flight before closing their connections, in ms. */
export const DRAIN_GRACE_MS = 10_000;

/** How often idle keep-alive connections are closed while draining, in ms. */
const IDLE_SWEEP_MS = 10;

const OPEN = Symbol('open connections');
type FollowedServer = http.Server & { [OPEN]?: Set<Socket> };

/**
 * Keeps the server's open connections from now on (followed per connection, never per request),
 * so that drainHttpServer can close those that have sent nothing yet: node's
 * `closeIdleConnections` leaves a connection that never sent a request open as if a request were
 * in flight, so a browser's speculative preconnect, a balancer's warm connection or a client that
 * gave up before sending (undici after an abort) held a stopping process for the whole grace
 * period, or until the client closed it (4 s, undici's keep-alive).
 */
export function followConnections(server: http.Server): void {
  const open = new Set<Socket>();
  (server as FollowedServer)[OPEN] = open;
  server.on('connection', (socket: Socket) => {
    open.add(socket);
    socket.once('close', () => open.delete(socket));
  });
}

/**
 * Stops the server taking connections and resolves once every connection is closed: idle
 * keep-alive connections at once, and (where followConnections follows the server) those that
 * have sent nothing yet, the others as soon as their request is answered (swept every few ms),
 * and any still busy after `graceMs` there and then.
 *
 * What Apollo's drain plugin does, without its cost on every request (a second 'request'
 * listener, a map update and a 'finish' listener each): node tracks the connections itself
 * (`closeIdleConnections`, `closeAllConnections`, node 18.2 and later).
 */
export function drainHttpServer(server: http.Server, graceMs = DRAIN_GRACE_MS): Promise<void> {
  const open = (server as FollowedServer)[OPEN];
  const closeIdle = (): void => {
    server.closeIdleConnections();
    // no byte read: no request begun (one whose bytes are on their way is refused, as a request
    // sent on an idle keep-alive connection just as it closes is; clients retry those)
    if (open !== undefined) for (const socket of open) if (socket.bytesRead === 0) socket.destroy();
  };
  return new Promise((resolve) => {
    const sweep = setInterval(closeIdle, IDLE_SWEEP_MS);
    const force = setTimeout(() => server.closeAllConnections(), graceMs);
    // called with ERR_SERVER_NOT_RUNNING when it never listened, which is as closed as it gets
    server.close(() => {
      clearInterval(sweep);
      clearTimeout(force);
      resolve();
    });
  });
}
