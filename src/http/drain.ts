import type http from 'node:http';

/** How long stopping waits for requests in flight before closing their connections, in ms. */
export const DRAIN_GRACE_MS = 10_000;

/** How often idle keep-alive connections are closed while draining, in ms. */
const IDLE_SWEEP_MS = 10;

/**
 * Stops the server taking connections and resolves once every connection is closed: idle
 * keep-alive connections at once, the others as soon as their request is answered (swept every
 * few ms), and any still busy after `graceMs` there and then.
 *
 * What Apollo's drain plugin does, without its cost on every request (a second 'request'
 * listener, a map update and a 'finish' listener each): node tracks the connections itself
 * (`closeIdleConnections`, `closeAllConnections`, node 18.2 and later).
 */
export function drainHttpServer(server: http.Server, graceMs = DRAIN_GRACE_MS): Promise<void> {
  return new Promise((resolve) => {
    const sweep = setInterval(() => server.closeIdleConnections(), IDLE_SWEEP_MS);
    const force = setTimeout(() => server.closeAllConnections(), graceMs);
    // called with ERR_SERVER_NOT_RUNNING when it never listened, which is as closed as it gets
    server.close(() => {
      clearInterval(sweep);
      clearTimeout(force);
      resolve();
    });
  });
}
