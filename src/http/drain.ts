import type http from 'node:http';
import type { Socket } from 'node:net';

/** How long stopping waits for requests in flight before closing their connections, in ms. */
export const DRAIN_GRACE_MS = 10_000;

const IDLE_SWEEP_MS = 10;

const OPEN = Symbol('open connections');
type FollowedServer = http.Server & { [OPEN]?: Set<Socket> };

/** Keeps the server's open connections, so that drainHttpServer can close those that never sent a request:
 * node's `closeIdleConnections` treats them as busy. */
export function followConnections(server: http.Server): void {
  const open = new Set<Socket>();
  (server as FollowedServer)[OPEN] = open;
  server.on('connection', (socket: Socket) => {
    open.add(socket);
    socket.once('close', () => open.delete(socket));
  });
}

/** Stops the server taking connections and resolves once every connection is closed, forcing any left after `graceMs`. */
export function drainHttpServer(server: http.Server, graceMs = DRAIN_GRACE_MS): Promise<void> {
  const open = (server as FollowedServer)[OPEN];
  const closeIdle = (): void => {
    server.closeIdleConnections();
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
